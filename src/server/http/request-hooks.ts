/**
 * The hooks every request of the client app goes through, apart from auth and routing:
 * its start time and `x-request-id` header, the guard against a body that does not arrive
 * in time (slowloris), and the one record (log line and metrics) of a `/v1/` request the
 * model-call pipeline did not take: passthrough, refused before the pipeline, unknown
 * route, or a connection closed before its response finished.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Metrics } from '../../metrics/registry.js';
import { recordOutside } from '../../pipeline/finish.js';
import type { RecordSink, RequestRecord } from '../../record/request.js';
import type { Drain } from '../lifecycle/drain.js';
import type { Usage } from '../../usage/usage.js';
import { EARLY_ANSWER_LINGER_MS, lingerOnClose } from './linger.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** Epoch ms when the request arrived (before body parsing). */
    startedAt: number;
    /** Set once the request's record (metrics + log line) was emitted. */
    recorded: boolean;
    /** Set when the model-call pipeline took the request: it writes the record itself. */
    pipelineOwned: boolean;
    /** Cuts a request whose body does not arrive in time; cleared once it has. */
    bodyTimer: NodeJS.Timeout | null;
    /** `websocket` for a turn of a Responses WebSocket run in-process (routes/responses-ws.ts). */
    transport: 'http' | 'websocket';
    /**
     * What a request the pipeline did not take was, for its record: a passthrough's endpoint
     * (`embeddings`, `files` …) or `messages/count_tokens`, the model (the gateway's name),
     * the model as the client sent it (`requestedModel`; absent: the same as `model`), the
     * upstream it went to (null: none), and the usage and cost (USD) its answer reported
     * (absent: none; a passthrough's, routes/passthrough-usage.ts); null: unknown.
     * `upstreamFailed`: the upstream failed the request (a 5xx answer relayed, its key for the
     * upstream refused, or the upstream not reached), so a 5xx is `upstream_error`, not the gateway's.
     */
    described: {
      readonly api: string;
      readonly model: string | null;
      readonly requestedModel?: string | null;
      readonly upstream: string | null;
      readonly usage?: Usage;
      readonly costUsd?: number;
      readonly upstreamFailed?: boolean;
    } | null;
  }
}

/** What the request hooks read. */
export interface RequestHookDeps {
  readonly metrics: Metrics;
  readonly drain: Drain;
  /** Absent: no ledger configured. */
  readonly ledger?: RecordSink;
  /** The current config's `server.request_timeout_ms` (0: no limit). */
  requestTimeoutMs(): number;
}

/** Decorates the client app's requests and adds the hooks above. */
export function useRequestHooks(app: FastifyInstance, deps: RequestHookDeps): void {
  /** The one record of a request the pipeline did not take (passthrough, refused, unknown route), once. */
  const recordOutsidePipeline = (req: FastifyRequest, status: number, outcome: RequestRecord['outcome']): void => recordOutside(deps, req, status, outcome);

  app.decorateRequest('caller', null);
  app.decorateRequest('startedAt', 0);
  app.decorateRequest('recorded', false);
  app.decorateRequest('pipelineOwned', false);
  app.decorateRequest('bodyTimer', null);
  app.decorateRequest('transport', 'http');
  app.decorateRequest('described', null);
  app.addHook('onRequest', async (req, reply) => {
    req.startedAt = Date.now();
    void reply.header('x-request-id', req.id);
    // Fastify runs onResponse only for responses that finish: a connection closed first (a
    // client leaving a passthrough stream, an upload cut by the drain) is recorded here.
    if (req.url.startsWith('/v1/')) {
      reply.raw.once('close', () => {
        if (reply.raw.writableFinished || req.pipelineOwned) return;
        if (deps.drain.draining) recordOutsidePipeline(req, 503, 'gateway_error');
        else recordOutsidePipeline(req, 499, 'client_aborted');
      });
    }
    // A client trickling its body cannot hold a connection forever (slowloris): the whole
    // request must arrive within request_timeout_ms. (Node's own requestTimeout did not
    // cut a body sent a byte at a time once the headers were in.)
    const limit = deps.requestTimeoutMs();
    if (limit > 0 && req.method !== 'GET' && req.method !== 'HEAD') {
      const timer = setTimeout(() => {
        const res = reply.raw;
        if (!res.headersSent) {
          const body = JSON.stringify({
            error: { message: 'The request body was not received in time.', type: 'invalid_request_error', param: null, code: 'request_timeout' },
          });
          res.writeHead(408, { 'content-type': 'application/json', connection: 'close', 'x-request-id': req.id });
          res.end(body);
        }
        setTimeout(() => req.raw.destroy(), 50).unref();
      }, limit);
      timer.unref();
      req.bodyTimer = timer;
      reply.raw.once('close', () => clearTimeout(timer));
    }
  });
  // An answer sent before the request's body was all in (a bad key refused in onRequest, a
  // body too large, a route that takes none) closes the connection once sent: Node would
  // otherwise keep reading the rest of the body to reuse the connection, and a client
  // trickling it would hold the socket for ever (slowloris), whatever its auth result. The
  // close lingers briefly (linger.ts), so a client still sending gets its answer, not a reset.
  app.addHook('onSend', async (req, reply) => {
    if (req.raw.complete || reply.raw.headersSent) return;
    void reply.header('connection', 'close');
    lingerOnClose(req.raw.socket, EARLY_ANSWER_LINGER_MS);
  });
  // The body is in: the request-timeout guard is done.
  app.addHook('preHandler', async (req) => {
    if (req.bodyTimer) clearTimeout(req.bodyTimer);
  });
  // Requests refused before the pipeline (bad key, bad body, unknown route) still get their
  // record: nothing a client sent goes unlogged or uncounted.
  app.addHook('onResponse', async (req, reply) => {
    // The pipeline writes the record of the requests it takes itself (pipeline/finish.ts).
    if (!req.url.startsWith('/v1/') || req.pipelineOwned) return;
    const status = reply.statusCode;
    const failed = status >= 500 ? (req.described?.upstreamFailed ? 'upstream_error' : 'gateway_error') : null;
    recordOutsidePipeline(req, status, failed ?? (status >= 400 ? 'client_error' : 'ok'));
  });
}
