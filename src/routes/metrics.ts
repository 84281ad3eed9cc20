/** `GET /metrics`: Prometheus text exposition of the app's registry. */
import type { FastifyInstance } from 'fastify';
import type { Metrics } from '../metrics/registry.js';

export function registerMetrics(app: FastifyInstance, metrics: Metrics): void {
  app.get('/metrics', async (_req, reply) => {
    void reply.type(metrics.registry.contentType);
    return metrics.registry.metrics();
  });
}
