/**
 * What one deep attempt tells its account's learned capacity beyond refusals: a stalled
 * first event (router/stalls.ts), sent to the store the moment the stall is seen, and the
 * uncongested first-event times that make the stall baseline.
 */
import type { RateWindows } from '../providers/types.js';
import type { Attempt } from './attempt.js';
import { spentForMs } from './rate-windows.js';
import type { RouterState } from './state.js';

/**
 * How long a stalled attempt's place is held after it was left, ms: the provider counts the
 * call until it sees the cancel, and a call sent in its place at once would find it still there.
 */
export const STALL_LINGER_MS = 100;

/**
 * A running attempt's stall watch: call `onStall` if no first event came `thresholdMs()`
 * after it was sent. The threshold is read again until the account has one (a cold
 * account's first calls teach it while an early call may still be waiting).
 */
export interface StallWatch {
  /** The account's stall threshold now, ms; null while it has too few samples. */
  thresholdMs(): number | null;
  /** Whether a stalled attempt that sent nothing yet is left for another account or model (the route has somewhere to go). */
  readonly abandon: boolean;
  onStall(): void;
}

/**
 * The stall watch of a deep streamed attempt, else null (a lone call on its account says
 * nothing about concurrency: it is never counted as a throttle).
 * @param route `laterModels`: the route has fallback models left; with them, another account
 *   of the model or a shed fallback, a stalled attempt may be left (`abandon`); `moved`: the
 *   request already left one stalled attempt, so this one runs to its end (a legitimately
 *   slow reasoning call is sent again at most once).
 */
export function stallWatch(state: RouterState, attempt: Attempt, route: { laterModels: boolean; moved: boolean }): StallWatch | null {
  if (!attempt.deep || attempt.deepInFlight <= 1) return null;
  const { upstream, model } = attempt.target;
  // The accounts whose first events tell this one's while it has too few of its own (router/stalls.ts).
  const siblings = attempt.model.targets.filter((t) => t.model === model && t.upstream.provider === upstream.provider).map((t) => t.upstream.id);
  return {
    thresholdMs: () => state.stalls.thresholdMs(upstream.id, siblings),
    abandon:
      !route.moved && (route.laterModels || attempt.model.targets.length > 1 || (attempt.model.shed.fallback ?? attempt.model.name) !== attempt.model.name),
    onStall: () => {
      if (attempt.stalled) return;
      attempt.stalled = true;
      // Cut now; the release sends nothing more (the late success is no sign of headroom).
      attempt.signal = null;
      void state.store.feedback(upstream.id, { signal: 'throttled', inFlight: attempt.deepInFlight }, upstream.bounds).catch(() => {});
    },
  };
}

/** A deep attempt answered: its first event time feeds the baseline (unless it stalled), its success the capacity. */
export function answered(state: RouterState, attempt: Attempt, firstEventMs: number | null): void {
  if (attempt.stalled) return;
  attempt.signal = 'ok';
  if (!attempt.deep) return;
  if (attempt.lease.probe) attempt.answering = state.store.answered(attempt.lease).catch(() => false);
  if (firstEventMs !== null) state.stalls.observe(attempt.target.upstream.id, firstEventMs);
}

/**
 * An answer's rate-limit headers (any status): a window all but spent puts the target in a
 * shared cooldown until it refills (router/rate-windows.ts), at most `capMs`.
 */
export function windowsSeen(state: RouterState, attempt: Attempt, w: RateWindows, capMs: number): void {
  const ms = spentForMs(w, capMs);
  if (ms <= 0) return;
  void state.store.setCooldown(attempt.target.key, Date.now() + ms);
  state.onWindowSpent?.(attempt.target.upstream.id);
}
