/**
 * The learned capacity of one upstream account: how many deep calls it takes in flight
 * before it throttles, found out from what the provider does, never typed in.
 *
 * The control law is additive-increase / cut-to-observation, a variant of AIMD (Chiu and
 * Jain, "Analysis of the Increase and Decrease Algorithms for Congestion Avoidance in
 * Computer Networks", 1989; as used for concurrency by Netflix's concurrency-limits
 * `AIMDLimit` and by TCP congestion avoidance), adapted to what a provider's refusal says:
 *
 * - **Cut.** A deep call throttled (a 429 rate limit, a stalled first token) while `n` deep
 *   calls (itself included) were in flight on the account says the account takes fewer
 *   than `n`: the limit drops to `n - 1` (never below `min`). For a refusal (answered at
 *   once) `n` is the larger of the count when the call took its place and the count when
 *   the refusal is reported: calls that took their places after it may have reached the
 *   provider before it, so the count at its start alone can understate what the provider
 *   saw (a burst's refusals, reported out of order, would otherwise ratchet the limit down
 *   to 1). For a stall (seen a second or more after the call took its place) `n` is the
 *   count at its start: the calls admitted since say nothing of what it found. That is sharper than a
 *   multiplicative cut, because `n` is known; several refusals of one burst all cut to about
 *   the same place instead of collapsing the limit.
 *   Unless the account served a call that found at least `n` in flight within the last
 *   SERVED_MS and since the last refusal at that level: then one refusal is not about
 *   concurrency (a provider refusing 1% of calls at random, or at a token window's edge,
 *   would otherwise ratchet the limit down to 1 and queue everything; found by the soak,
 *   docs/soak.md). A refusal at the very level served uses that evidence up (the level
 *   drops by one), so a real drop of capacity, refusing at every level above it, is
 *   followed within a few refusals.
 * - **Probe.** A deep call that succeeded while the account was at its limit (`n >= limit`,
 *   `n` the count when it took its place: that is what it proved the account takes) says the
 *   account may take more: once the account has been calm for `probeMs` (no change of the
 *   limit, no throttle; the calm starts with the first feedback the account ever gives, so
 *   no account is raised before its first calls have shown how it answers), it rises by one
 *   (never above `ceiling`); until the account has throttled once, it grows by half instead
 *   (a gentler slow start than TCP's doubling, RFC 5681 §3.1: an overshoot costs stalled or
 *   refused calls, not dropped packets), so an account far larger than the starting guess is
 *   found in a few probes. A raise that a throttle at its new place follows
 *   doubles `probeMs` (up to PROBE_MAX_MS): a saturated account is probed ever more rarely,
 *   so a provider that stalls instead of refusing is rarely made to stall; each call that
 *   succeeds at a raised limit halves it (not below PROBE_BASE_MS), so a provider that grew
 *   its capacity, serving call after call at the raised place, is followed within seconds,
 *   while one call that found the account a moment below its cap (counts lag the provider's
 *   by a release in flight, more so across replicas) does not undo the backoff: measured
 *   with `node scripts/bench-clustering.mjs --shapes stall --loads 32 --arms one,two`,
 *   a reset to PROBE_BASE_MS let such lucky calls probe a saturated account every 5–10 s
 *   (32 stalls on two replicas); halving, 20, and the waits grow as they should.
 *
 * The same law, with its own state, learns how many calls of every kind the account takes
 * (bounds: start and ceiling `max_concurrency`, min 1): only calls that are not deep feed it
 * (a deep call's outcome is the deep state's), and no probe gate holds its raises back.
 *
 * One state per account, kept in the shared store so every replica reads and updates the
 * same estimate (the Redis store runs the same law in Lua: store/redis-capacity.ts; the
 * store contract test runs both against one table of cases).
 */

import type { ProbeState } from './probe-gate.js';

/**
 * How long a served call is evidence of what the account takes, ms: a throttle at no more
 * calls in flight than one served within this time is not a concurrency limit.
 */
export const SERVED_MS = 5_000;
/** A served call at the same level refreshes that evidence at most this often (a store write), ms. */
export const SERVED_REFRESH_MS = 1_000;

/** The first wait before probing above a limit, ms. */
export const PROBE_BASE_MS = 2_000;
/** The longest wait between probes of a saturated account, ms. */
export const PROBE_MAX_MS = 16_000;

/** An account's learned state (with the probe gate's part, store/probe-gate.ts). */
export interface CapacityState extends ProbeState {
  /** Deep calls the account takes in flight. */
  limit: number;
  /** Epoch ms of the last change of `limit` or throttle, or of the first feedback (0: none yet). */
  changedAt: number;
  /** When the last change was a raise (a probe): the limit before it; 0 otherwise. */
  raisedFrom: number;
  /** The wait before the next raise, ms. */
  probeMs: number;
  /** No throttle seen yet: raises grow the limit by half. */
  slowStart: boolean;
  /** The most calls in flight a served call found recently (0: none), and when, epoch ms. */
  servedAt: number;
  servedMs: number;
}

