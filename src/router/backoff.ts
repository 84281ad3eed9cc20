/**
 * Retry timing: full-jitter exponential backoff (AWS Architecture Blog, "Exponential
 * Backoff and Jitter") and the upstream's own hints, `Retry-After` (RFC 9110 §10.2.3:
 * seconds or an HTTP date) and `retry-after-ms` (OpenAI's millisecond header).
 */
import { namedWaitMs } from '../errors/wait.js';

/** random(0, min(cap, base · 2^round)), ms; `round` starts at 0. */
export function fullJitter(round: number, baseMs: number, capMs: number, random: () => number = Math.random): number {
  return Math.floor(random() * Math.min(capMs, baseMs * 2 ** round));
}

/**
 * The upstream's retry hint in ms, capped at `capMs`; undefined when absent or unreadable.
 * `retry-after-ms` wins over `retry-after`.
 */
export function retryAfterMs(headers: Readonly<Record<string, string | string[] | undefined>>, capMs: number, now = Date.now()): number | undefined {
  const ms = namedWaitMs(headers, now);
  return ms === undefined ? undefined : Math.min(capMs, Math.max(0, ms));
}
