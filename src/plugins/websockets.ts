/** The Responses API's WebSocket mode (routes/responses-ws.ts), as a plugin. */
import fp from 'fastify-plugin';
import { useWebSockets } from '../routes/responses-ws.js';
import type { GatewayParts } from './parts.js';

/**
 * The upgrade handling of the client app, the hook that marks the turns (before any other
 * request hook: register it first of those), and the closing of the sockets when the
 * gateway drains or closes. The route itself is one of the model routes (model-routes.ts).
 */
export const websockets = fp<GatewayParts>(
  async (_app, { sockets }) => {
    await useWebSockets(sockets);
  },
  { name: 'switchyard-websockets' },
);
