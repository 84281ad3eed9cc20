/**
 * Sends a gateway error as a JSON response in the dialect of the route's API, and maps
 * Fastify's own errors (bad JSON, body too large, schema validation) onto the gateway's
 * error table. Each inbound route names its renderer in its Fastify `config.errorBody`, so
 * this floor module needs no import of `apis/`; anything else gets OpenAI's shape.
 */
import type { FastifyError, FastifyInstance, FastifyReply } from 'fastify';
import { GatewayError } from './codes.js';
import { errorBody } from './render.js';
import { waitHeaders } from './wait.js';
import { foldLiteralUnions } from '../util/ajv-issues.js';

/** Renders a gateway error as the JSON body of one API's dialect. */
export type ErrorBodyRenderer = (err: GatewayError) => unknown;

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The error body of this route's API (e.g. `chatApi.errorBody`); OpenAI's shape when absent. */
    errorBody?: ErrorBodyRenderer;
  }
}

/** The error body in the dialect of the route's API (`config.errorBody`), OpenAI's by default. */
function bodyFor(reply: FastifyReply, err: GatewayError): unknown {
  const render = reply.request.routeOptions.config?.errorBody ?? errorBody;
  return render(err);
}

/**
 * The headers that tell a client whether and when to retry `err` (errors/table.ts `Heals`):
 * - `never`: `x-should-retry: false`. A 5xx then carries no `Retry-After`: Codex CLI does not
 *   read `x-should-retry`, retries every 5xx (its request and stream retries, about 30 calls)
 *   and sleeps out each `Retry-After`, so a wait named on a final answer would hold it for
 *   minutes; without one it gives up within its own backoff (about 25 s). A 4xx keeps its
 *   wait (a budget's period end): no client retries those in a loop.
 * - `wait`: `x-should-retry: true` and the wait (1 s when the error names none).
 * - `maybe`: the error's own headers only.
 */
function retryHeaders(err: GatewayError): Record<string, string> {
  const own = { ...err.headers };
  if (err.heals === 'never') {
    if (err.status >= 500) {
      delete own['retry-after'];
      delete own['retry-after-ms'];
    }
    return { ...own, 'x-should-retry': 'false' };
  }
  if (err.heals === 'wait') return { ...(own['retry-after'] ? {} : waitHeaders(1_000)), ...own, 'x-should-retry': 'true' };
  return own;
}

/**
 * Sends `err` unless the response already started, in the route's API dialect; returns the status sent.
 * @param extra more response headers (routing headers); the error's own win.
 */
export function sendError(reply: FastifyReply, err: GatewayError, extra: Record<string, string> = {}): number {
  if (reply.sent || reply.raw.headersSent) return reply.statusCode;
  const requestId = reply.request.id;
  void reply
    .status(err.status)
    .headers({ ...extra, ...retryHeaders(err), 'x-request-id': requestId })
    .type('application/json; charset=utf-8')
    .send(bodyFor(reply, err));
  return err.status;
}

interface AjvIssue {
  instancePath?: string;
  keyword?: string;
  message?: string;
  params?: Record<string, unknown>;
}

/** `/messages/0/role` -> `messages[0].role` (OpenAI's `param` notation). */
function paramFromPointer(pointer: string): string {
  return pointer
    .split('/')
    .slice(1)
    .map((p, i) => (/^\d+$/.test(p) ? `[${p}]` : i === 0 ? p : `.${p}`))
    .join('');
}

function fromValidation(all: AjvIssue[]): GatewayError {
  const issues = foldLiteralUnions(all);
  const issue = issues.find((i) => i.keyword !== 'anyOf') ?? issues[0] ?? {};
  let param = paramFromPointer(issue.instancePath ?? '');
  let message: string;
  if (issue.keyword === 'required') {
    const missing = String(issue.params?.['missingProperty'] ?? '');
    param = param ? `${param}.${missing}` : missing;
    message = `Missing required parameter: '${param}'.`;
  } else {
    message = `Invalid value for '${param || 'body'}': ${issue.message ?? 'invalid'}.`;
  }
  return new GatewayError('GW_ERR_INVALID_REQUEST', { message, param: param || null });
}

/** Maps any error reaching Fastify's error handler to a gateway error. */
export function toGatewayError(err: FastifyError | GatewayError | Error): GatewayError {
  if (err instanceof GatewayError) return err;
  const fe = err as FastifyError & { validation?: AjvIssue[] };
  if (Array.isArray(fe.validation) && fe.validation.length > 0) return fromValidation(fe.validation);
  switch (fe.code) {
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return new GatewayError('GW_ERR_INVALID_JSON');
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new GatewayError('GW_ERR_BODY_TOO_LARGE');
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new GatewayError('GW_ERR_UNSUPPORTED_MEDIA_TYPE');
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return new GatewayError('GW_ERR_INVALID_REQUEST', { message: 'The Content-Length header does not match the body.' });
    default:
      break;
  }
  if (err instanceof SyntaxError) return new GatewayError('GW_ERR_INVALID_JSON');
  const status = typeof fe.statusCode === 'number' ? fe.statusCode : 500;
  if (status >= 400 && status < 500) return new GatewayError('GW_ERR_INVALID_REQUEST', { status, message: 'Invalid request.' });
  return new GatewayError('GW_ERR_INTERNAL');
}

/**
 * Makes every error and unknown route of `app` an OpenAI-style JSON error (the client app
 * and the admin app share this); 5xx errors are logged with `what`.
 */
export function useGatewayErrors(app: FastifyInstance, what: string): void {
  app.setErrorHandler((err: Error, req, reply) => {
    const gw = toGatewayError(err);
    if (gw.status >= 500) req.log.error({ err }, what);
    sendError(reply, gw);
  });
  app.setNotFoundHandler((req, reply) => {
    sendError(reply, new GatewayError('GW_ERR_ROUTE_NOT_FOUND', { message: `Unknown request URL: ${req.method} ${req.url.split('?')[0]!.slice(0, 200)}.` }));
  });
}
