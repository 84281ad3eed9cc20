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
 */
import { timingSafeEqual } from 'node:crypto';
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import type { Gateway } from '../gateway.js';
import { hashKey } from '../../auth/keys.js';
import { bearerToken, throttledError } from '../../auth/plugin.js';
import { ConfigError } from '../../config/load.js';
import { GatewayError } from '../../errors/codes.js';
import { useGatewayErrors } from '../../errors/reply.js';
import { AuthThrottle } from '../../limits/index.js';
import { targetRef } from '../../router/attempt.js';
import { registerSpend } from './spend.js';
import { registerConsole } from '../console/routes.js';

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

  // Like the client port: a wrong key is throttled on its own, an address only for keys that
  // never worked; the right admin key is always accepted.
  const throttle = new AuthThrottle(10);
  admin.addHook('onRequest', async (req) => {
    // The console page itself holds no data (its data endpoint needs the key).
    if (req.routeOptions.config.adminPublic === true) return;
    const key = bearerToken(req);
    if (key === undefined) throw new GatewayError('GW_ERR_INVALID_API_KEY', { message: 'Missing admin key. Send it as "Authorization: Bearer <admin key>".' });
    const digest = hashKey(key);
    const held = await throttle.keyBlocked(digest);
    if (held) throw throttledError(held);
    const expected = gw.current().config.admin.key_sha256;
    if (expected && timingSafeEqual(Buffer.from(digest, 'hex'), Buffer.from(expected, 'hex'))) {
      throttle.remember(digest);
      return;
    }
    if (gw.current().keys.authenticate(key)) {
      throw new GatewayError('GW_ERR_FORBIDDEN', { message: 'A client key cannot use the admin API; send the admin key.' });
    }
    const byAddress = throttle.wasValid(digest) ? null : await throttle.addressBlocked(req.ip);
    await throttle.failed(req.ip, digest);
    if (byAddress) throw throttledError(byAddress);
    throw new GatewayError('GW_ERR_INVALID_API_KEY', { message: 'Incorrect admin key provided.' });
  });

  admin.get('/admin/upstreams', async () => {
    const { config, router } = gw.current();
    const targets = [...config.models.values()].flatMap((m) => m.targets.map((t) => ({ model: m.name, t })));
    const views = await gw.store.view(targets.map(({ t }) => targetRef(t)));
    const now = Date.now();
    const data = targets.map(({ model, t }, i) => {
      const v = views[i]!;
      return {
        model,
        upstream: t.upstream.id,
        target: t.key,
        upstream_model: t.model,
        state: router.health.state(t.key, t.upstream.id),
        in_flight: v.inFlight,
        max_concurrency: t.upstream.max_concurrency,
        // The learned capacity for calls of every kind (max_concurrency until the account throttles).
        call_limit: v.callLimit,
        queued: router.queue.queued(t.upstream.id),
        // Deep calls in flight on the account, against its learned capacity (shared by the replicas).
        capacity: { deep_in_flight: v.deep, limit: v.limit, start: t.upstream.bounds.start, min: t.upstream.bounds.min, ceiling: t.upstream.bounds.ceiling },
        latency_ms: Math.round(router.latency.estimate(t.key)),
        // This replica's attempts to the target over the last minute (caller faults excluded).
        recent: (({ requests, errorRate }) => ({ attempts: requests, error_rate: Number(errorRate.toFixed(4)) }))(router.health.recentOutcomes(t.key)),
        // A cooldown set by any replica (shared store); `state` is this replica's circuit.
        shared_cooling_until: v.coolingUntil > now ? new Date(v.coolingUntil).toISOString() : null,
      };
    });
    return {
      object: 'list',
      store: gw.store.mode,
      upstreams: config.upstreamStatus.map((u) => ({ id: u.id, provider: u.provider, mode: u.mode })),
      data,
    };
  });

  admin.get('/admin/keys', async () => {
    const { config } = gw.current();
    const data = await Promise.all(
      config.keys.map(async (k) => ({
        name: k.name,
        models: [...k.models],
        metadata: { ...k.metadata },
        limits: k.limits ?? null,
        usage: await gw.limits.status({ name: k.name, models: k.models, ...(k.limits ? { limits: k.limits } : {}) }),
      })),
    );
    return { object: 'list', store: gw.store.mode, data };
  });

  admin.get('/admin/budgets', async () => {
    const { config } = gw.current();
    const alerts = config.budgetAlerts;
    return {
      object: 'list',
      store: gw.store.mode,
      // The webhook's host only: its path and headers may hold tokens.
      alerts: alerts ? { webhook_host: new URL(alerts.url).host, thresholds: [...alerts.thresholds] } : null,
      data: await gw.limits.budgets.status(config.budgets, config.keys),
    };
  });

  admin.post('/admin/reload', async () => {
    try {
      return gw.reload();
    } catch (err) {
      if (err instanceof ConfigError) throw new GatewayError('GW_ERR_INVALID_CONFIG', { message: err.message });
      throw err;
    }
  });

  registerSpend(admin, gw);
  registerConsole(admin, gw);
  return admin;
}
