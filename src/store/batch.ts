/**
 * Redis calls made in one turn of the event loop, sent as one script call: one command, one
 * round trip. A request's settlement is two calls made microtasks apart once its answer is
 * out: its slot's release (router/attempt.ts, through store/redis.ts) and its spend add
 * (limits/budgets.ts, through store/spend.ts). Nothing awaits I/O between them, so a batch
 * flushed on `setImmediate` (after the turn's microtasks, like ioredis' own auto-pipelining)
 * carries both; so do the settlements of other requests that ended in the same turn. The
 * script (store/redis-scripts.ts SETTLE) runs each call in turn under `pcall`.
 *
 * Only these settlement calls go through it: admission is awaited by a request before it can
 * go upstream, and waiting for the turn's end would only add to its latency. (ioredis'
 * `enableAutoPipelining` would batch every command, admission too, and sends at most one
 * pipeline at a time per node: the next waits for the previous one's answers.)
 *
 * Each call keeps its own outcome: one that fails rejects its own promise (a failed script
 * call rejects all of them), so the caller's failure handling (a release re-sent on
 * reconnect, a spend add kept as pending) is as for a call sent alone. With Redis Cluster a
 * script runs on one node, so every key of its calls must be on one slot: they are, under the
 * store's one hash tag.
 */
import type { Cluster, Redis } from 'ioredis';
import { SETTLE, type SettleOp } from './redis-scripts.js';

interface Queued {
  readonly op: SettleOp;
  readonly keys: readonly string[];
  readonly args: readonly (string | number)[];
  readonly resolve: (value: unknown) => void;
  readonly reject: (err: Error) => void;
}

interface Settling {
  sySettle(numKeys: number, ...keysThenArgs: (string | number)[]): Promise<[number, unknown][]>;
}

/** Most calls in one script call; a turn with more sends several (each runs atomically, not the whole turn). */
const MAX_OPS = 200;

export class TurnBatch {
  private queued: Queued[] = [];

  constructor(private readonly client: Redis | Cluster) {
    client.defineCommand('sySettle', { lua: SETTLE });
  }

  /**
   * Queues settle op `op` (store/redis-scripts.ts SETTLE: `release` or `add`) on `keys` with
   * `args`; sent with every other call made in this turn, as one script call.
   * @returns its reply. @throws its own error, or the call's (e.g. not connected).
   */
  send<T>(op: SettleOp, keys: readonly string[], args: readonly (string | number)[]): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      if (this.queued.length === 0) setImmediate(() => this.flush());
      this.queued.push({ op, keys, args, resolve: resolve as (value: unknown) => void, reject });
    });
  }

  private flush(): void {
    const all = this.queued;
    this.queued = [];
    for (let i = 0; i < all.length; i += MAX_OPS) this.sendScript(all.slice(i, i + MAX_OPS));
  }

  private sendScript(calls: readonly Queued[]): void {
    const keys: string[] = [];
    const head: (string | number)[] = [calls.length];
    const args: (string | number)[] = [];
    for (const c of calls) {
      head.push(c.op, c.keys.length, c.args.length);
      for (const k of c.keys) keys.push(k);
      for (const a of c.args) args.push(a);
    }
    (this.client as unknown as Settling).sySettle(keys.length, ...keys, ...head, ...args).then(
      (results) =>
        calls.forEach((c, i) => {
          const r = results?.[i];
          if (!r) c.reject(new Error('settle call not answered'));
          else if (Number(r[0]) !== 1) c.reject(new Error(String(r[1])));
          else c.resolve(r[1]);
        }),
      (err: Error) => calls.forEach((c) => c.reject(err)),
    );
  }
}
