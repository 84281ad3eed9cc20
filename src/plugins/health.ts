/** Liveness and readiness (server/lifecycle/health.ts), as a plugin. */
import fp from 'fastify-plugin';
import { registerHealth } from '../server/lifecycle/health.js';
import type { GatewayParts } from './parts.js';

/** `GET /healthz` and `GET /readyz`, unauthenticated: the generation, the store, the drain, the ledger. */
export const health = fp<GatewayParts>(
  async (app, { generations, store, drain, ledger }) => {
    const { live } = generations;
    registerHealth(
      app,
      () => live.current.config,
      () => store.mode,
      () => drain.draining,
      () => ledger?.status ?? null,
    );
  },
  { name: 'switchyard-health' },
);
