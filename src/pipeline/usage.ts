/**
 * Token usage and cost. Usage is read from OpenAI's `usage` object
 * (`prompt_tokens`, `prompt_tokens_details.cached_tokens`, `completion_tokens`,
 * `completion_tokens_details.reasoning_tokens`; OpenAI API reference, "The chat completion
 * object"). DeepSeek fills the same fields and also `prompt_cache_hit_tokens`
 * (DeepSeek API docs, "Context caching"), used when `cached_tokens` is absent. Prompt-cache
 * writes come as `cache_creation_input_tokens` (Anthropic's name, which the `anthropic`
 * provider's translation keeps in the chat usage object).
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

/** A token count: a finite number >= 0, else 0. */
export function tokenCount(v: unknown): number {
  return typeof v === 'number' && Number.isFinite(v) && v >= 0 ? v : 0;
}

/** Reads an OpenAI-shaped `usage` object; null when there is none. */
export function readUsage(usage: unknown): Usage | null {
  if (!usage || typeof usage !== 'object') return null;
  const u = usage as Record<string, unknown>;
  const pd = (u['prompt_tokens_details'] ?? {}) as Record<string, unknown>;
  const cd = (u['completion_tokens_details'] ?? {}) as Record<string, unknown>;
  const input = tokenCount(u['prompt_tokens']);
  const cached = Math.min(input, tokenCount(pd['cached_tokens']) || tokenCount(u['prompt_cache_hit_tokens']));
  const output = tokenCount(u['completion_tokens']);
  const out: Usage = { input, cached, output, reasoning: Math.min(output, tokenCount(cd['reasoning_tokens'])) };
  const written = Math.min(input - cached, tokenCount(u['cache_creation_input_tokens']));
  if (written > 0) out.cacheWrite = written;
  return out;
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
