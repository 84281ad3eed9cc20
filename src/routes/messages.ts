/**
 * `POST /v1/messages` (Anthropic Messages API) for Anthropic-SDK clients (`x-api-key`
 * carries the gateway key): passed to upstreams that speak it (the `anthropic` kind), with
 * the same auth, routing, limits, usage and cost as chat; errors in Anthropic's shape.
 */
import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { messagesApi } from '../apis/messages.js';
import { mayUse } from '../auth/keys.js';
import { modelNamed } from '../config/aliases.js';
import { StrategySchema } from '../config/schema.js';
import { GatewayError } from '../errors/codes.js';
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
 * Registers `POST /v1/messages` and `POST /v1/messages/count_tokens`; their errors
 * (validation included) are Anthropic-shaped. count_tokens answers Anthropic's shape
 * (`{"input_tokens": n}`; Anthropic API reference, "Count tokens in a message") from the
 * gateway's tokenizer estimate (usage/estimate.ts), marked `x-switchyard-estimated: true`:
 * the count is for budgeting a prompt, and the model's own tokenizer may differ by a few
 * percent. The model must be one the key may use.
 */
export function registerMessages(app: FastifyInstance, deps: PipelineDeps): void {
  const config = { api: 'messages', errorBody: messagesApi.errorBody };
  app.post('/v1/messages', { schema: { body: MessagesRequestSchema }, config }, async (req, reply) => {
    await handleModelCall(messagesApi, deps, req, reply);
  });
  app.post<{ Body: Record<string, unknown> & { model: string } }>('/v1/messages/count_tokens', { schema: { body: CountTokensSchema }, config }, async (req, reply) => {
    const gen = deps.hold();
    try {
      const model = modelNamed(gen.config, req.body.model);
      if (!model || !req.caller || !mayUse(req.caller, model.name)) {
        throw new GatewayError('GW_ERR_MODEL_NOT_FOUND', { message: `The model \`${req.body.model.slice(0, 256)}\` does not exist or you do not have access to it.`, param: 'model' });
      }
      const tools = Array.isArray(req.body['tools']) ? [{ role: 'system', content: JSON.stringify(req.body['tools']) }] : [];
      const input = await countPromptTokens([...tools, ...(messagesApi.promptMessages(req.body) as unknown[])]);
      void reply.header('x-switchyard-estimated', 'true');
      return { input_tokens: input };
    } finally {
      gen.release();
    }
  });
}
