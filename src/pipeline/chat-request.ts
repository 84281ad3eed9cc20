/**
 * The accepted shape of `POST /v1/chat/completions` bodies (a subset of
 * `CreateChatCompletionRequest` in OpenAI's OpenAPI spec: the fields the gateway reads or
 * that clients most often get wrong). Unknown fields pass through to the upstream.
 */
import { Type, type Static, type TSchema } from '@sinclair/typebox';
import { RequestEffortSchema, StrategySchema } from '../config/schema.js';

const Nullable = <T extends TSchema>(t: T) => Type.Union([t, Type.Null()]);

export const ChatRequestSchema = Type.Object(
  {
    model: Type.String({ minLength: 1 }),
    messages: Type.Array(Type.Object({ role: Type.String({ minLength: 1 }) }, { additionalProperties: true }), { minItems: 1 }),
    stream: Type.Optional(Type.Union([Type.Boolean(), Type.Null()])),
    stream_options: Type.Optional(Type.Union([Type.Object({ include_usage: Type.Optional(Type.Boolean()) }, { additionalProperties: true }), Type.Null()])),
    temperature: Type.Optional(Nullable(Type.Number({ minimum: 0, maximum: 2 }))),
    top_p: Type.Optional(Nullable(Type.Number({ minimum: 0, maximum: 1 }))),
    n: Type.Optional(Nullable(Type.Integer({ minimum: 1, maximum: 128 }))),
    max_tokens: Type.Optional(Nullable(Type.Integer({ minimum: 1 }))),
    max_completion_tokens: Type.Optional(Nullable(Type.Integer({ minimum: 1 }))),
    tools: Type.Optional(Type.Array(Type.Object({ type: Type.String() }, { additionalProperties: true }))),
    user: Type.Optional(Type.String()),
    reasoning_effort: Type.Optional(RequestEffortSchema),
    /** Gateway-only: per-request routing strategy. */
    cluster_routing: Type.Optional(StrategySchema),
    prompt_cache_key: Type.Optional(Type.String()),
  },
  { additionalProperties: true },
);

export type ChatRequest = Static<typeof ChatRequestSchema> & Record<string, unknown>;
