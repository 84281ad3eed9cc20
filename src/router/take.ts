/**
 * Taking a slot for an attempt: the admissible targets in the strategy's order, the first
 * with a free slot wins, all tried in one store call (store/types.ts SharedStore.admit: one
 * round trip on Redis); when every one is full (not hot), the request waits in the bounded
 * queue of the best one.
 */
import type { Strategy } from '../config/schema.js';
import type { Target } from '../config/types.js';
import type { Candidate, TargetView } from '../store/types.js';
import { warmFirst } from './affinity.js';
import { candidate, targetRef, waiterCandidate, type Taken } from './attempt.js';
import { QueueFullError } from './concurrency.js';
import type { HealthBoard } from './health.js';
import type { RouterState } from './state.js';
import { STRATEGIES } from './strategies/index.js';

/** What a pass read besides its pool: whether its views are fresh, and the route's other targets (their views are read too). */
export interface Look {
  readonly fresh: boolean;
  readonly extra: readonly Target[];
}

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
  route: { readonly strategy: Strategy; readonly pinned: string | undefined; readonly affinity?: boolean },
  pool: readonly Target[],
  views: ReadonlyMap<Target, TargetView>,
  deep: boolean,
  signal: AbortSignal,
  look: Look = { fresh: true, extra: [] },
  front = false,
): Promise<Taken | 'hot' | QueueFullError | Recheck> {
  const { ordered, waiting, probes, best } = orderPool(state, route, pool, views, deep);
  if (ordered.length === 0 && probes.length === 0) return deep ? 'hot' : queued(state, best, deep, signal, front);
  // The views of the places left to waiters are read too, for a recheck.
  const extra = probes.length === 0 ? [...waiting, ...look.extra] : [...waiting.filter((t) => !probes.includes(t)), ...look.extra];
  const tried = probes.length === 0 ? ordered : [...ordered, ...probes];
  const coolingOk = (t: Target): boolean => look.fresh || views.get(t)!.coolingUntil > 0;
  const got = await state.store.admit(withProbes(candidatesFor(route, ordered, deep, coolingOk), probes, coolingOk), extra.map(targetRef));
  if (got.taken) return { target: tried[got.taken.index]!, lease: got.taken.lease, queuedMs: 0 };
  if (!look.fresh) {
    const read = [...tried, ...extra];
    return { recheck: new Map(read.map((t, i) => [t, got.views[i]!])) };
  }
  if (deep && got.refused.every((r, i) => r === 'hot' || i >= ordered.length)) return 'hot';
  return queued(state, ordered[0]!, deep, signal, front);
}

/**
 * `tries` and, after them, a deep probe-only candidate (store/types.ts Candidate `only`) for
 * each of `probes`: the accounts this replica's waiters are in line for, whose probe of a
 * raised limit a new request carries rather than a waiter (orderPool's `waiting`).
 */
export function withProbes(tries: Candidate[], probes: readonly Target[], coolingOk: (t: Target) => boolean): Candidate[] {
  for (const t of probes) tries.push(candidate(t, true, coolingOk(t), undefined, 'probe'));
  return tries;
}

/**
 * The admission candidates for `ordered` (orderPool's), `coolingOk` as store/types.ts
 * Candidate has it. Under `balanced` each carries its weight, so the admission spreads on the
 * calls in flight when it runs (store/spread.ts: views read earlier, or by another replica's
 * turn, may be old), but for the session's account that cache affinity put first: it stays first.
 */
export function candidatesFor(
  route: { readonly strategy: Strategy; readonly pinned: string | undefined; readonly affinity?: boolean },
  ordered: readonly Target[],
  deep: boolean,
  coolingOk: (t: Target) => boolean,
): Candidate[] {
  const spread = route.strategy === 'balanced';
  return ordered.map((t, i) => {
    const warm = i === 0 && route.affinity === true && t.key === route.pinned;
    return candidate(t, deep, coolingOk(t), spread && !warm ? t.weight : undefined);
  });
}

/**
 * `pool` in the order to try it: the strategy's, the session's account first under cache
 * affinity while it has room (on `views`); `waiting`: the places someone here already waits
 * for (a new request takes only the others, and joins the line when none is left: first come,
 * first served; the waiters are this replica's own, a fact whether the views are cached or
 * not; a plain call leaves only plain waiters' places alone: a deep waiter waits for a deep
 * place); `probes`: for a deep call, those of `waiting` whose waiters wait for a deep place
 * (the wait rung's lines): the call may still carry their probe (withProbes); `best`: the
 * first in order, waiters' places included (whose line to join).
 */
