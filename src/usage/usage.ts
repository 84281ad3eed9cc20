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
  /** The part of `input` written to the provider's prompt cache (absent: none). */
  cacheWrite?: number;
}

export const ZERO_USAGE: Readonly<Usage> = Object.freeze({ input: 0, cached: 0, output: 0, reasoning: 0 });

/**
 * A token count: a number >= 0, rounded to a whole one; 0 when it is not one or is past
 * 2^53 (no provider counts that many, and the ledger's bigint columns refuse a fraction or
 * more than 2^63, which would make PostgreSQL refuse the whole batch of rows).
 */
export function tokenCount(v: unknown): number {
  return typeof v === 'number' && v >= 0 && v <= Number.MAX_SAFE_INTEGER ? Math.round(v) : 0;
}

/**
 * Cost in USD: input neither read from nor written to the cache at `price.input`, cached
 * input at `price.cached_input`, cache writes at `price.cache_write`, output other than
 * reasoning at `price.output`, reasoning tokens at `price.reasoning` (which defaults to
 * `output`); prices are USD per 1M tokens.
 */
export function costUsd(u: Usage, price: Required<PriceConfig>): number {
  const written = u.cacheWrite ?? 0;
  return (
    ((u.input - u.cached - written) * price.input +
      u.cached * price.cached_input +
      written * price.cache_write +
      (u.output - u.reasoning) * price.output +
      u.reasoning * price.reasoning) /
    1_000_000
  );
}

/** A cost as a plain decimal string for the `x-switchyard-cost-usd` header: 8 decimals, trailing zeros trimmed. */
export function formatCost(usd: number): string {
  return usd.toFixed(8).replace(/\.?0+$/, '') || '0';
}
