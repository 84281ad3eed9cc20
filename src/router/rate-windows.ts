/**
 * An account's rate-limit windows as a routing signal: when an answer's headers say a window
 * (requests or tokens per minute …) is all but spent, the target is put in a shared cooldown
 * until the window refills, so the next calls go to an account with room instead of
 * collecting the 429 the provider is about to send. The headers are read by the provider
 * (providers/<kind>/rate-limits.ts); this decides what they mean.
 */
import type { RateWindows } from '../providers/types.js';

/**
 * A window counts as spent at or below these shares of its size: 1% for requests, 5% for
 * tokens (the provider reserves the prompt and `max_tokens` of the next call against it,
 * and a deep call's reservation is a few percent of a typical tokens-per-minute window).
 * With no size sent, only 0 left counts.
 */
const LOW_REQUESTS = 0.01;
const LOW_TOKENS = 0.05;
/** Assumed refill time of a spent window whose reset was not sent, ms. */
const DEFAULT_RESET_MS = 1_000;

function spent(remaining: number, limit: number | null, share: number): boolean {
  return limit !== null && limit > 0 ? remaining <= Math.floor(limit * share) : remaining <= 0;
}

/**
 * How long the account has no room by its windows, ms (0: it has room), at most `capMs`.
 * @param w what the answer's rate-limit headers said.
 */
export function spentForMs(w: RateWindows, capMs: number): number {
  let ms = 0;
  if (w.requests && spent(w.requests.remaining, w.requests.limit, LOW_REQUESTS)) ms = Math.max(ms, w.requests.resetInMs ?? DEFAULT_RESET_MS);
  if (w.tokens && spent(w.tokens.remaining, w.tokens.limit, LOW_TOKENS)) ms = Math.max(ms, w.tokens.resetInMs ?? DEFAULT_RESET_MS);
  return Math.min(ms, capMs);
}
