/**
 * The accepted shape of `POST /v1/chat/completions` bodies (a subset of
 * `CreateChatCompletionRequest` in OpenAI's OpenAPI spec: the fields the gateway reads or
 * that clients most often get wrong). Unknown fields pass through to the upstream.
 */
import { Type, type Static, type TSchema } from '@sinclair/typebox';
import { StrategySchema } from '../config/schema.js';

const Nullable = <T extends TSchema>(t: T) => Type.Union([t, Type.Null()]);

export const ChatRequestSchema = Type.Object(
  {
    model: Type.String({ minLength: 1 }),
    messages: Type.Array(Type.Object({ role: Type.String({ minLength: 1 }) }, { additionalProperties: true }), { minItems: 1 }),
    stream: Type.Optional(Type.Union([Type.Boolean(), Type.Null()])),
    stream_options: Type.Optional(
      Type.Union([Type.Object({ include_usage: Type.Optional(Type.Boolean()) }, { additionalProperties: true }), Type.Null()]),
    ),
    temperature: Type.Optional(Nullable(Type.Number({ minimum: 0, maximum: 2 }))),
    top_p: Type.Optional(Nullable(Type.Number({ minimum: 0, maximum: 1 }))),
    n: Type.Optional(Nullable(Type.Integer({ minimum: 1, maximum: 128 }))),
    max_tokens: Type.Optional(Nullable(Type.Integer({ minimum: 1 }))),
    max_completion_tokens: Type.Optional(Nullable(Type.Integer({ minimum: 1 }))),
    tools: Type.Optional(Type.Array(Type.Object({ type: Type.String() }, { additionalProperties: true }))),
    user: Type.Optional(Type.String()),
    reasoning_effort: Type.Optional(Nullable(Type.String())),
    /** Gateway-only: per-request routing strategy. */
    cluster_routing: Type.Optional(StrategySchema),
    prompt_cache_key: Type.Optional(Type.String()),
  },
  { additionalProperties: true },
);

export type ChatRequest = Static<typeof ChatRequestSchema> & Record<string, unknown>;

/** Body fields meant for the gateway only; never sent upstream. */
export const GATEWAY_FIELDS = ['cluster_routing', 'switchyard'] as const;

/**
 * The JSON body sent to one target: the client's body with `model` replaced by the
 * target's upstream model id, gateway fields removed (and `reasoning_effort` for models
 * not marked `reasoning`), and, for streams, usage always
 * requested (`stream_options.include_usage: true`) so cost is never unknown.
 */
export function upstreamBody(body: ChatRequest, upstreamModel: string, reasoning: boolean): string {
  const out: Record<string, unknown> = { ...body, model: upstreamModel };
  for (const f of GATEWAY_FIELDS) delete out[f];
  // A call shed or fallen back to a non-reasoning model must not carry reasoning_effort:
  // OpenAI's non-reasoning models reject it with 400.
  if (!reasoning) delete out['reasoning_effort'];
  if (body.stream === true) out['stream_options'] = { ...(body.stream_options ?? {}), include_usage: true };
  return JSON.stringify(out);
}
