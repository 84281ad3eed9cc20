/**
 * When an account that is out of quota comes back, as far as the provider says: a quota is
 * not a concurrency window, so the account stays out (router/long-cooldown.ts) until then
 * instead of being probed every minute, and nothing of it reaches the learned capacity
 * (router/attempt.ts isThrottle takes rate limits and stalls only).
 *
 * What is read, first found wins:
 * - Anthropic's spend limit: a 400 whose message says "You have reached your specified API
 *   usage limits. You will regain access on 2026-04-01 at 00:00 UTC." (as relayed in
 *   anthropics/claude-code issues #2127 and #38035).
 * - The answer's own `retry-after-ms` / `Retry-After` (seconds or an HTTP-date), uncapped:
 *   routing.retry_after_cap_ms bounds what a client is told to wait, not how long the account
 *   is out.
 * OpenAI's `insufficient_quota` names no reset: the account is probed as a bad key is.
 */
import { namedWaitMs } from './wait.js';

type HeaderBag = Readonly<Record<string, string | string[] | undefined>>;

/** "regain access on 2026-04-01 at 00:00 UTC" (the time part optional). */
const REGAIN = /regain access on (\d{4})-(\d{2})-(\d{2})(?: at (\d{1,2}):(\d{2}))?\s*(?:utc)?/i;

/** The longest reset taken as told, ms (a year): a date further out is a misreading. */
const MAX_RESET_MS = 366 * 24 * 3_600_000;

/**
 * The epoch ms at which a quota failure's account may serve again, when the provider named it.
 * @param message the upstream's error message (any case), or null.
 * @param headers the upstream answer's headers (none for an error inside a stream).
 * @param now the current time, epoch ms.
 * @returns epoch ms in the future (at most a year ahead), or undefined when nothing names one.
 */
export function quotaResetAt(message: string | null | undefined, headers: HeaderBag | undefined, now: number): number | undefined {
  const m = message ? REGAIN.exec(message) : null;
  if (m) {
    const at = Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]), Number(m[4] ?? 0), Number(m[5] ?? 0));
    if (Number.isFinite(at) && at > now && at - now <= MAX_RESET_MS) return at;
  }
  const named = headers ? namedWaitMs(headers, now) : undefined;
  if (named !== undefined && named > 0 && Number.isFinite(named)) return now + Math.min(named, MAX_RESET_MS);
  return undefined;
}
