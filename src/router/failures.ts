/**
 * What one request's route remembers of its failed attempts (router/run.ts): the last
 * failure, which is the request's answer when the route stops; whether a failure cannot
 * heal (stop now) or named a wait the gateway does not sit out (no new round); and the waits
 * the upstreams named (the next round's backoff, a spent retry budget's Retry-After).
 */
import type { Classified } from '../errors/classify.js';
import { GatewayError } from '../errors/codes.js';
import type { AttemptResult } from './attempt.js';

export class RouteFailures {
  /** The last failure: the route's answer when it stops. */
  last: { classified: Classified; error: GatewayError } | null = null;
  /** The account of the last failed attempt. */
  upstream: string | undefined;
  /** A failure no retry can heal: the route stops. */
  stopNow = false;
  /** An upstream named a wait past retry_after_cap_ms: no new round (the gateway does not sit it out). */
  longWait = false;
  private hintMs = 0; // the longest wait an upstream named since the last round began, ms
  private hintEndsAt = 0; // epoch ms the longest wait a rate-limited upstream named ends (0: none)

  /** Notes a failed attempt on the account `upstream`. */
  note(upstream: string, result: Extract<AttemptResult, { ok: false }>): void {
    const { classified } = result;
    const hint = result.retryAfterMs;
    if (hint !== undefined) this.hintMs = Math.max(this.hintMs, hint);
    if (hint !== undefined && classified.class === 'rate_limited') this.hintEndsAt = Math.max(this.hintEndsAt, Date.now() + hint);
    this.last = { classified, error: result.error };
    this.upstream = upstream;
    if (!classified.retryable) this.stopNow = true;
    if (result.beyondCap) this.longWait = true;
  }

  /** The longest wait an upstream named since the last round began, ms (0: none); a new round starts from none. */
  takeHintMs(): number {
    const hint = this.hintMs;
    this.hintMs = 0;
    return hint;
  }

  /** What is left of the longest wait a rate-limited upstream named, ms; null when none was named. */
  hintLeftMs(): number | null {
    return this.hintEndsAt > 0 ? Math.max(0, this.hintEndsAt - Date.now()) : null;
  }

  /** The route's answer when it stops: the last failure, else no target. */
  final(): GatewayError {
    return this.last?.error ?? new GatewayError('GW_ERR_NO_TARGET');
  }
}
