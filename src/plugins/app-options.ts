/**
 * The client app's Fastify options: request ids, the body limit, connection timeouts,
 * malformed HTTP, prototype poisoning and schema checks.
 */
import { randomUUID } from 'node:crypto';
import type { Server } from 'node:http';
import { LogController, type FastifyBaseLogger, type FastifyHttpOptions } from 'fastify';
import type { GatewayConfig } from '../config/types.js';
import { clientError } from '../server/http/client-error.js';

/** The `x-request-id` a client may choose for its request; any other gets a random UUID. */
const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** The options `buildApp` creates the client app with, for a validated config. */
export function clientAppOptions(config: GatewayConfig, logger: FastifyBaseLogger): FastifyHttpOptions<Server, FastifyBaseLogger> {
  return {
    loggerInstance: logger,
    // One line per finished request is written by the pipeline itself.
    logController: new LogController({ disableRequestLogging: true, requestIdLogLabel: 'request_id' }),
    requestIdHeader: false,
    genReqId: (req) => {
      const given = req.headers['x-request-id'];
      return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
    },
    bodyLimit: config.server.body_limit_bytes,
    // Every connection, whatever its key: headers within headers_timeout_ms (checked every
    // second, not Node's 30 s, so the deadline holds), idle between requests for at most
    // keep_alive_timeout_ms. The body's deadline is the request hooks' (request_timeout_ms).
    keepAliveTimeout: config.server.keep_alive_timeout_ms,
    http: { headersTimeout: config.server.headers_timeout_ms, connectionsCheckingInterval: Math.min(1_000, config.server.headers_timeout_ms / 2) },
    // Malformed HTTP still gets an OpenAI-style error body.
    clientErrorHandler: clientError,
    // Fastify's own 503 while closing is not OpenAI-shaped; the drain refuses requests instead.
    return503OnClosing: false,
    // (the same for the application/json parser)
    onProtoPoisoning: 'remove',
    onConstructorPoisoning: 'remove',
    ajv: { customOptions: { coerceTypes: false, removeAdditional: false, allErrors: false } },
  };
}
