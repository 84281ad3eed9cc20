/**
 * `POST /v1/messages` (Anthropic Messages API) for Anthropic-SDK clients (`x-api-key`
 * carries the gateway key): passed to upstreams that speak it (the `anthropic` kind), with
 * the same auth, routing, limits, usage and cost as chat; errors in Anthropic's shape.
 */
import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { messagesApi } from '../apis/messages.js';
import { StrategySchema } from '../config/schema.js';
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

/** Registers `POST /v1/messages`; its errors (validation included) are Anthropic-shaped. */
export function registerMessages(app: FastifyInstance, deps: PipelineDeps): void {
  app.post('/v1/messages', { schema: { body: MessagesRequestSchema }, config: { api: 'messages', errorBody: messagesApi.errorBody } }, async (req, reply) => {
    await handleModelCall(messagesApi, deps, req, reply);
  });
}
