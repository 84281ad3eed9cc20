/** Client-key authentication (auth/plugin.ts), as a plugin. */
import fp from 'fastify-plugin';
import { authHook } from '../auth/plugin.js';
import { recordAuthThrottled } from '../metrics/record.js';
import type { GatewayParts } from './parts.js';

/**
 * The `onRequest` hook that sets `request.caller` from the current generation's keys or
 * refuses the request (401, or 429 from the auth throttle). Registered inside the `/v1`
 * scope (model-routes.ts), it guards that scope's routes only.
 */
export const auth = fp<GatewayParts>(
  async (scope, { generations, authThrottle, metrics }) => {
    const { live } = generations;
    scope.addHook(
      'onRequest',
      authHook(
        () => live.current.keys,
        authThrottle,
        () => recordAuthThrottled(metrics),
      ),
    );
  },
  { name: 'switchyard-auth' },
);
