/** What every request of the client app goes through, as a plugin. */
import fp from 'fastify-plugin';
import { useJsonBodies } from '../server/http/json-body.js';
import { useRequestHooks } from '../server/http/request-hooks.js';
import type { GatewayParts } from './parts.js';

/**
 * The request hooks (server/http/request-hooks.ts: start time, `x-request-id`, the body's
 * deadline, the record of a request the pipeline did not take) and the JSON body parsers
 * (any content type read as JSON, big bodies in steps: server/http/json-body.ts).
 */
export const requests = fp<GatewayParts>(
  async (app, { metrics, drain, ledger, generations }) => {
    const { live } = generations;
    useRequestHooks(app, { metrics, drain, ...(ledger ? { ledger } : {}), requestTimeoutMs: () => live.current.config.server.request_timeout_ms });
    useJsonBodies(app);
  },
  { name: 'switchyard-requests' },
);
