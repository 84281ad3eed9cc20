/**
 * The `options:` block of an `anthropic` upstream. Every field has a default, so an
 * upstream with no `options:` at all works against api.anthropic.com.
 *
 * Outside facts (Anthropic API reference, "Messages" and "Extended thinking"):
 * - `anthropic-version` is a required request header; `2023-06-01` is the current version.
 * - `max_tokens` is required on every Messages request (OpenAI makes it optional).
 * - `thinking.budget_tokens` must be >= 1024 and < `max_tokens`.
 */
import { Type, type Static } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';

/** Smallest `thinking.budget_tokens` Anthropic accepts (tokens). */
export const MIN_THINKING_BUDGET = 1024;

const Budget = (def: number) => Type.Integer({ minimum: MIN_THINKING_BUDGET, default: def });

/**
 * Token budgets of extended thinking per OpenAI `reasoning_effort` value (tokens, each
 * >= 1024). `none` (or no `reasoning_effort`) sends no `thinking` at all.
 */
export const ThinkingBudgetsSchema = Type.Object(
  {
    minimal: Budget(1024),
    low: Budget(2048),
    medium: Budget(8192),
    high: Budget(16384),
    xhigh: Budget(32000),
  },
  { additionalProperties: false, default: {} },
);

/** Schema of an `anthropic` upstream's `options:` block (defaults applied at config load). */
export const AnthropicOptionsSchema = Type.Object(
  {
    /** Value of the `anthropic-version` request header. */
    anthropic_version: Type.String({ minLength: 1, default: '2023-06-01' }),
    /**
     * `max_tokens` sent when a chat request gives neither `max_completion_tokens` nor
     * `max_tokens` (tokens); also the room left for the answer when a thinking budget
     * forces `max_tokens` up to `budget + default_max_tokens`.
     */
    default_max_tokens: Type.Integer({ minimum: 1, default: 4096 }),
    /** `reasoning_effort` -> `thinking.budget_tokens`. */
    thinking_budgets: ThinkingBudgetsSchema,
  },
  { additionalProperties: false, default: {} },
);

/** The options after defaults: every field present. */
export type AnthropicOptions = Static<typeof AnthropicOptionsSchema>;

/**
 * Applies the schema's defaults to a raw `options` value (which the config loader may have
 * done already; doing it again is harmless) and checks it.
 * @param raw `upstream.options`, possibly undefined.
 * @throws Error naming the first invalid field.
 */
export function resolveAnthropicOptions(raw: unknown): AnthropicOptions {
  const value = Value.Default(AnthropicOptionsSchema, raw === undefined || raw === null ? {} : structuredClone(raw));
  if (!Value.Check(AnthropicOptionsSchema, value)) {
    const first = Value.Errors(AnthropicOptionsSchema, value).First();
    throw new Error(`invalid anthropic options${first ? ` at ${first.path || '/'}: ${first.message}` : ''}`);
  }
  return value;
}
