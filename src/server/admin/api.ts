/**
 * The admin API, on its own listener (config `admin:`, default 127.0.0.1:9901), never on
 * the client port. Every route needs `Authorization: Bearer <admin key>`, compared by
 * SHA-256 in constant time against `admin.key_sha256` of the current config: no key or a
 * wrong one is 401, a valid client key is 403; 10 wrong keys from one address within a
 * minute get 429 until the minute is over.
 *
 *   GET  /admin/upstreams   every target: state, in-flight, window occupancy, latency estimate
 *   GET  /admin/keys        every client key by name with its allowed models, metadata, limits,
 *                           spend in the current period, remaining budget and current rate
 *                           usage (never the key or hash)
 *   GET  /admin/budgets     every budget (tag, account and key budgets): scope, period, amount,
 *                           spent, remaining and when it resets, across replicas
 *   POST /admin/reload      re-reads the config file; 200 with a summary, or 400 with the error
 *   GET  /admin/spend       spend, requests and tokens from the ledger per period and group (spend.ts)
 *   GET  /admin/console.json, and GET /console and /console/spend (the pages, the only
 *                           routes without the key): the built-in console, see server/console/routes.ts
 *
 * The app is built from plugins: the key check (auth.ts), then the routes (routes.ts,
 * spend.ts, console/routes.ts).
 */
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import { useGatewayErrors } from '../../errors/reply.js';
import { consoleRoutes } from '../console/routes.js';
import type { Gateway } from '../gateway.js';
import { adminAuth } from './auth.js';
import { adminRoutes } from './routes.js';
import { spendRoutes } from './spend.js';

export interface AdminOptions {
  /** Defaults to the gateway's logger. */
  readonly logger?: FastifyBaseLogger;
}

/** Builds the admin app for a gateway; does not listen. */
export async function buildAdmin(gw: Gateway, opts: AdminOptions = {}): Promise<FastifyInstance> {
  const admin = Fastify({
    loggerInstance: (opts.logger ?? gw.logger) as FastifyBaseLogger,
    logController: new LogController({ disableRequestLogging: true, requestIdLogLabel: 'request_id' }),
    bodyLimit: 64 * 1024,
  });

  useGatewayErrors(admin, 'admin request failed');
  // POST /admin/reload takes no body; accept (and ignore) any content type.
  admin.removeAllContentTypeParsers();
  admin.addContentTypeParser('*', { parseAs: 'buffer' }, (_req, _body, done) => done(null, undefined));

  // The key check first (auth.ts), then the routes it guards.
  await admin.register(adminAuth, { gw });
  await admin.register(adminRoutes, { gw });
  await admin.register(spendRoutes, { gw });
  await admin.register(consoleRoutes, { gw });
  return admin;
}
