/**
 * Anthropic's rate-limit headers, sent on every answer (Anthropic API docs, "Rate limits",
 * response headers): `anthropic-ratelimit-requests-{limit,remaining,reset}` and
 * `anthropic-ratelimit-tokens-{limit,remaining,reset}` (the most restrictive token limit in
 * force), the resets as RFC 3339 timestamps.
 */
import type { Allowance, RateWindows } from '../types.js';

const first = (v: string | string[] | undefined): string | undefined => (Array.isArray(v) ? v[0] : v);

function count(v: string | string[] | undefined): number | null {
  const s = first(v)?.trim();
  return s !== undefined && /^\d+$/.test(s) ? Number(s) : null;
}

/** An RFC 3339 timestamp as ms from `now` (0 when past); null when unreadable. */
function untilMs(v: string | undefined, now: number): number | null {
  if (v === undefined || !/^\d{4}-\d{2}-\d{2}T/.test(v.trim())) return null;
  const t = Date.parse(v.trim());
  return Number.isNaN(t) ? null : Math.max(0, t - now);
}

function allowance(h: Readonly<Record<string, string | string[] | undefined>>, kind: 'requests' | 'tokens', now: number): Allowance | undefined {
  const remaining = count(h[`anthropic-ratelimit-${kind}-remaining`]);
  if (remaining === null) return undefined;
  return { limit: count(h[`anthropic-ratelimit-${kind}-limit`]), remaining, resetInMs: untilMs(first(h[`anthropic-ratelimit-${kind}-reset`]), now) };
}

/** The account's request and token windows from an Anthropic answer's headers (absent ones left out). */
export function anthropicRateWindows(h: Readonly<Record<string, string | string[] | undefined>>, now = Date.now()): RateWindows {
  const requests = allowance(h, 'requests', now);
  const tokens = allowance(h, 'tokens', now);
  return { ...(requests ? { requests } : {}), ...(tokens ? { tokens } : {}) };
}
