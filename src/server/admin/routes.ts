/**
 * The admin API's own routes (the spend report is spend.ts, the console console/routes.ts):
 *
 *   GET  /admin/upstreams   every target: state, in-flight, window occupancy, latency estimate,
 *                           learned timing (stall threshold, typical deep call)
 *   GET  /admin/keys        every client key by name with its allowed models, metadata, limits,
 *                           spend in the current period, remaining budget and current rate
 *                           usage (never the key or hash)
 *   GET  /admin/budgets     every budget (tag, account and key budgets): scope, period, amount,
 *                           spent, remaining and when it resets, across replicas
 *   POST /admin/reload      re-reads the config file; 200 with a summary, or 400 with the error
 */
import fp from 'fastify-plugin';
import { ConfigError } from '../../config/load.js';
import { GatewayError } from '../../errors/codes.js';
import { targetRef } from '../../router/attempt.js';
import type { AdminPluginOptions } from '../gateway.js';

/** Registers the routes above on the admin app (its key check guards them: auth.ts). */
export const adminRoutes = fp<AdminPluginOptions>(
  async (admin, { gw }) => {
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
          // Learned timing (this replica's own, else the fleet's: router/fleet-timings.ts), ms; null: not known yet.
          // A deep call with no first event by `stall_after_ms` counts as a stall; `typical_deep_ms`: a served deep call of the model, send to last byte.
          stall_after_ms: router.stalls.thresholdMs(t.upstream.id),
          typical_deep_ms: ((ms) => (ms === null ? null : Math.round(ms)))(router.deepTimes.typicalMs(model)),
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
  },
  { name: 'switchyard-admin-routes' },
);
