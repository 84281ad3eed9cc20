/**
 * The `options:` block of an `anthropic` upstream. Every field has a default, so an
 * upstream with no `options:` at all works against api.anthropic.com.
 * - `anthropic_version`: the `anthropic-version` request header, required by the API
 *   (Anthropic API reference, "Versions": `2023-06-01` is the current version);
 * - `default_max_tokens`, `thinking_budgets`: how chat requests are translated to Messages
 *   (`translate/chat-messages/options.ts`).
 */
import { Type, type Static } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { MessagesTranslationProperties } from '../../translate/chat-messages/options.js';

/** Schema of an `anthropic` upstream's `options:` block (defaults applied at config load). */
export const AnthropicOptionsSchema = Type.Object(
  {
    /** Value of the `anthropic-version` request header. */
    anthropic_version: Type.String({ minLength: 1, default: '2023-06-01' }),
    ...MessagesTranslationProperties,
  },
  { additionalProperties: false, default: {} },
);

/** The options after defaults: every field present. */
export type AnthropicOptions = Static<typeof AnthropicOptionsSchema>;

/**
 * Applies the schema's defaults to a raw `options` value (the config loader does this
 * already; doing it again is harmless) and checks it.
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
