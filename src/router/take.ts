/**
 * Taking a slot for an attempt: the admissible targets in the strategy's order, the first
 * with a free slot wins, all tried in one store call (store/types.ts SharedStore.admit: one
 * round trip on Redis); when every one is full (not hot), the request waits in the bounded
 * queue of the best one.
 */
import type { Strategy } from '../config/schema.js';
import type { Target } from '../config/types.js';
import type { TargetView } from '../store/types.js';
import { candidate, targetRef, type Taken } from './attempt.js';
import { QueueFullError } from './concurrency.js';
import type { HealthBoard } from './health.js';
import type { RouterState } from './state.js';
import { STRATEGIES } from './strategies/index.js';

/** Refused on cached views: the views the admission read, for the route to decide again on (router/views.ts). */
export interface Recheck {
  readonly recheck: ReadonlyMap<Target, TargetView>;
}

/**
 * @param look `fresh`: whether `views` were read for this decision (else they are the store's
 *   cached views, and a target some replica put in cooldown since is refused); `extra`: the
 *   route's other targets, whose views the admission reads too (so the cache stays fresh).
 * @returns the slot taken; `hot` when every target refused a deep call as hot (the caller
 *   sheds); the QueueFullError when the queue is full or timed out; a Recheck when every
 *   target refused on cached views (nothing is queued or shed on them).
 * @throws the abort reason when `signal` fires while queued.
 */
export async function takeSlot(
  state: RouterState,
  route: { readonly strategy: Strategy; readonly pinned: string | undefined },
  pool: readonly Target[],
  views: ReadonlyMap<Target, TargetView>,
  deep: boolean,
  signal: AbortSignal,
  look: { readonly fresh: boolean; readonly extra: readonly Target[] } = { fresh: true, extra: [] },
): Promise<Taken | 'hot' | QueueFullError | Recheck> {
  const candidates = pool.map((t) => ({ target: t, inFlight: views.get(t)!.inFlight, capacity: views.get(t)!.callLimit, latencyMs: state.latency.estimate(t.key) }));
  const ordered = STRATEGIES[route.strategy](candidates, { random: state.random, tick: state.nextTick(), ...(route.pinned ? { pinned: route.pinned } : {}) });
  const tries = ordered.map((c) => candidate(c.target, deep, look.fresh || views.get(c.target)!.coolingUntil > 0));
  const got = await state.store.admit(tries, look.extra.map(targetRef));
  if (got.taken) return { target: ordered[got.taken.index]!.target, lease: got.taken.lease, queuedMs: 0 };
  if (!look.fresh) {
    const all = [...ordered.map((c) => c.target), ...look.extra];
    return { recheck: new Map(all.map((t, i) => [t, got.views[i]!])) };
  }
  if (deep && got.refused.every((r) => r === 'hot')) return 'hot';
  const best = ordered[0]!.target;
  try {
    const waited = await state.queue.wait(candidate(best, deep, true), signal);
    return { target: best, lease: waited.lease, queuedMs: waited.waitedMs };
  } catch (err) {
    if (err instanceof QueueFullError) return err;
    throw err;
  }
}

/** The line of the shed ladder's wait rung for a set of hot accounts. */
const placeLine = (hot: readonly Target[]): string => `\u0000deep:${hot.map((t) => t.key).join('\u0000')}`;

/**
 * How long a deep call joining the wait rung's line now would wait for a place, ms: the
 * waiters ahead of it and itself, each served as one running call ends, calls ending at the
 * accounts' learned limits per typical call time (Little's law). Null when the typical time
 * is not known. Waiters on other replicas are not seen, so this is a lower bound there.
 */
export function expectedPlaceWaitMs(state: RouterState, hot: readonly Target[], views: ReadonlyMap<Target, TargetView>, typicalMs: number | null): number | null {
  if (typicalMs === null || hot.length === 0) return null;
  const places = hot.reduce((n, t) => n + Math.max(1, views.get(t)?.limit ?? 1), 0);
  return ((state.queue.waiting(placeLine(hot)) + 1) * typicalMs) / places;
}

/**
 * The shed ladder's wait rung: waits up to `ms`, first come first served, for a deep place on
 * any of the model's hot accounts (one line per set of accounts; its head takes the first
 * place released on any of them).
 * @returns the slot, or null when none freed in time (or the line is full).
 * @throws the abort reason when `signal` fires while waiting.
 */
export async function waitForPlace(state: RouterState, hot: readonly Target[], ms: number, signal: AbortSignal): Promise<Taken | null> {
  if (hot.length === 0 || ms <= 0) return null;
  const line = placeLine(hot);
  try {
    const got = await state.queue.waitAny(line, hot.map((t) => candidate(t, true, true)), signal, ms);
    return { target: hot[got.index]!, lease: got.lease, queuedMs: got.waitedMs };
  } catch (err) {
    if (err instanceof QueueFullError) return null;
    throw err;
  }
}

/**
 * The targets that may take a request now. When none may and nothing of this model was tried
 * yet (`triedAny` false), the cooling target whose cooldown ends first, rather than refuse;
 * never one a long cooldown holds back (a bad key or a refused model does not heal by
 * waiting: only its probe goes).
 */
export function admissible(health: HealthBoard, remaining: Target[], views: ReadonlyMap<Target, TargetView>, triedAny: boolean): Target[] {
  const pool = remaining.filter((t) => views.get(t)!.coolingUntil === 0 && health.canAdmit(t.key, t.upstream.id));
  if (pool.length > 0 || triedAny) return pool;
  const forceable = remaining.filter((t) => !health.longCooling(t.key, t.upstream.id));
  const endOf = (t: Target): number => Math.max(health.availableAt(t.key, t.upstream.id), views.get(t)!.coolingUntil);
  const soonest = forceable.sort((a, b) => endOf(a) - endOf(b))[0];
  return soonest ? [soonest] : [];
}
