/**
 * The store calls a request makes on Redis, batched per turn of the event loop: every call
 * queued in one turn leaves as one script call (store/redis-scripts.ts TURN), one command and
 * one round trip, flushed on `setImmediate` (after the turn's I/O callbacks and microtasks).
 *
 * - Settlement: a request's slot release (router/attempt.ts, through store/redis.ts), its
 *   spend add (limits/budgets.ts, through store/spend.ts), a key's release and `tpm`
 *   settlement and a served session's pin (router/attempt.ts `pinOnRelease`) are made microtasks apart once its answer is out, with no I/O awaited between
 *   them, so they ride one call; so do those of other requests that ended in the same turn.
 * - Admission and view reads (a request's first call, store/redis-first.ts, is one such op): under load many requests reach their admission in the same
 *   turn (their bodies were read in one poll phase); one call carries them all, instead of one
 *   command each. The price: an admission leaves at the end of its turn rather than at once,
 *   so its round trip no longer overlaps the rest of the turn. Measured (docs/performance.md,
 *   "admissions batched per turn"): Redis-mode req/s at 16 clients +12 % (JSON) / +30 %
 *   (streams), p99 there 4 -> 7 ms; at one request at a time the turn ends at once and
 *   nothing changes.
 * - Key admissions (a client key's slot and `rpm` / `tpm` windows) and rate-window
 *   give-backs (store/spend.ts windowAdd) ride the same call, in the order they were made, so
 *   a give-back made before a consume in one turn lands before it.
 *
 * (ioredis' `enableAutoPipelining` batches too, but as a pipeline of separate commands, and
 * sends at most one pipeline at a time per node: the next waits for the previous answers.)
 *
 * Each call keeps its own outcome: TURN runs each under `pcall`, and one that fails rejects
 * its own promise (a failed script call rejects all of them), so the caller's failure
 * handling (a local slot while degraded, a release re-sent on reconnect, a spend add kept as
 * pending) is as for a call sent alone. One exception grows with the batch: a call that
 * times out (`command_timeout_ms`) may still run, and every admission in it then holds a
 * Redis slot nobody releases until its lease lapses (`lease_ms`), as one admission alone
 * would. With Redis Cluster a script runs on one node, so every key of its calls must be on
 * one slot: they are, under the store's one hash tag.
 */
import type { Cluster, Redis } from 'ioredis';
import { TURN, type TurnOp } from './redis-scripts.js';

interface Queued {
  readonly op: TurnOp;
  readonly keys: readonly string[];
  readonly args: readonly (string | number)[];
  readonly resolve: (value: unknown) => void;
  readonly reject: (err: Error) => void;
}

interface TurnClient {
  syTurn(numKeys: number, ...keysThenArgs: (string | number)[]): Promise<([number, unknown] | number)[]>;
}

/** Most calls in one script call; a turn with more sends several (each runs atomically, not the whole turn). */
const MAX_OPS = 200;

export class TurnBatch {
  private queued: Queued[] = [];
  /** Redis's clock minus this replica's, ms, as of the last answer (null: none yet). */
  private offset: number | null = null;

  constructor(private readonly client: Redis | Cluster) {
    client.defineCommand('syTurn', { lua: TURN });
  }

  /**
   * Queues op `op` (store/redis-scripts.ts TURN: `view`, `admit`, `keyadmit`, `release`, `add`, `pin` or `first`) on
   * `keys` with `args`; sent with every other call made in this turn, as one script call.
   * @returns its reply. @throws its own error, or the call's (e.g. not connected).
   */
  send<T>(op: TurnOp, keys: readonly string[], args: readonly (string | number)[]): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      if (this.queued.length === 0) setImmediate(() => this.flush());
      this.queued.push({ op, keys, args, resolve: resolve as (value: unknown) => void, reject });
    });
  }

  /** Redis's clock now (epoch ms), as estimated from the last answer (its `TIME`, less half a round trip); null before any. */
  redisNow(): number | null {
    return this.offset === null ? null : Date.now() + this.offset;
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
    (this.client as unknown as TurnClient).syTurn(keys.length, ...keys, ...head, ...args).then(
      (results) => {
        const now = Number(results?.[calls.length]);
        if (Number.isFinite(now)) this.offset = now - Date.now();
        calls.forEach((c, i) => {
          const r = results?.[i] as [number, unknown] | undefined;
          if (!Array.isArray(r)) c.reject(new Error('store call not answered'));
          else if (Number(r[0]) !== 1) c.reject(new Error(String(r[1])));
          else c.resolve(r[1]);
        });
      },
      (err: Error) => calls.forEach((c) => c.reject(err)),
    );
  }
}
