/**
 * Redis calls made in one turn of the event loop, sent as one pipeline: one write, one round
 * trip. A request's settlement is two calls made microtasks apart once its answer is out: its
 * slot's release (router/attempt.ts, through store/redis.ts) and its spend add
 * (limits/budgets.ts, through store/spend.ts). Nothing awaits I/O between them, so a batch
 * flushed on `setImmediate` (after the turn's microtasks, like ioredis' own auto-pipelining)
 * carries both; so do the settlements of other requests that ended in the same turn.
 *
 * Only these settlement calls go through it: admission is awaited by a request before it can
 * go upstream, and waiting for the turn's end would only add to its latency. (ioredis'
 * `enableAutoPipelining` would batch every command, admission too, and sends at most one
 * pipeline at a time per node: the next waits for the previous one's answers.)
 *
 * Each call keeps its own outcome: one that fails rejects its own promise (a failed pipeline
 * rejects all of them), so the caller's failure handling (a release re-sent on reconnect, a
 * spend add kept as pending) is as for a call sent alone. With Redis Cluster a pipeline goes
 * to one node, so every key of its calls must be on one slot: they are, under the store's one
 * hash tag.
 */
import type { Cluster, Redis } from 'ioredis';

interface Queued {
  readonly name: string;
  readonly args: readonly (string | number)[];
  readonly resolve: (value: unknown) => void;
  readonly reject: (err: Error) => void;
}

/** A pipeline with the client's commands and scripts (ioredis copies them onto it). */
type Pipe = Record<string, (...args: (string | number)[]) => unknown> & { exec(): Promise<[Error | null, unknown][] | null> };

export class TurnBatch {
  private queued: Queued[] = [];

  constructor(private readonly client: Redis | Cluster) {}

  /**
   * Queues the command or defined script `name` with `args`; sent with every other call made in
   * this turn, as one pipeline.
   * @returns its reply. @throws its own error, or the pipeline's (e.g. not connected).
   */
  send<T>(name: string, args: readonly (string | number)[]): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      if (this.queued.length === 0) setImmediate(() => this.flush());
      this.queued.push({ name, args, resolve: resolve as (value: unknown) => void, reject });
    });
  }

  private flush(): void {
    const calls = this.queued;
    this.queued = [];
    const pipe = this.client.pipeline() as unknown as Pipe;
    for (const c of calls) pipe[c.name]!(...c.args);
    pipe.exec().then(
      (results) =>
        calls.forEach((c, i) => {
          const r = results?.[i];
          if (!r) c.reject(new Error('pipeline not answered'));
          else if (r[0]) c.reject(r[0]);
          else c.resolve(r[1]);
        }),
      (err: Error) => calls.forEach((c) => c.reject(err)),
    );
  }
}
