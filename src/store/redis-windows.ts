/**
 * A client key's slot and rate windows on Redis (the KeyWindows contract, store/types.ts):
 *
 * - `admitKey`: the slot (the same inflight set as upstream slots, store/redis.ts) and every
 *   window, checked and counted all or nothing in one op of the turn's script call
 *   (store/redis-scripts.ts KEY_ADMIT_BODY; store/batch.ts), so a limited key costs one
 *   command before the upstream, not one per limit.
 * - `settleWindow`: a numbered add (store/spend.ts `windowAdd`: exactly once, even when a call
 *   that timed out lands late), riding the settlement call of its turn.
 * - `readWindow`: one `GET` of the counter.
 *
 * A window's counter is `{prefix}:rl:<id>`, a string of points expiring with the window: the
 * key and the arithmetic (`SET 0 EX NX`, `INCRBY`) of rate-limiter-flexible's RateLimiterRedis,
 * which counted these windows before, so replicas of either version count together.
 */
import { randomUUID } from 'node:crypto';
import type { Cluster, Redis } from 'ioredis';
import type { TurnBatch } from './batch.js';
import type { RedisStore } from './redis.js';
import type { SpendCounters } from './spend.js';
import type { KeyAdmission, KeyAdmitted, KeyWindows, Lease, WindowRef } from './types.js';

/** KEY_ADMIT_BODY's reply for `req` (lease `id`) as a KeyAdmitted. */
export function decodeKeyAdmit(out: readonly (number | string)[], req: KeyAdmission, id: string): KeyAdmitted {
  const r = String(out[0]);
  const refused = r === '' ? null : r === 'concurrency' ? 'concurrency' : Number(r) - 1;
  const windows = req.windows.map((_w, i) => ({ consumedPoints: Number(out[2 + 2 * i]), msBeforeNext: Math.max(0, Number(out[3 + 2 * i])) }));
  const lease: Lease | null =
    refused === null && req.slot.limit > 0
      ? { id, upstream: req.slot.upstream, deep: false, from: 'redis', inFlight: Number(out[1]), deepInFlight: 0, probe: false }
      : null;
  return { refused, lease, windows, from: 'redis' };
}

export class RedisKeyWindows implements KeyWindows {
  private readonly p: string;

  /**
   * @param slots the store whose inflight sets hold the keys' slots (their release).
   * @param counters numbered adds and the outage catch-up of the window counters.
   */
  constructor(
    private readonly client: Redis | Cluster,
    private readonly o: { readonly prefix: string; readonly leaseMs: number },
    private readonly batch: TurnBatch,
    private readonly slots: RedisStore,
    private readonly counters: SpendCounters,
  ) {
    this.p = `{${o.prefix}}`;
  }

  /** The Redis key of window `id`. */
  counter(id: string): string {
    return `${this.p}:rl:${id}`;
  }

  /** Batched with the other calls of its turn. @throws when Redis does not answer. */
  async admitKey(req: KeyAdmission): Promise<KeyAdmitted> {
    const plan = this.admitPlan(req);
    return decodeKeyAdmit(await this.batch.send<(number | string)[]>('keyadmit', plan.keys, plan.args), req, plan.id);
  }

  /** KEY_ADMIT_BODY's keys and arguments for `req` (store/redis-first-scripts.ts), and its lease id. */
  admitPlan(req: KeyAdmission): { keys: string[]; args: (string | number)[]; id: string } {
    const id = randomUUID();
    const keys = req.slot.limit > 0 ? [`${this.p}:inflight:${req.slot.upstream}`] : [];
    const args: (string | number)[] = [this.o.leaseMs, id, req.slot.limit];
    for (const w of req.windows) {
      keys.push(this.counter(w.key));
      args.push(w.limit, w.points, w.windowS);
    }
    return { keys, args, id };
  }

  release(lease: Lease): Promise<void> {
    return this.slots.release(lease);
  }

  /** `settleWindow`, or false (nothing done) when the store is not on Redis. */
  trySettle(w: WindowRef, points: number): Promise<boolean> {
    return points === 0 ? Promise.resolve(true) : this.counters.windowAdd(this.counter(w.key), points, w.windowS);
  }

  async settleWindow(_from: Lease['from'], w: WindowRef, points: number): Promise<void> {
    if (!(await this.trySettle(w, points))) throw new Error('shared store: not on Redis');
  }

  /** Keeps `points` counted locally while Redis is away, to add to window `w` once it is back (store/spend.ts). */
  outage(w: WindowRef, points: number): void {
    this.counters.outagePoints(this.counter(w.key), points, w.windowS);
  }

  /** @throws when Redis does not answer. */
  async readWindow(w: WindowRef): Promise<number> {
    return Number((await this.client.get(this.counter(w.key))) ?? 0);
  }
}
