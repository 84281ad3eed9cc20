/**
 * `GET /metrics`: Prometheus text exposition of the app's registry, or, in a worker of
 * `server.workers`, of every worker's registry summed by the primary (server/cluster/metrics.ts).
 */
import type { FastifyInstance } from 'fastify';
import type { Metrics } from '../metrics/registry.js';

/**
 * Registers `GET /metrics`.
 * @param text the body when it is not this registry's own (workers: the process group's);
 *        when it rejects, the scrape gets 503 with the reason, never a partial sum.
 */
export function registerMetrics(app: FastifyInstance, metrics: Metrics, text?: () => Promise<string>): void {
  app.get('/metrics', async (_req, reply) => {
    void reply.type(metrics.registry.contentType);
    if (!text) return metrics.registry.metrics();
    try {
      return await text();
    } catch (err) {
      void reply.status(503).type('text/plain; charset=utf-8');
      return `metrics of the worker processes unavailable: ${(err as Error).message}\n`;
    }
  });
}
