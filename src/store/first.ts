/**
 * A request's first store call (RouterSlots.first) as StateStore serves it: on Redis one op
 * (store/redis-first.ts), its key's slot and its admission's slot then renewed until released,
 * the views it read cached (store/view-cache.ts); off Redis (memory mode, degraded, or a Redis
 * call that failed, which degrades the store), the gate and the pin one after the other on the
 * stores that serve them there, and no admission (`redo`: the route admits on its own); so
 * too when the op ran past its deadline (store/redis-first.ts).
 */
import type { RedisFirst } from './redis-first.js';
import type { FirstCall, FirstResult, KeyWindows, Lease } from './types.js';
import type { ViewCache } from './view-cache.js';

/** What the first call needs of StateStore (store/index.ts). */
export interface FirstHost {
  /** The Redis op while the store is on Redis, else null. */
  online(): RedisFirst | null;
  /** A Redis call failed: the store degrades. */
  failed(err: Error): void;
  /** A slot was taken: renewed until released. */
  hold(lease: Lease): void;
  readonly views: ViewCache;
  readonly keyWindows: KeyWindows;
  getSpend(keys: readonly string[]): Promise<number[]>;
  getPin(session: string): Promise<string | undefined>;
}

/** Runs `call` (see FirstCall); never rejects. */
export async function firstCall(host: FirstHost, call: FirstCall): Promise<FirstResult> {
  const redis = host.online();
  if (redis) {
    try {
      const got = await redis.first(call);
      // Past its deadline (it ran after its caller would have given up): it took nothing; made apart.
      if (!got) return await apart(host, call);
      if (got.gate.key?.lease) host.hold(got.gate.key.lease);
      if (got.admit) {
        host.views.put([...call.candidates, ...call.extra], got.admit.views);
        if (got.admit.taken) host.hold(got.admit.taken.lease);
      }
      return got;
    } catch (err) {
      host.failed(err as Error);
    }
  }
  return apart(host, call);
}

/** The gate and the pin as separate calls (each on Redis while it answers, else locally); no admission. */
async function apart(host: FirstHost, call: FirstCall): Promise<FirstResult> {
  const budgets = call.gate?.budgets ?? [];
  const spent = budgets.length > 0 ? await host.getSpend(budgets.map((b) => b.counter)) : [];
  const stop = (key: FirstResult['gate']['key']): FirstResult => ({ gate: { spent, key }, pin: undefined, admit: null, redo: true });
  if (budgets.some((b, i) => b.upstream === null && spent[i]! >= b.amountUsd)) return stop(null);
  const key = call.gate?.key ? await host.keyWindows.admitKey(call.gate.key) : null;
  if (key && key.refused !== null) return stop(key);
  const pin = call.pin ? await host.getPin(call.pin.session) : undefined;
  return { gate: { spent, key }, pin, admit: null, redo: true };
}
