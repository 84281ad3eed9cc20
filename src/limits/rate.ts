/**
 * The `rpm` / `tpm` windows of the client keys: fixed one-minute windows kept in the store
 * (KeyWindows, store/types.ts: on Redis while it answers, else locally), one per key and kind,
 * and OpenAI's `x-ratelimit-*` headers read from what a window holds.
 */
import type { Caller } from '../auth/keys.js';
import type { WindowCount, WindowRef } from '../store/types.js';
import { resetDuration } from './periods.js';

/** Window length, s. */
export const WINDOW_S = 60;

/** A key's limits, as its config gives them. */
export type Limits = NonNullable<Caller['limits']>;

/**
 * Key `name`'s `kind` window. Its id names the key twice (`rpm:<name>:<name>`): the Redis
 * counter (`{prefix}:rl:<id>`) keeps the name rate-limiter-flexible gave it (prefix
 * `rpm:<name>`, key `<name>`), so replicas of older versions count in the same window.
 */
export function keyWindow(kind: 'rpm' | 'tpm', name: string): WindowRef {
  return { key: `${kind}:${name}:${name}`, windowS: WINDOW_S };
}

/**
 * Sets OpenAI's `x-ratelimit-{limit,remaining,reset}-<kind>` headers from what a window holds
 * (`consumedPoints` of `limit`; `msBeforeNext`, ms, until it ends).
 */
export function setRateHeaders(h: Record<string, string>, kind: 'requests' | 'tokens', limit: number, r: WindowCount): void {
  h[`x-ratelimit-limit-${kind}`] = String(limit);
  h[`x-ratelimit-remaining-${kind}`] = String(Math.max(0, Math.min(limit, limit - r.consumedPoints)));
  h[`x-ratelimit-reset-${kind}`] = resetDuration(r.msBeforeNext);
}
