/** The gateway's clients of the world outside, as a plugin: ready before serving, closed last. */
import fp from 'fastify-plugin';
import type { GatewayParts } from './parts.js';

/**
 * Gives Redis a moment to connect before the app is ready, so the first requests share
 * state; on close, once the requests are done, closes side by side the upstream providers'
 * pools, the store, the ledger and the tracer (the last spans are exported once the
 * requests they trace have finished). Register it after every plugin whose `onClose` must
 * run after it, and before those that must run first: Fastify runs them last registered first.
 */
export const resources = fp<GatewayParts>(
  async (app, { config, generations, store, ledger, tracing }) => {
    app.addHook('onReady', async () => {
      await store.ready(config.store.command_timeout_ms * 4);
    });
    app.addHook('onClose', async () => {
      await Promise.allSettled([generations.live.closeAll(), store.close(), ledger?.close(), tracing.shutdown()]);
    });
  },
  { name: 'switchyard-resources' },
);
