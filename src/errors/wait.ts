/**
 * The wait a gateway error names: `Retry-After` (whole seconds, RFC 9110 §10.2.3) and
 * `retry-after-ms` (milliseconds; OpenAI's header, which the `openai` and `@anthropic-ai/sdk`
 * SDKs read before `Retry-After`). Codex CLI sleeps out `Retry-After` before each of its
 * retries, so a wait named here is always one the gateway expects to be over by then; an
 * upstream's own wait relayed with its error is capped likewise (`relayedWait`).
 */

/**
 * The headers for a wait of `ms`, at least 1 s and at most `capMs` (both when `ms` is
 * longer: callers decide before that a longer wait is a final answer instead).
 * @param ms the expected wait, ms.
 * @param capMs the longest wait the gateway names (routing.retry_after_cap_ms), ms.
 */
export function waitHeaders(ms: number, capMs = Number.POSITIVE_INFINITY): { 'retry-after': string; 'retry-after-ms': string } {
  const waitMs = Math.max(1_000, Math.min(Number.isFinite(ms) ? Math.ceil(ms) : capMs, capMs));
  return { 'retry-after': String(Math.ceil(waitMs / 1_000)), 'retry-after-ms': String(waitMs) };
}

/** An HTTP-date starts with a day name (IMF-fixdate "Sun, 06 Nov 1994 08:49:37 GMT", or the obsolete RFC 850 / asctime forms). */
const HTTP_DATE = /^(Mon|Tue|Wed|Thu|Fri|Sat|Sun)[a-z]*,? /;

/**
 * The wait one retry header names, ms: `retry-after-ms` is a decimal number of ms,
 * `Retry-After` whole seconds or an HTTP-date (the time from `now` until it: negative when
 * past). Infinity for a digit string too long for a number. undefined when the value is
 * none of those (absent, empty, negative, words, "1.5e3"; Date.parse alone would take "-5").
 * @param now the current time, ms since the epoch.
 */
export function headerWaitMs(name: 'retry-after' | 'retry-after-ms', value: string | undefined, now: number): number | undefined {
  const v = value?.trim();
  if (v === undefined || v === '') return undefined;
  if (name === 'retry-after-ms') return /^\d+(\.\d+)?$/.test(v) ? Math.ceil(Number(v)) : undefined;
  if (/^\d+$/.test(v)) return Number(v) * 1_000;
  if (!HTTP_DATE.test(v)) return undefined;
  const date = Date.parse(v);
  return Number.isNaN(date) ? undefined : date - now;
}

type HeaderBag = Readonly<Record<string, string | string[] | undefined>>;

/**
 * The wait an upstream's headers name, ms: `retry-after-ms` when it names one, else
 * `Retry-After` (see `headerWaitMs`: negative for a date already past); undefined when
 * neither does. The one reading of both headers, for the route's backoff
 * (router/backoff.ts retryAfterMs) and the relayed headers (`relayedWait`).
 * @param now the current time, ms since the epoch.
 */
export function namedWaitMs(headers: HeaderBag, now: number): number | undefined {
  const first = (v: string | string[] | undefined) => (Array.isArray(v) ? v[0] : v);
  return headerWaitMs('retry-after-ms', first(headers['retry-after-ms']), now) ?? headerWaitMs('retry-after', first(headers['retry-after']), now);
}

/**
 * An upstream's `Retry-After` / `retry-after-ms` as the gateway relays them with the
 * upstream's error, as one wait named in both headers alike (`waitHeaders`: whole seconds
 * rounded up, at least 1 s, and the same wait in ms), so an SDK reading either waits the same:
 * - the wait is `retry-after-ms` when it names one, else `Retry-After` (a date: the time until it);
 * - a value that names no wait (see `headerWaitMs`; a date already past) is dropped, and with
 *   no wait left both headers are;
 * - a wait longer than `capMs` is sent as `capMs` and `beyondCap` is true: the caller makes
 *   the answer final (`x-should-retry: false`), as a client should not sit out a wait the
 *   gateway does not expect to end, nor loop on a shorter one.
 * @param capMs the longest wait relayed (routing.retry_after_cap_ms), ms.
 * @param now the current time, ms since the epoch.
 */
export function relayedWait(headers: HeaderBag, capMs: number, now = Date.now()): { headers: Record<string, string>; beyondCap: boolean } {
  const ms = namedWaitMs(headers, now);
  if (ms === undefined || ms < 0) return { headers: {}, beyondCap: false };
  if (ms > capMs) return { headers: waitHeaders(capMs, capMs), beyondCap: true };
  return { headers: waitHeaders(ms, capMs), beyondCap: false };
}
