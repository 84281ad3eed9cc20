/**
 * Retry timing: full-jitter exponential backoff (AWS Architecture Blog, "Exponential
 * Backoff and Jitter") and the upstream's own hints, `Retry-After` (RFC 9110 §10.2.3:
 * seconds or an HTTP date) and `retry-after-ms` (OpenAI's millisecond header).
 */

/** random(0, min(cap, base · 2^round)), ms; `round` starts at 0. */
export function fullJitter(round: number, baseMs: number, capMs: number, random: () => number = Math.random): number {
  return Math.floor(random() * Math.min(capMs, baseMs * 2 ** round));
}

/**
 * The upstream's retry hint in ms, capped at `capMs`; undefined when absent or unreadable.
 * `retry-after-ms` wins over `retry-after`.
 */
export function retryAfterMs(headers: Readonly<Record<string, string | string[] | undefined>>, capMs: number, now = Date.now()): number | undefined {
  const first = (v: string | string[] | undefined) => (Array.isArray(v) ? v[0] : v);
  const ms = first(headers['retry-after-ms']);
  if (ms !== undefined && /^\d+(\.\d+)?$/.test(ms.trim())) return Math.min(capMs, Math.ceil(Number(ms)));
  const ra = first(headers['retry-after'])?.trim();
  if (ra === undefined) return undefined;
  if (/^\d+$/.test(ra)) return Math.min(capMs, Number(ra) * 1000);
  // An HTTP-date starts with a day name (IMF-fixdate "Sun, 06 Nov 1994 08:49:37 GMT", or
  // the obsolete RFC 850 / asctime forms); Date.parse alone would accept "1.5" or "-5".
  if (!/^(Mon|Tue|Wed|Thu|Fri|Sat|Sun)[a-z]*,? /.test(ra)) return undefined;
  const date = Date.parse(ra);
  if (Number.isNaN(date)) return undefined;
  return Math.min(capMs, Math.max(0, date - now));
}
