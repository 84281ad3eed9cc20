/** The `/v1` routes, as a plugin. */
import type { FastifyInstance } from 'fastify';
import { registerChatCompletions } from '../routes/chat-completions.js';
import { registerMessages } from '../routes/messages.js';
import { registerModels } from '../routes/models.js';
import { registerPassthrough } from '../routes/passthrough.js';
import { registerResponses } from '../routes/responses.js';
import { registerResponsesStore } from '../routes/responses-store.js';
import { registerResponsesWs } from '../routes/responses-ws.js';
import { auth } from './auth.js';
import type { GatewayParts } from './parts.js';

/**
 * The model routes and the passthrough, in a scope of their own behind the client-key auth
 * hook (auth.ts). Not wrapped in fastify-plugin: the hook stays inside the scope, so the
 * probes and `/metrics` need no key.
 */
export async function modelRoutes(v1: FastifyInstance, parts: GatewayParts): Promise<void> {
  const { generations, deps, limits, sockets } = parts;
  const { live } = generations;
  await v1.register(auth, parts);
  registerModels(v1, () => live.current.config, Date.now());
  registerChatCompletions(v1, deps);
  registerPassthrough(v1, () => live.current, limits);
  registerResponses(v1, deps);
  registerResponsesWs(v1, sockets);
  registerResponsesStore(v1, deps);
  registerMessages(v1, deps);
}
