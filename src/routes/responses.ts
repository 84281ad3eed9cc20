/**
 * `POST /v1/responses` (OpenAI Responses API, as Codex-style agents speak it): the fields
 * the gateway reads are checked (`model`, `input`, `stream`); the rest passes to upstreams
 * that serve the API, with the same auth, routing, limits, usage and cost as chat.
 */
import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { responsesApi } from '../apis/responses.js';
import { RequestEffortSchema, StrategySchema } from '../config/schema.js';
import { handleModelCall, type PipelineDeps } from '../pipeline/handle.js';

export const ResponsesRequestSchema = Type.Object(
  {
    model: Type.String({ minLength: 1 }),
    input: Type.Optional(Type.Union([Type.String(), Type.Array(Type.Unknown())])),
    stream: Type.Optional(Type.Union([Type.Boolean(), Type.Null()])),
    max_output_tokens: Type.Optional(Type.Union([Type.Integer({ minimum: 1 }), Type.Null()])),
    previous_response_id: Type.Optional(Type.Union([Type.String({ minLength: 1, maxLength: 512 }), Type.Null()])),
    reasoning: Type.Optional(Type.Union([Type.Object({ effort: Type.Optional(RequestEffortSchema) }, { additionalProperties: true }), Type.Null()])),
    /** A string, as on chat (it names the session: pipeline/session.ts). */
    prompt_cache_key: Type.Optional(Type.Union([Type.String(), Type.Null()])),
    /** Gateway-only: per-request routing strategy. */
    cluster_routing: Type.Optional(StrategySchema),
  },
  { additionalProperties: true },
);

/** Registers `POST /v1/responses`; its JSON errors are OpenAI-shaped, as the API's own are. */
export function registerResponses(app: FastifyInstance, deps: PipelineDeps): void {
  app.post(
    '/v1/responses',
    { schema: { body: ResponsesRequestSchema }, config: { api: 'responses', decodesBody: true, errorBody: responsesApi.errorBody } },
    async (req, reply) => {
      await handleModelCall(responsesApi, deps, req, reply);
    },
  );
}
