/**
 * A worker's side of `server.workers` (the primary: server/cluster/primary.ts): its place
 * and the group's size from the environment the primary forked it with, the `/metrics`
 * body asked of the primary, its registry sent when the primary sums a scrape, and the
 * primary's reload, shutdown and force messages handed to `serve` (main.ts).
 */
import cluster from 'node:cluster';
import type { Registry } from 'prom-client';
import { ours, WORKER_COUNT_ENV, WORKER_SLOT_ENV, type ToPrimary, type ToWorker } from './messages.js';
import type { WorkerRole } from '../gateway.js';

/** What `serve` does on the primary's messages. */
export interface WorkerHandlers {
  /** The registry sent to the primary for a scrape. */
  readonly registry: Registry;
  /** Re-read the config file (as on SIGHUP). */
  reload(): void;
  /** Drain and exit (as on SIGTERM); `signal` is the one the primary got. Called again: ignored by `serve`. */
  shutdown(signal: string): void;
}

export interface WorkerLink extends WorkerRole {
  /** Hands the primary's messages to `serve`; collect requests before this get an empty answer. */
  attach(h: WorkerHandlers): void;
  /** Tells the primary this worker takes traffic. */
  ready(): void;
  /** Tells the primary to reload the other workers (this one's admin API reloaded). */
  reloadOthers(): void;
}

/** How long a scrape waits for the primary's sum (ms); the primary gives each worker 4 s. */
const METRICS_TIMEOUT_MS = 6_000;

function send(m: ToPrimary): void {
  // The channel is gone only when the primary is: node's cluster then ends this worker.
  if (process.connected) process.send?.(m, undefined, undefined, () => {});
}

/**
 * The link to the primary when this process is a worker it forked (node:cluster worker with
 * the slot in its environment), else null.
 */
export function joinPrimary(env: NodeJS.ProcessEnv = process.env): WorkerLink | null {
  const slot = Number(env[WORKER_SLOT_ENV]);
  const workers = Number(env[WORKER_COUNT_ENV]);
  if (!cluster.isWorker || !Number.isInteger(slot) || slot < 1 || !Number.isInteger(workers) || workers < 1) return null;
  let handlers: WorkerHandlers | null = null;
  let next = 0;
  const waiting = new Map<number, { resolve(text: string): void; reject(err: Error): void; timer: NodeJS.Timeout }>();

  process.on('message', (raw: unknown) => {
    const m = ours<ToWorker>(raw);
    if (!m) return;
    switch (m.switchyard) {
      case 'collect':
        if (!handlers) {
          send({ switchyard: 'collected', id: m.id, metrics: [] });
          return;
        }
        handlers.registry.getMetricsAsJSON().then(
          (metrics) => send({ switchyard: 'collected', id: m.id, metrics }),
          () => send({ switchyard: 'collected', id: m.id, metrics: [] }),
        );
        return;
      case 'metrics': {
        const w = waiting.get(m.id);
        if (!w) return;
        waiting.delete(m.id);
        clearTimeout(w.timer);
        if (m.text !== undefined) w.resolve(m.text);
        else w.reject(new Error(m.error ?? 'no answer'));
        return;
      }
      case 'reload':
        handlers?.reload();
        return;
      case 'shutdown':
        handlers?.shutdown(m.signal);
        return;
      case 'force':
        process.exit(1);
    }
  });

  return {
    slot,
    workers,
    metricsText: () =>
      new Promise<string>((resolve, reject) => {
        const id = next++;
        const timer = setTimeout(() => {
          waiting.delete(id);
          reject(new Error(`the primary did not answer within ${METRICS_TIMEOUT_MS} ms`));
        }, METRICS_TIMEOUT_MS);
        waiting.set(id, { resolve, reject, timer });
        send({ switchyard: 'metrics', id });
      }),
    attach: (h) => {
      handlers = h;
    },
    ready: () => send({ switchyard: 'ready' }),
    reloadOthers: () => send({ switchyard: 'reload-others' }),
  };
}
