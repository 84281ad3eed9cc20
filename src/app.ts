/**
 * Builds the gateway: the client app, its stateful parts (plugins/parts.ts) and the plugins
 * that give it its hooks, routes and closing (plugins/). Does not listen.
 */
import Fastify from 'fastify';
import type { GatewayConfig } from './config/types.js';
import { clientAppOptions } from './plugins/app-options.js';
import { bodies } from './plugins/bodies.js';
import { budgetAlerts } from './plugins/budget-alerts.js';
import { connections } from './plugins/connections.js';
import { drain } from './plugins/drain.js';
import { errors } from './plugins/errors.js';
import { health } from './plugins/health.js';
import { idleMemory } from './plugins/idle-memory.js';
import { metrics } from './plugins/metrics.js';
import { modelRoutes } from './plugins/model-routes.js';
import { gatewayOf, openParts } from './plugins/parts.js';
import { requests } from './plugins/requests.js';
import { resources } from './plugins/resources.js';
import { websockets } from './plugins/websockets.js';
import type { BuildOptions, Gateway } from './server/gateway.js';
import { createLogger } from './server/logger.js';

export type { BuildOptions, Gateway, ReloadSummary } from './server/gateway.js';

/**
 * Creates the Fastify app for a validated config.
 * @throws Error when a provider cannot be created (unknown kind, unreadable recordings).
 */
export async function buildApp(config: GatewayConfig, opts: BuildOptions = {}): Promise<Gateway> {
  const logger = opts.logger ?? createLogger(config.server.log_level, opts.logStream);
  const app = Fastify(clientAppOptions(config, logger));
  const parts = await openParts(app, config, opts, logger);
  // Fastify runs the hooks of a kind in the order they were added: this order is the
  // requests' path (a WebSocket turn is marked first; the drain refuses before the /v1
  // auth hook; bodies are decoded, then metered by the body guard).
  await app.register(connections, parts);
  await app.register(websockets, parts);
  await app.register(requests, parts);
  await app.register(drain, parts);
  await app.register(bodies, parts);
  await app.register(errors);
  await app.register(health, parts);
  await app.register(metrics, parts);
  await app.register(modelRoutes, parts);
  // `onClose` hooks run last added first, after the drain and the listener's close: the
  // idle-memory watch stops, then the alerts in flight end, then the providers, store,
  // ledger and tracer close together, then what the /v1 routes opened (the passthrough's).
  await app.register(resources, parts);
  await app.register(budgetAlerts, parts);
  await app.register(idleMemory, parts);
  return gatewayOf(app, parts);
}
