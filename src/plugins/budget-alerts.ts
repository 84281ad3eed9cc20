/** Budget alerts (limits/budget-alerts.ts), as a plugin. */
import fp from 'fastify-plugin';
import type { GatewayParts } from './parts.js';

/**
 * On close, waits (briefly) for the alert webhooks in flight. Register it after resources.ts,
 * so this runs first: an alert not sent gives its claim back while the store is still there.
 */
export const budgetAlerts = fp<GatewayParts>(
  async (app, { alerts }) => {
    app.addHook('onClose', async () => {
      await alerts.close();
    });
  },
  { name: 'switchyard-budget-alerts' },
);
