/**
 * Liveness and readiness, unauthenticated: `/healthz` says the process serves HTTP;
 * `/readyz` says it can take traffic (at least one model has a live target) and lists
 * each upstream's mode and the shared store's mode.
 */
import type { FastifyInstance } from 'fastify';
import type { GatewayConfig } from '../config/load.js';

export function registerHealth(app: FastifyInstance, config: () => GatewayConfig, storeMode: () => string): void {
  app.get('/healthz', async () => ({ status: 'ok' }));
  app.get('/readyz', async (_req, reply) => {
    const c = config();
    const ready = c.models.size > 0;
    void reply.status(ready ? 200 : 503);
    return {
      status: ready ? 'ready' : 'not_ready',
      models: c.models.size,
      // `degraded`: Redis is unreachable and limits are enforced per replica; still ready.
      store: { mode: storeMode(), degraded: storeMode() === 'degraded' },
      upstreams: c.upstreamStatus.map((u) => ({ id: u.id, provider: u.provider, mode: u.mode })),
    };
  });
}
