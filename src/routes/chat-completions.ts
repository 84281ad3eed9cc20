/** `POST /v1/chat/completions`: schema-checked body, then the pipeline. */
import type { FastifyInstance } from 'fastify';
import { chatApi } from '../apis/chat.js';
import { ChatRequestSchema } from '../pipeline/chat-request.js';
import { handleModelCall, type PipelineDeps } from '../pipeline/handle.js';

/** Registers `POST /v1/chat/completions`; its errors are OpenAI-shaped. */
export function registerChatCompletions(app: FastifyInstance, deps: PipelineDeps): void {
  app.post(
    '/v1/chat/completions',
    { schema: { body: ChatRequestSchema }, config: { api: 'chat', decodesBody: true, errorBody: chatApi.errorBody } },
    async (req, reply) => {
      await handleModelCall(chatApi, deps, req, reply);
    },
  );
}
