/** What `/metrics` reports, as a plugin. */
import fp from 'fastify-plugin';
import { registerMetrics } from '../routes/metrics.js';
import type { GatewayParts } from './parts.js';

/**
 * Gives the metrics registry what its gauges read at scrape time (the store's mode, each
 * account's capacity, each target's state, the queues, the budgets, the ledger's backlog),
 * and registers `GET /metrics`: this registry, or in a worker of `server.workers` the sum of
 * every worker's (server/cluster/metrics.ts).
 */
export const metrics = fp<GatewayParts>(
  async (app, { metrics: m, store, generations, limits, ledger, worker }) => {
    const { live } = generations;
    m.sources.storeMode = () => store.mode;
    m.sources.capacities = async () => {
      const ups = [...live.current.config.upstreams.values()];
      const views = await store.view(ups.map((u) => ({ key: `${u.id}/`, upstream: u.id, capacity: u.bounds, calls: u.callBounds })));
      return ups.map((u, i) => ({ upstream: u.id, deep: views[i]!.deep, limit: views[i]!.limit, callLimit: views[i]!.callLimit }));
    };
    m.sources.targets = () => {
      const { config: c, router } = live.current;
      return [...c.models.values()].flatMap((model) =>
        model.targets.map((t) => ({ target: t.key, upstream: t.upstream.id, state: router.health.state(t.key, t.upstream.id) })),
      );
    };
    m.sources.queues = () => {
      const { config: c, router } = live.current;
      return [...c.upstreams.keys()].map((id) => ({ upstream: id, depth: router.queue.queued(id) }));
    };
    m.sources.budgets = async () => {
      const { config: c } = live.current;
      return (await limits.budgets.status(c.budgets, c.keys)).map((b) => ({ budget: b.name, spentUsd: b.spent_usd, amountUsd: b.amount_usd }));
    };
    if (ledger) m.sources.ledgerBacklog = () => ledger.status.backlogRows;
    registerMetrics(app, m, worker ? () => worker.metricsText() : undefined);
  },
  { name: 'switchyard-metrics' },
);
