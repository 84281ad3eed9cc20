/**
 * Taking what a client key's limits ask for before its request runs: its concurrency slot
 * (`max_concurrency`), one `rpm` point and its `tpm` reservation. All or nothing: a refusal
 * keeps nothing taken and throws a 429 GatewayError in the shape OpenAI uses.
 *
 * - On Redis: one op of the turn's script call (StateStore.admitKey; store/redis-scripts.ts
 *   KEY_ADMIT_BODY), checked and counted atomically across replicas, so a limited key costs
 *   one command before the upstream, not one per limit.
 * - Otherwise (memory mode, or Redis away: degraded): the local slot and the windows'
 *   limiters (limits/rate.ts), one after another, undoing what was taken when a later one
 *   refuses.
 */
import type { Caller } from '../auth/keys.js';
import { GatewayError } from '../errors/codes.js';
import { waitHeaders } from '../errors/wait.js';
import type { StateStore } from '../store/index.js';
import type { KeyWindow, Lease } from '../store/types.js';
import { consume, setRateHeaders, WINDOW_S, type KeyLimiters, type Limits, type WindowLimiter } from './rate.js';

/** Completion tokens reserved for a `tpm` check when the request sets no output cap. */
export const DEFAULT_COMPLETION_TOKENS = 1024;

/** The token counts a finished request is settled with (the pipeline's `Usage` has them). */
export interface SettledTokens {
  readonly input: number;
  readonly output: number;
}

/** The rpm / tpm / concurrency part of an admission: its rate headers, and `release` once at the end. */
export interface Held {
  readonly headers: Record<string, string>;
  release(usage: SettledTokens): Promise<void>;
}

/** Why a key was refused (the `reason` label of the limit-rejection metric). */
export type LimitReason = 'requests' | 'tokens' | 'concurrency';

/** What one take needs: the key, its limits and limiters, its `tpm` reservation (0 without tpm). */
export interface TakeInput {
  readonly store: StateStore;
  readonly caller: Caller;
  readonly limits: Limits;
  readonly limiters: KeyLimiters;
  readonly tokens: number;
  /** Counts the refusal and throws `err`. */
  readonly reject: (reason: LimitReason, err: GatewayError) => never;
}

type Window = Pick<KeyWindow, 'limit'> & { readonly kind: 'requests' | 'tokens' };

/** One window a take draws on: its limiter, its limit and the points this request takes. */
type KeyWindowTake = Window & Pick<KeyWindow, 'points'> & { readonly lim: WindowLimiter };

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
function keyWindows({ limits, limiters: l, tokens }: TakeInput): KeyWindowTake[] {
  const out: KeyWindowTake[] = [];
  if (l.rpm && limits.rpm) out.push({ kind: 'requests', lim: l.rpm, limit: limits.rpm, points: 1 });
  if (l.tpm && limits.tpm) out.push({ kind: 'tokens', lim: l.tpm, limit: limits.tpm, points: tokens });
  return out;
}

/** Takes the key's slot, rpm point and tpm reservation (shared when on Redis); @throws the 429 of the first refusal. */
export async function takeKeyLimits(x: TakeInput): Promise<Held> {
  return (await takeShared(x)) ?? takeLocal(x);
}

/** On Redis: every limit in one op. null when the store is not on Redis (or just left it). */
async function takeShared(x: TakeInput): Promise<Held | null> {
  const { caller, limits, limiters: l, tokens } = x;
  const name = caller.name;
  const windows: (KeyWindow & Window)[] = [];
  for (const { kind, lim, limit, points } of keyWindows(x)) {
    const key = lim.sharedKey(name);
    if (!key) return null;
    windows.push({ kind, key, limit, points, windowS: WINDOW_S });
  }
  // A key whose limits are budgets only takes nothing here (its budget is checked by budgets.ts).
  if (windows.length === 0 && !limits.max_concurrency) return { headers: {}, release: async () => {} };
  const got = await x.store.admitKey({ slot: { upstream: `key:${name}`, limit: limits.max_concurrency ?? 0 }, windows });
  if (!got) return null;
  const headers: Record<string, string> = {};
  windows.forEach((w, i) => setRateHeaders(headers, w.kind, w.limit, got.windows[i]!));
  if (got.refused === 'concurrency') x.reject('concurrency', concurrencyError(name, limits.max_concurrency ?? 0));
  if (got.refused !== null) {
    const w = windows[got.refused]!;
    x.reject(w.kind, windowError(name, w, w.points, got.windows[got.refused]!.msBeforeNext, headers));
  }
  const lease = got.lease;
  const tpm = tokens > 0 ? l.tpm : null;
  return {
    headers,
    release: async (usage) => {
      await Promise.allSettled([lease ? x.store.release(lease) : null, tpm ? tpm.settleShared(name, usage.input + usage.output - tokens) : null]);
    },
  };
}

/** Locally (memory mode, degraded): slot, then rpm, then tpm, undoing what was taken when one refuses. */
async function takeLocal(x: TakeInput): Promise<Held> {
  const { store, caller, limits, limiters: l, tokens } = x;
  const headers: Record<string, string> = {};
  const name = caller.name;
  const undo: (() => Promise<void>)[] = [];
  try {
    let lease: Lease | null = null;
    if (limits.max_concurrency) {
      const slot = await store.acquire({ upstream: `key:${name}`, limit: limits.max_concurrency, deep: false, capacity: NO_CAPACITY, calls: { start: limits.max_concurrency, min: 1, ceiling: limits.max_concurrency } });
      if (!slot.ok) x.reject('concurrency', concurrencyError(name, limits.max_concurrency));
      const held = slot.lease;
      lease = held;
      undo.push(() => store.release(held));
    }
    for (const { kind, lim, limit, points } of keyWindows(x)) {
      const r = await consume(lim, name, points);
      // The limiter counts refused points too: a refused take is given back at once, a taken
      // one if a later check refuses.
      if (!r.ok) {
        await lim.settle(name, -points).catch(() => {});
        setRateHeaders(headers, kind, limit, r.res, points);
        x.reject(kind, windowError(name, { kind, limit }, points, r.res.msBeforeNext, headers));
      }
      undo.push(() => lim.settle(name, -points));
      setRateHeaders(headers, kind, limit, r.res);
    }
    return {
      headers,
      release: async (usage) => {
        await Promise.allSettled([lease ? store.release(lease) : null, tokens > 0 && l.tpm ? l.tpm.settle(name, usage.input + usage.output - tokens) : null]);
      },
    };
  } catch (err) {
    for (const u of undo.reverse()) await u().catch(() => {});
    throw err;
  }
}

/** A key's concurrency slot is never deep: these bounds are never read. */
const NO_CAPACITY = { start: 1, min: 1, ceiling: 1 } as const;
