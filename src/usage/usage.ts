/**
 * Token usage and cost, in the gateway's own terms. Each wire API's usage object is read
 * into a `Usage` by that API's module (`apis/chat.ts`, `apis/responses.ts`,
 * `apis/messages.ts`); nothing here knows a provider's field names.
 */
import type { PriceConfig } from '../config/schema.js';

export interface Usage {
  /** All prompt tokens, cached ones included. */
  input: number;
  /** The part of `input` served from the provider's prompt cache. */
  cached: number;
  /** All completion tokens, reasoning ones included. */
  output: number;
  /** The part of `output` spent on hidden reasoning. */
  reasoning: number;
  /** The part of `input` written to the provider's prompt cache, 5-minute and 1-hour (absent: none). */
  cacheWrite?: number;
  /**
   * The part of `cacheWrite` written to the 1-hour cache (Anthropic's
   * `cache_creation.ephemeral_1h_input_tokens`; absent: none, every write is a 5-minute one).
   */
  cacheWrite1h?: number;
}

export const ZERO_USAGE: Readonly<Usage> = Object.freeze({ input: 0, cached: 0, output: 0, reasoning: 0 });

/**
 * A token count: a number >= 0, rounded to a whole one; 0 when it is not one or is past
 * 2^53 (no provider counts that many, and the ledger's bigint columns refuse a fraction or
 * more than 2^63, which would make PostgreSQL refuse the whole batch of rows).
 */
export function tokenCount(v: unknown): number {
  return isCount(v) ? Math.round(v) : 0;
}

/** A number >= 0 and at most 2^53: what a token count may be (a fraction is rounded). */
const isCount = (v: unknown): v is number => typeof v === 'number' && v >= 0 && v <= Number.MAX_SAFE_INTEGER;

/**
 * Whether an upstream's usage field is not a count (present, and negative, not a number, or
 * past 2^53): a usage object with one is not believed, and the call is counted by the
 * gateway's tokenizer instead, marked estimated. A fraction is a count (rounded).
 */
export function badCount(v: unknown): boolean {
  return v !== undefined && v !== null && !isCount(v);
}

/** The cache writes of a usage by lifetime: 5-minute (and writes of unreported lifetime) and 1-hour. */
export function cacheWrites(u: Usage): { readonly m5: number; readonly h1: number } {
  const all = u.cacheWrite ?? 0;
  const h1 = Math.min(all, u.cacheWrite1h ?? 0);
  return { m5: all - h1, h1 };
}

/**
 * Cost in USD: input neither read from nor written to the cache at `price.input`, cache reads
 * at `price.cached_input`, 5-minute cache writes at `price.cache_write`, 1-hour ones at
 * `price.cache_write_1h`, output other than reasoning at `price.output`, reasoning tokens at
 * `price.reasoning` (which defaults to `output`); prices are USD per 1M tokens. Rounded to the
 * picodollar (`roundUsd`).
 */
export function costUsd(u: Usage, price: Required<PriceConfig>): number {
  const { m5, h1 } = cacheWrites(u);
  const usd =
    ((u.input - u.cached - m5 - h1) * price.input +
      u.cached * price.cached_input +
      m5 * price.cache_write +
      h1 * price.cache_write_1h +
      (u.output - u.reasoning) * price.output +
      u.reasoning * price.reasoning) /
    1_000_000;
  return roundUsd(usd);
}

/** Decimals a cost in USD keeps (a picodollar): far below a token's price, above float noise. */
const USD_DECIMALS = 12;

/**
 * A USD amount rounded to USD_DECIMALS, so every output (log line, ledger row, header, admin
 * answer) says 0.01646, not the float sum 0.016459999999999666.
 */
export function roundUsd(usd: number): number {
  return Number.isFinite(usd) ? Math.round(usd * 10 ** USD_DECIMALS) / 10 ** USD_DECIMALS : 0;
}

/** A cost as a plain decimal string for the `x-switchyard-cost-usd` header: 8 decimals, trailing zeros trimmed. */
export function formatCost(usd: number): string {
  return usd.toFixed(8).replace(/\.?0+$/, '') || '0';
}
