/**
 * Translation options of chat -> messages, read from the upstream's `options:` block
 * (the `anthropic` kind's schema includes these fields, defaults applied at config load).
 *
 * Outside facts (Anthropic API reference, "Messages" and "Extended thinking"):
 * - `max_tokens` is required on every Messages request (OpenAI makes it optional);
 * - `thinking.budget_tokens` must be >= 1024 and < `max_tokens`.
 */
import { Type, type Static } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { DEFAULT_THINKING_BUDGETS as D, MIN_THINKING_BUDGET } from '../../apis/effort.js';

const Budget = (def: number) => Type.Integer({ minimum: MIN_THINKING_BUDGET, default: def });

/**
 * Token budgets of extended thinking per OpenAI `reasoning_effort` value (tokens, each
 * >= 1024; defaults from the effort table, apis/effort.ts). `none` (or no `reasoning_effort`)
 * sends no `thinking` at all.
 */
export const ThinkingBudgetsSchema = Type.Object(
  {
    minimal: Budget(D.minimal),
    low: Budget(D.low),
    medium: Budget(D.medium),
    high: Budget(D.high),
    xhigh: Budget(D.xhigh),
  },
  { additionalProperties: false, default: {} },
);

/** The translation fields of an upstream's `options:` (a kind's schema spreads these properties into its own). */
export const MessagesTranslationProperties = {
  /**
   * `max_tokens` sent when a chat request gives neither `max_completion_tokens` nor
   * `max_tokens` (tokens); also the room left for the answer when a thinking budget
   * forces `max_tokens` up to `budget + default_max_tokens`.
   */
  default_max_tokens: Type.Integer({ minimum: 1, default: 4096 }),
  /** `reasoning_effort` -> `thinking.budget_tokens`. */
  thinking_budgets: ThinkingBudgetsSchema,
};

const Schema = Type.Object(MessagesTranslationProperties, { additionalProperties: true, default: {} });

/** The options after defaults: every field present. */
export type MessagesTranslationOptions = Static<typeof Schema>;

const resolved = new WeakMap<object, MessagesTranslationOptions>();

/**
 * The translation options of an upstream's (already validated) `options`, defaults filled
 * in for any field missing; cached per options object, so a request pays nothing.
 */
export function translationOptions(options: Readonly<Record<string, unknown>>): MessagesTranslationOptions {
  let out = resolved.get(options);
  if (!out) {
    out = Value.Default(Schema, structuredClone(options)) as MessagesTranslationOptions;
    resolved.set(options, out);
  }
  return out;
}
