/** `POST /v1/chat/completions`: schema-checked body, then the pipeline. */
import type { FastifyInstance } from 'fastify';
import { ChatRequestSchema } from '../pipeline/chat-request.js';
import { handleChatCompletion, type PipelineDeps } from '../pipeline/handle.js';

export function registerChatCompletions(app: FastifyInstance, deps: PipelineDeps): void {
  app.post('/v1/chat/completions', { schema: { body: ChatRequestSchema } }, async (req, reply) => {
    await handleChatCompletion(deps, req, reply);
  });
}
