/** Memory given back once quiet after a burst (server/lifecycle/idle-gc.ts), as a plugin. */
import fp from 'fastify-plugin';
import { watchIdleMemory } from '../server/lifecycle/idle-gc.js';
import type { GatewayParts } from './parts.js';

/**
 * Watches the drain's traffic and collects the heap once the gateway is quiet after a burst
 * (needs node's `--expose-gc`); stops watching first thing on close (register it last).
 */
export const idleMemory = fp<GatewayParts>(
  async (app, { drain, logger }) => {
    const stop = watchIdleMemory(drain, {
      onCollect: (ms) =>
        logger.info({ pause_ms: Math.round(ms), rss_mb: Math.round(process.memoryUsage.rss() / 1048576) }, 'quiet after a burst: heap collected'),
      onError: (err) => logger.warn({ error: err instanceof Error ? err.message : String(err) }, 'idle memory check failed; the next check runs as usual'),
    });
    app.addHook('onClose', async () => {
      stop();
    });
  },
  { name: 'switchyard-idle-memory' },
);
