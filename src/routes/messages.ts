/**
 * `POST /v1/messages` (Anthropic Messages API) for Anthropic-SDK clients (`x-api-key`
 * carries the gateway key): passed to upstreams that speak it (the `anthropic` kind), with
 * the same auth, routing, limits, usage and cost as chat; errors in Anthropic's shape.
 */
import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { messagesApi } from '../apis/messages.js';
import { withoutGatewayFields } from '../apis/normalise.js';
import { StrategySchema } from '../config/schema.js';
import { allowedModel } from '../pipeline/select.js';
import type { Model } from '../config/types.js';
import type { HeldGeneration } from '../pipeline/call.js';
import { readCapped } from '../upstream/send.js';
import { countPromptTokens } from '../usage/estimate.js';
import { handleModelCall, type PipelineDeps } from '../pipeline/handle.js';

export const MessagesRequestSchema = Type.Object(
  {
    model: Type.String({ minLength: 1 }),
    messages: Type.Array(Type.Object({ role: Type.String({ minLength: 1 }) }, { additionalProperties: true }), { minItems: 1 }),
    max_tokens: Type.Optional(Type.Integer({ minimum: 1 })),
    stream: Type.Optional(Type.Boolean()),
    /** Gateway-only: per-request routing strategy. */
    cluster_routing: Type.Optional(StrategySchema),
  },
  { additionalProperties: true },
);

export const CountTokensSchema = Type.Object(
  {
    model: Type.String({ minLength: 1 }),
    messages: Type.Array(Type.Object({ role: Type.String({ minLength: 1 }) }, { additionalProperties: true }), { minItems: 1 }),
  },
  { additionalProperties: true },
);

/**
 * The count from the first target of `model` whose vendor counts tokens (an Anthropic
 * account), sent with that target's model id; null when none does or its answer is not a count
 * (the caller estimates instead).
 */
async function vendorCount(gen: HeldGeneration, model: Model, body: Record<string, unknown>, requestId: string, beta: string | string[] | undefined): Promise<{ input_tokens: number } | null> {
  for (const t of model.targets) {
    const provider = gen.providers.get(t.upstream.id);
    if (!provider?.countTokens) continue;
    try {
      const res = await provider.countTokens({ ...withoutGatewayFields(body), model: t.model }, typeof beta === 'string' ? { 'anthropic-beta': beta } : {}, requestId, AbortSignal.timeout(t.upstream.timeouts.first_byte_ms));
      const { buf } = await readCapped(res.body, 64 * 1024);
      const parsed = res.statusCode === 200 ? (JSON.parse(buf.toString('utf8')) as { input_tokens?: unknown }) : null;
      if (parsed && typeof parsed.input_tokens === 'number') return { input_tokens: parsed.input_tokens };
    } catch {
      // unreachable or unreadable: the next target, else the estimate
    }
  }
  return null;
}

/**
 * Registers `POST /v1/messages` and `POST /v1/messages/count_tokens`; their errors
 * (validation included) are Anthropic-shaped. count_tokens answers Anthropic's shape
 * (`{"input_tokens": n}`; Anthropic API reference, "Count tokens in a message"): from an
 * Anthropic account of the model when it has one, else from the gateway's tokenizer estimate
 * (usage/estimate.ts), marked `x-switchyard-estimated: true` (the model's own tokenizer may
 * differ by a few percent). The model must be one the key may use.
 */
export function registerMessages(app: FastifyInstance, deps: PipelineDeps): void {
  const config = { api: 'messages', errorBody: messagesApi.errorBody };
  app.post('/v1/messages', { schema: { body: MessagesRequestSchema }, config }, async (req, reply) => {
    await handleModelCall(messagesApi, deps, req, reply);
  });
  app.post<{ Body: Record<string, unknown> & { model: string } }>('/v1/messages/count_tokens', { schema: { body: CountTokensSchema }, config }, async (req, reply) => {
    const gen = deps.hold();
    try {
      const model = allowedModel(gen.config, req, req.body.model);
      const counted = await vendorCount(gen, model, req.body, req.id, req.headers['anthropic-beta']);
      if (counted) return counted;
      const tools = Array.isArray(req.body['tools']) ? [{ role: 'system', content: JSON.stringify(req.body['tools']) }] : [];
      const input = await countPromptTokens([...tools, ...(messagesApi.promptMessages(req.body) as unknown[])]);
      void reply.header('x-switchyard-estimated', 'true');
      return { input_tokens: input };
    } finally {
      gen.release();
    }
  });
}
