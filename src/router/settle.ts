/**
 * What an attempt's outcome tells its replica's routing state: target health, latency, the
 * session's pin, and the slot back with its capacity signal. A call its account throttled
 * is a routing signal, not a failure: its slot goes back with no circuit trip (the route
 * then moves on without a retry draw: router/run.ts).
 */
import type { RoutingConfig } from '../config/schema.js';
import { isThrottle, type Attempt, type AttemptResult } from './attempt.js';
import { usesAffinity } from './affinity.js';
import { answered, STALL_LINGER_MS } from './feedback.js';
import type { RouteOptions, RouterState } from './state.js';

/** A failed attempt, settled: whether its account throttled it, and its slot back (resolves once the queue is woken). */
export interface Settled {
  readonly throttle: boolean;
  readonly given: Promise<void>;
}

/**
 * Feeds `attempt`'s outcome back into health, latency, the session's pin and the account's
 * capacity, and gives its slot back.
 * @returns for a failure, whether it was a throttle and its slot back; null for a success or an abort.
 */
export function settle(state: RouterState, cfg: RoutingConfig, opts: RouteOptions, attempt: Attempt, result: AttemptResult): Settled | null {
  const { target } = attempt;
  const { health } = state;
  if (result.ok === true) {
    answered(state, attempt, result.firstEventMs ?? null);
    health.success(target.key, target.upstream.id);
    state.latency.observe(target.key, result.latencyMs);
    // The pin rides the slot's release (one store call with it).
    if (opts.strategy === 'sticky' && opts.session) attempt.pinOnRelease(opts.session, cfg.sticky_ttl_ms);
    else if (usesAffinity(cfg, opts)) attempt.pinOnRelease(opts.session!, Math.max(cfg.cache_affinity.ttl_ms, opts.cacheLifetimeMs ?? 0));
    return null;
  }
  if (result.ok === 'aborted') {
    attempt.release();
    health.release(target.key, target.upstream.id);
    return null;
  }
  const { classified } = result;
  const throttle = isThrottle(attempt, classified);
  if (throttle) attempt.signal = 'throttled';
  // A stalled call just cancelled still counts at the provider until it sees the cancel.
  const given = attempt.release(classified.class === 'stall' ? STALL_LINGER_MS : 0);
  if (throttle) health.release(target.key, target.upstream.id);
  else health.failure(target.key, target.upstream.id, classified, result.reason ?? result.error.message, result.retryAfterMs, result.resetAt);
  if (classified.class === 'timeout' || classified.class === 'stall') state.latency.observe(target.key, result.latencyMs);
  return { throttle, given };
}

/**
 * A streamed answer that broke after its first byte (an upstream error event such as
 * Anthropic's mid-stream `overloaded_error`, a cut, a stall): its turn does not pin its
 * session to the account, and a pin that sent the turn there is cleared, so the session's
 * next turn is placed afresh instead of going back to an account that breaks its streams.
 * Health is not touched (router/health.ts: a `stream` failure counts in the recent outcomes).
 * @param pinned the session's pin as the route read it (undefined: none).
 */
export function brokeAfterCommit(state: RouterState, opts: RouteOptions, attempt: Attempt, pinned: string | undefined): void {
  attempt.dropPin();
  if (opts.session !== undefined && pinned === attempt.target.key) void state.store.setPin(opts.session, '', 1);
}
