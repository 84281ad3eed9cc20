/**
 * OpenAI's rate-limit headers, sent on every answer (OpenAI API docs, "Rate limits", rate
 * limits in headers): `x-ratelimit-{limit,remaining,reset}-{requests,tokens}`, the resets
 * as Go-style durations relative to now (`"1s"`, `"6m0s"`, `"12ms"`, `"1h2m3.5s"`). Groq,
 * OpenRouter, Together and Azure OpenAI send the same family; Azure sometimes sends `-1`
 * (unknown), which is read as absent.
 */
import type { Allowance, RateWindows } from '../types.js';

const UNIT_MS: Record<string, number> = { h: 3_600_000, m: 60_000, s: 1_000, ms: 1, us: 0.001, µs: 0.001, ns: 0.000001 };

/** A Go duration (`1h2m3.5s`, `250ms`) or plain seconds (`"20"`), ms; null when unreadable. */
export function parseGoDuration(v: string): number | null {
  const s = v.trim();
  if (s === '') return null;
  if (/^\d+(\.\d+)?$/.test(s)) return Math.ceil(Number(s) * 1000);
  const re = /(\d+(?:\.\d+)?)(h|ms|m|s|us|µs|ns)/gy;
  let ms = 0;
  let m: RegExpExecArray | null;
  let at = 0;
  while ((m = re.exec(s)) !== null) {
    ms += Number(m[1]) * UNIT_MS[m[2]!]!;
    at = re.lastIndex;
  }
  return at === s.length ? Math.ceil(ms) : null;
}

const first = (v: string | string[] | undefined): string | undefined => (Array.isArray(v) ? v[0] : v);

function count(v: string | string[] | undefined): number | null {
  const s = first(v)?.trim();
  if (s === undefined || !/^\d+$/.test(s)) return null;
  return Number(s);
}

/** The three header names of each window, built once (a name built per answer is a new string for every lookup). */
const NAMES = {
  requests: { remaining: 'x-ratelimit-remaining-requests', reset: 'x-ratelimit-reset-requests', limit: 'x-ratelimit-limit-requests' },
  tokens: { remaining: 'x-ratelimit-remaining-tokens', reset: 'x-ratelimit-reset-tokens', limit: 'x-ratelimit-limit-tokens' },
} as const;

function allowance(h: Readonly<Record<string, string | string[] | undefined>>, kind: 'requests' | 'tokens'): Allowance | undefined {
  const names = NAMES[kind];
  const remaining = count(h[names.remaining]);
  if (remaining === null) return undefined;
  const reset = first(h[names.reset]);
  return { limit: count(h[names.limit]), remaining, resetInMs: reset === undefined ? null : parseGoDuration(reset) };
}

/** The account's request and token windows from an OpenAI-style answer's headers (absent ones left out). */
export function openAIRateWindows(h: Readonly<Record<string, string | string[] | undefined>>): RateWindows {
  const requests = allowance(h, 'requests');
  const tokens = allowance(h, 'tokens');
  return { ...(requests ? { requests } : {}), ...(tokens ? { tokens } : {}) };
}
