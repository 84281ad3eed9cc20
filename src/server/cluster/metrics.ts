/**
 * The primary's side of `/metrics` with `server.workers`: a scrape lands on one worker,
 * which asks the primary; the primary asks every worker that is ready for its registry (as
 * prom-client JSON), sums them with prom-client's `AggregatorRegistry.aggregate` (counters
 * and histograms add up; a gauge's `aggregator` in metrics/registry.ts says when it is a max
 * or min instead) and answers the text.
 *
 * Not prom-client's own `clusterMetrics()`: that asks every connected worker, and a worker
 * still starting (not yet answering) would fail each scrape for 5 s. A worker that does not
 * answer, or exits, fails the scrape rather than giving a partial sum.
 */
import type { Worker } from 'node:cluster';
import { AggregatorRegistry } from 'prom-client';
import type { ToWorker } from './messages.js';

interface Pending {
  readonly waiting: Set<number>;
  readonly got: object[][];
  resolve(text: string): void;
  reject(err: Error): void;
  readonly timer: NodeJS.Timeout;
}

export class MetricsCollector {
  private next = 0;
  private readonly pending = new Map<number, Pending>();

  /** @param timeoutMs how long each worker may take to answer (ms). */
  constructor(private readonly timeoutMs = 4_000) {}

  /**
   * The exposition text of `workers`' registries summed.
   * @throws Error when a worker does not answer within the timeout, or exits meanwhile.
   */
  collect(workers: readonly Worker[]): Promise<string> {
    const id = this.next++;
    const live = workers.filter((w) => w.isConnected());
    if (live.length === 0) return Promise.reject(new Error('no worker is ready'));
    return new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => this.fail(id, new Error(`worker(s) did not answer within ${this.timeoutMs} ms`)), this.timeoutMs);
      this.pending.set(id, { waiting: new Set(live.map((w) => w.id)), got: [], resolve, reject, timer });
      const ask: ToWorker = { switchyard: 'collect', id };
      for (const w of live) w.send(ask);
    });
  }

  /** A worker's answer to scrape `id`. */
  collected(workerId: number, id: number, metrics: readonly object[]): void {
    const p = this.pending.get(id);
    if (!p || !p.waiting.delete(workerId)) return;
    p.got.push([...metrics]);
    if (p.waiting.size > 0) return;
    this.pending.delete(id);
    clearTimeout(p.timer);
    try {
      AggregatorRegistry.aggregate(p.got as Parameters<typeof AggregatorRegistry.aggregate>[0])
        .metrics()
        .then(p.resolve, p.reject);
    } catch (err) {
      p.reject(err as Error);
    }
  }

  /** A worker exited: the scrapes waiting for it fail. */
  exited(workerId: number): void {
    for (const [id, p] of this.pending) if (p.waiting.has(workerId)) this.fail(id, new Error('a worker exited during the scrape'));
  }

  private fail(id: number, err: Error): void {
    const p = this.pending.get(id);
    if (!p) return;
    this.pending.delete(id);
    clearTimeout(p.timer);
    p.reject(err);
  }
}
