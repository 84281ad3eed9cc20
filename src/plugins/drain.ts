/** Graceful shutdown on the client app (server/lifecycle/drain.ts), as a plugin. */
import fp from 'fastify-plugin';
import type { GatewayParts } from './parts.js';

/**
 * Hooks the drain into the client app: while draining, new requests get 503 shutting_down
 * and answers ask for `Connection: close`; a plain `app.close()` drains too. Register it
 * before the `/v1` routes' auth hook.
 */
export const drain = fp<GatewayParts>(
  async (app, parts) => {
    parts.drain.attach(app);
  },
  { name: 'switchyard-drain' },
);
