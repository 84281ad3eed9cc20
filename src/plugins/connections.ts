/** The client port's connection caps (server/http/connection-cap.ts), as a plugin. */
import fp from 'fastify-plugin';
import { capConnections } from '../server/http/connection-cap.js';
import type { GatewayParts } from './parts.js';

/**
 * Caps the connections of the client app's server (`server.max_connections`,
 * `max_connections_per_address`), in front of its own listeners; logs refusals at most once
 * a second. Register first.
 */
export const connections = fp<GatewayParts>(
  async (app, { config, metrics, logger }) => {
    const { max_connections: maxConnections, max_connections_per_address: maxPerAddress } = config.server;
    capConnections(
      app.server,
      () => ({ maxConnections, maxPerAddress }),
      metrics.connections,
      (refused, address) =>
        logger.warn({ refused, address }, 'connections refused: server.max_connections or max_connections_per_address reached (at most one line a second)'),
    );
  },
  { name: 'switchyard-connections' },
);