/** What the operator may configure per upstream (all optional in the config). */
export interface CapacityBounds {
  /** The starting guess. */
  readonly start: number;
  readonly min: number;
  /** Never above this (defaults to the upstream's `max_concurrency`). */
  readonly ceiling: number;
}

/** What one finished deep call says about its account. */
export interface CapacityFeedback {
  /** `ok`: served without throttling; `throttled`: refused with a rate limit, or stalled. */
  readonly signal: 'ok' | 'throttled';
  /** Deep calls in flight on the account when this one started, itself included. */
  readonly inFlight: number;
}

/** The state of an account nothing has been learned about yet. */
export function initialCapacity(b: CapacityBounds): CapacityState {
  return {
    limit: clamp(b.start, b),
    changedAt: 0,
    raisedFrom: 0,
    probeMs: PROBE_BASE_MS,
    slowStart: true,
    servedAt: 0,
    servedMs: 0,
    trusted: 0,
    probe: '',
    lucky: '',
    probeAt: 0,
  };
}

function clamp(n: number, b: CapacityBounds): number {
  return Math.max(b.min, Math.min(b.ceiling, Math.floor(n)));
}

/**
 * Applies one call's feedback (in place) and returns the state.
 * @param now epoch ms (the store's clock).
 * @param liveNow deep calls in flight on the account as the feedback arrives (the call itself
 *   included while it holds its place); a throttle is read against the larger of it and
 *   `f.inFlight`, a success against `f.inFlight` alone.
 */
export function applyFeedback(s: CapacityState, f: CapacityFeedback, b: CapacityBounds, now: number, liveNow = 0): CapacityState {
  s.limit = clamp(s.limit, b);
  if (f.signal === 'throttled') {
    const seen = Math.max(f.inFlight, liveNow);
    // The account served as many at once moments ago: this refusal alone is not about
    // concurrency (a random 429, a token window); the request moves on, the limit and the calm
    // stay. A refusal at the very level served uses that evidence up: a second one there
    // before another call is served there cuts. One below it says nothing of the level.
    if (s.servedAt >= seen && now - s.servedMs <= SERVED_MS) {
      if (seen === s.servedAt) s.servedAt = seen - 1;
      return s;
    }
    const cut = clamp(seen - 1, b);
    if (cut < s.limit) {
      // A raise that failed in the places it added waits twice as long for the next; a
      // throttle below them (a cut under the limit before the raise) says nothing of the probe.
      if (s.raisedFrom > 0 && cut >= s.raisedFrom) s.probeMs = Math.min(PROBE_MAX_MS, s.probeMs * 2);
      s.limit = cut;
      s.raisedFrom = 0;
    }
    // Any throttle restarts the calm the next probe waits for.
    s.changedAt = now;
    s.slowStart = false;
    return s;
  }
  if (f.inFlight > s.servedAt || now - s.servedMs > (f.inFlight === s.servedAt ? SERVED_REFRESH_MS : SERVED_MS)) {
    s.servedAt = f.inFlight;
    s.servedMs = now;
  }
  if (s.changedAt === 0) {
    s.changedAt = now; // the first word from the account starts the calm
    return s;
  }
  if (f.inFlight < s.limit) return s;
  if (s.raisedFrom > 0) s.probeMs = Math.max(PROBE_BASE_MS, s.probeMs / 2); // a call at the raised limit was served
  if (s.limit < b.ceiling && now - s.changedAt >= s.probeMs) {
    s.raisedFrom = s.limit;
    s.limit = s.slowStart ? Math.min(b.ceiling, s.limit + Math.max(1, Math.floor(s.limit / 2))) : s.limit + 1;
    s.changedAt = now;
  }
  return s;
}

/** One replica's share of `limit` (`replicas` sharing it): at least 1; the whole of it for one replica. */
export function shareOf(limit: number, replicas: number): number {
  return replicas <= 1 ? limit : Math.max(1, Math.floor(limit / replicas));
}

/**
 * A slot request with its limits cut to one replica's share (`replicas` sharing them), for
 * the local store while Redis is away; unchanged for one replica.
 */
export function replicaShare<R extends { limit: number; capacity: CapacityBounds; calls: CapacityBounds }>(req: R, replicas: number): R {
  if (replicas <= 1) return req;
  const share = (n: number) => shareOf(n, replicas);
  const part = (b: CapacityBounds): CapacityBounds => ({ start: share(b.start), ceiling: share(b.ceiling), min: Math.min(b.min, share(b.ceiling)) });
  return { ...req, limit: share(req.limit), capacity: part(req.capacity), calls: part(req.calls) };
}