export function orderPool(
  state: RouterState,
  route: { readonly strategy: Strategy; readonly pinned: string | undefined; readonly affinity?: boolean },
  pool: readonly Target[],
  views: ReadonlyMap<Target, TargetView>,
  deep: boolean,
): { ordered: Target[]; waiting: Target[]; probes: Target[]; best: Target } {
  const candidates = pool.map((t) => ({
    target: t,
    inFlight: views.get(t)!.inFlight,
    capacity: views.get(t)!.callLimit,
    latencyMs: state.latency.estimate(t.key),
  }));
  const ranked = STRATEGIES[route.strategy](candidates, { random: state.random, tick: state.nextTick(), ...(route.pinned ? { pinned: route.pinned } : {}) });
  // Cache affinity: the session's account first while it has room (router/affinity.ts).
  const all = (route.affinity ? warmFirst(ranked, route.pinned) : ranked).map((c) => c.target);
  const counts = deep ? undefined : (line: string) => !line.startsWith(DEEP_LINE);
  const ordered = all.filter((t) => !state.queue.contended(t.upstream.id, counts));
  if (ordered.length === all.length) return { ordered, waiting: [], probes: [], best: all[0]! };
  const waiting = all.filter((t) => !ordered.includes(t));
  const probes = deep ? waiting.filter((t) => state.queue.contended(t.upstream.id, isDeepLine)) : [];
  return { ordered, waiting, probes, best: all[0]! };
}

/** Waits in `best`'s line for a slot (the bounded queue); its QueueFullError when full or timed out. */
async function queued(state: RouterState, best: Target, deep: boolean, signal: AbortSignal, front: boolean): Promise<Taken | QueueFullError> {
  try {
    const waited = await state.queue.wait(waiterCandidate(best, deep), signal, undefined, front);
    return { target: best, lease: waited.lease, queuedMs: waited.waitedMs };
  } catch (err) {
    if (err instanceof QueueFullError) return err;
    throw err;
  }
}

const DEEP_LINE = '\u0000deep:';
const isDeepLine = (line: string): boolean => line.startsWith(DEEP_LINE);
/** The line of a wait for a place (deep) or a slot (any call) on any of `targets`. */
const placeLine = (targets: readonly Target[], deep = true): string => `${deep ? DEEP_LINE : '\u0000calls:'}${targets.map((t) => t.key).join('\u0000')}`;

/**
 * How long a deep call joining the wait rung's line now would wait for a place, ms: the
 * waiters ahead of it and itself, each served as one running call ends, calls ending at the
 * accounts' learned limits per typical call time (Little's law). Null when the typical time
 * is not known. `waited`: the request already waited in the line (the ones in it now are behind it).
 * Waiters on other replicas and workers are not seen: each is taken to have as many as this
 * one (store.replicas × server.workers on Redis; measured, two replicas at 32 agents counting
 * only their own waited twice as often as one replica, p50 1.30 s against 1.09 s).
 */
export function expectedPlaceWaitMs(
  state: RouterState,
  hot: readonly Target[],
  views: ReadonlyMap<Target, TargetView>,
  typicalMs: number | null,
  waited = false,
): number | null {
  if (typicalMs === null || hot.length === 0) return null;
  const places = hot.reduce((n, t) => n + Math.max(1, views.get(t)?.limit ?? 1), 0);
  // Whoever is in the line now came after a request that already waited in it: none is ahead of it.
  // The other processes' waiters are not seen: counted as this one's, once per peer (RouterSlots.peers).
  const ahead = waited ? 0 : state.queue.waiting(placeLine(hot)) * state.store.peers;
  return ((ahead + 1) * typicalMs) / places;
}

/**
 * The shed ladder's wait rung: waits up to `ms`, first come first served, for a deep place on
 * any of the model's hot accounts (one line per set of accounts; its head takes the first
 * place released on any of them); with `deep` false, for a slot of any call (router/shed-run.ts
 * afterThrottles). `front`: a request its account just throttled waits at the head of the line.
 * @returns the slot, or null when none freed in time (or the line is full).
 * @throws the abort reason when `signal` fires while waiting.
 */
export async function waitForPlace(
  state: RouterState,
  hot: readonly Target[],
  ms: number,
  signal: AbortSignal,
  deep = true,
  front = false,
): Promise<Taken | null> {
  if (hot.length === 0 || ms <= 0) return null;
  const line = placeLine(hot, deep);
  try {
    const got = await state.queue.waitAny(
      line,
      hot.map((t) => waiterCandidate(t, deep)),
      signal,
      ms,
      front,
    );
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
export function admissible(health: HealthBoard, remaining: readonly Target[], views: ReadonlyMap<Target, TargetView>, triedAny: boolean): Target[] {
  const pool = remaining.filter((t) => views.get(t)!.coolingUntil === 0 && health.canAdmit(t.key, t.upstream.id));
  if (pool.length > 0 || triedAny) return pool;
  const forceable = remaining.filter((t) => !health.longCooling(t.key, t.upstream.id));
  const endOf = (t: Target): number => Math.max(health.availableAt(t.key, t.upstream.id), views.get(t)!.coolingUntil);
  const soonest = forceable.sort((a, b) => endOf(a) - endOf(b))[0];
  return soonest ? [soonest] : [];
}
