/**
 * Taking what a client key's limits ask for before its request runs: its concurrency slot
 * (`max_concurrency`), one `rpm` point and its `tpm` reservation, all or nothing in one store
 * call (KeyWindows.admitKey: on Redis one op of the turn's script call, store/redis-windows.ts;
 * else the local store, store/key-windows.ts). A refusal keeps nothing taken and throws a 429
 * GatewayError in the shape OpenAI uses. The release returns the slot and settles the `tpm`
 * reservation to the real usage, where the take was counted.
 */
import type { Caller } from '../auth/keys.js';
import { GatewayError } from '../errors/codes.js';
import { waitHeaders } from '../errors/wait.js';
import type { KeyWindows } from '../store/roles.js';
import type { KeyAdmission, KeyAdmitted, KeyWindow } from '../store/types.js';
import { settled } from '../util/settled.js';
import { keyWindow, setRateHeaders, type Limits } from './rate.js';

/** Completion tokens reserved for a `tpm` check when the request sets no output cap. */
export const DEFAULT_COMPLETION_TOKENS = 1024;

/** The token counts a finished request is settled with (the pipeline's `Usage` has them, or {@link tpmTokens} of it). */
export interface SettledTokens {
  readonly input: number;
  readonly output: number;
}

/**
 * Provider kinds whose rate limits leave prompt-cache reads out: Anthropic's ITPM counts
 * `input_tokens` and `cache_creation_input_tokens` but not `cache_read_input_tokens` (Anthropic
 * API docs, "Rate limits", "Cache-aware ITPM"; a few older models are the exception).
 * OpenAI counts cached tokens toward TPM like any other ("Prompt caching" guide, FAQ), and so
 * does every other kind here, for want of a provider that says otherwise.
 */
const CACHE_READS_OUTSIDE_RATE_LIMITS: ReadonlySet<string> = new Set(['anthropic']);

/**
 * What a finished call counts against its key's `tpm`: the tokens its provider counts against
 * its own rate limit: the prompt without cache reads on a provider in
 * CACHE_READS_OUTSIDE_RATE_LIMITS, else the whole prompt; and the output.
 * @param provider the provider kind of the target that served; null: none (nothing is left out).
 */
export function tpmTokens(u: { readonly input: number; readonly cached: number; readonly output: number }, provider: string | null): SettledTokens {
  const free = provider !== null && CACHE_READS_OUTSIDE_RATE_LIMITS.has(provider);
  return { input: free ? u.input - u.cached : u.input, output: u.output };
}

/** The rpm / tpm / concurrency part of an admission: its rate headers, and `release` once at the end. */
export interface Held {
  readonly headers: Record<string, string>;
  release(usage: SettledTokens): Promise<void>;
}

/** Why a key was refused (the `reason` label of the limit-rejection metric). */
export type LimitReason = 'requests' | 'tokens' | 'concurrency';

/** What one take needs: the store, the key and its limits, its `tpm` reservation (0 without tpm). */
export interface TakeInput {
  readonly windows: KeyWindows;
  readonly caller: Caller;
  readonly limits: Limits;
  readonly tokens: number;
  /** Counts the refusal and throws `err`. */
  readonly reject: (reason: LimitReason, err: GatewayError) => never;
}

/** One window a take draws on: its kind (for the headers and the 429), id, limit and the points this request takes. */
type Window = KeyWindow & { readonly kind: 'requests' | 'tokens' };

function concurrencyError(name: string, limit: number): GatewayError {
  return new GatewayError('GW_ERR_RATE_LIMITED', { message: `Too many concurrent requests for key "${name}": limit ${limit}.`, headers: waitHeaders(1_000) });
}

/** A full window's 429; `headers` already carry its x-ratelimit-* values. */
function windowError(name: string, w: Window, requested: number, msBeforeNext: number, headers: Record<string, string>): GatewayError {
  const what = w.kind === 'requests' ? `requests per min (RPM): Limit ${w.limit}.` : `tokens per min (TPM): Limit ${w.limit}, Requested ${requested}.`;
  return new GatewayError('GW_ERR_RATE_LIMITED', {
    ...(w.kind === 'tokens' ? { type: 'tokens' } : {}),
    message: `Rate limit reached for key "${name}" on ${what}`,
    headers: { ...headers, ...waitHeaders(msBeforeNext) },
  });
}

/** The windows the key has, in the order they are taken: its `rpm` (1 point), then its `tpm` (the reservation). */
function keyWindows({ caller, limits, tokens }: TakeInput): Window[] {
  const out: Window[] = [];
  if (limits.rpm) out.push({ kind: 'requests', ...keyWindow('rpm', caller.name), limit: limits.rpm, points: 1 });
  if (limits.tpm) out.push({ kind: 'tokens', ...keyWindow('tpm', caller.name), limit: limits.tpm, points: tokens });
  return out;
}

/** What a request whose key takes nothing holds. */
export const HOLDS_NOTHING: Held = { headers: {}, release: async () => {} };

/** The store admission the key's limits ask for, or null when they take nothing (a key whose limits are budgets only). */
export function keyAdmission(x: TakeInput): KeyAdmission | null {
  const windows = keyWindows(x);
  if (windows.length === 0 && !x.limits.max_concurrency) return null;
  return { slot: { upstream: `key:${x.caller.name}`, limit: x.limits.max_concurrency ?? 0 }, windows };
}

/** What the key holds after the store's answer `got` to its `keyAdmission`; @throws the 429 of a refusal. */
export function keyHeld(x: TakeInput, got: KeyAdmitted): Held {
  const { windows: store, caller, limits, tokens } = x;
  const name = caller.name;
  const windows = keyWindows(x);
  const headers: Record<string, string> = {};
  windows.forEach((w, i) => setRateHeaders(headers, w.kind, w.limit, got.windows[i]!));
  if (got.refused === 'concurrency') x.reject('concurrency', concurrencyError(name, limits.max_concurrency ?? 0));
  if (got.refused !== null) {
    const w = windows[got.refused]!;
    x.reject(w.kind, windowError(name, w, w.points, got.windows[got.refused]!.msBeforeNext, headers));
  }
  const { lease, from } = got;
  const tpm = tokens > 0 && limits.tpm ? keyWindow('tpm', name) : null;
  return {
    headers,
    release: async (usage) => {
      await settled(lease ? store.release(lease) : null, tpm ? store.settleWindow(from, tpm, usage.input + usage.output - tokens) : null);
    },
  };
}
