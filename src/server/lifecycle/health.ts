/**
 * Liveness and readiness, unauthenticated: `/healthz` says the process serves HTTP;
 * `/readyz` says it can take traffic (at least one model has a live target, and the
 * gateway is not shutting down, and the ledger, when configured, is not refused by
 * PostgreSQL) and lists each upstream's mode, the shared store's mode and the ledger's
 * state, backlog and problem.
 */
import type { FastifyInstance } from 'fastify';
import type { GatewayConfig } from '../../config/types.js';
import type { LedgerStatus } from '../../ledger/index.js';

/**
 * Registers `GET /healthz` and `GET /readyz`.
 * @param draining true once a shutdown started: `/readyz` answers 503 `shutting_down` at
 *        once, so the load balancer stops sending while requests in flight finish.
 */
export function registerHealth(
  app: FastifyInstance,
  config: () => GatewayConfig,
  storeMode: () => string,
  draining: () => boolean = () => false,
  ledger: () => LedgerStatus | null = () => null,
): void {
  app.get('/healthz', async () => ({ status: 'ok' }));
  app.get('/readyz', async (_req, reply) => {
    const c = config();
    const shuttingDown = draining();
    const led = ledger();
    // `misconfigured`: PostgreSQL refuses the gateway (no such database or role, a wrong
    // password, no privilege); rows are kept in the spool, but no one is fixing it by waiting.
    const ready = c.models.size > 0 && !shuttingDown && led?.state !== 'misconfigured';
    void reply.status(ready ? 200 : 503);
    return {
      status: shuttingDown ? 'shutting_down' : ready ? 'ready' : 'not_ready',
      models: c.models.size,
      // `degraded`: Redis is unreachable and limits are enforced per replica; still ready.
      store: { mode: storeMode(), degraded: storeMode() === 'degraded' },
      upstreams: c.upstreamStatus.map((u) => ({ id: u.id, provider: u.provider, mode: u.mode })),
      // `spooling`: PostgreSQL is unreachable, rows wait in the local spool; still ready.
      ...(led ? { ledger: { state: led.state, backlog_rows: led.backlogRows, ...(led.problem ? { problem: led.problem } : {}) } } : {}),
    };
  });
}
