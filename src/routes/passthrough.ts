/**
 * Passthrough of the OpenAI endpoints the gateway does not model itself (embeddings,
 * moderations, audio, images, files, batches, uploads) to one configured upstream,
 * `passthrough.upstream`, with @fastify/http-proxy (which streams through @fastify/reply-from).
 *
 * - The caller is already authenticated (the `/v1` scope's auth hook runs first); its key is
 *   swapped for the upstream's: `authorization`, `api-key`, `x-api-key` (and the account
 *   selectors `openai-organization` / `openai-project`) are dropped, the upstream's configured
 *   `headers` and `Authorization: Bearer <upstream api_key>` are set.
 * - `/v1/<rest>` goes to `<base_url><rest>` (`https://api.openai.com/v1` + `/embeddings`), query
 *   string kept. The upstream is looked up per request, so a config reload takes effect at once.
 * - Bodies are not parsed, except a JSON body, read for its `model` and forwarded byte for
 *   byte: the proxy's own content-type parser hands the raw request stream to the upstream
 *   (multipart uploads arrive byte for byte), and the response is streamed back as it arrives.
 * - No passthrough upstream, or its key unset (upstream off): 404 `unknown_url` saying so and
 *   naming `passthrough.upstream` (passthroughOffMessage). Upstream
 *   unreachable: 502 `upstream_unreachable`; no response headers in time: 504 `upstream_timeout`;
 *   both in the OpenAI error shape. Upstream HTTP errors are relayed as the upstream sent them.
 * - The app's `onResponse` hook writes the `request finished` record of every proxied call
 *   (log line, metrics, ledger row), with its endpoint as `api`, the model its JSON body
 *   names and the upstream.
 * - As on a model route: the key's `models` list applies (passthrough-access.ts: a JSON body's
 *   `model` is checked; where no model can be read, only a key allowed every model may call),
 *   then its requests per minute, concurrency and budget (a 429 like the model routes).
 *   A JSON answer that reports its usage (embeddings) is booked with its tokens, priced when
 *   the body's model is a configured model (passthrough-usage.ts); there is no failover:
 *   `passthrough.upstream` is one account, not a model's list of targets.
 */
import httpProxy from '@fastify/http-proxy';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { IncomingHttpHeaders } from 'node:http';
import type { Readable } from 'node:stream';
import { Pool, type Dispatcher } from 'undici';
import type { LiveUpstream } from '../config/types.js';
import { classifyFailure, errorCode } from '../errors/classify.js';
import { GatewayError } from '../errors/codes.js';
import { sendError } from '../errors/reply.js';
import type { KeyLimits } from '../limits/index.js';
import { checkPassthroughAccess, endpointOf, readJsonBody, type ReadBody } from './passthrough-access.js';
import { requestTags } from '../record/tags.js';
import { costUsd, ZERO_USAGE, type Usage } from '../usage/usage.js';
import { modelNamed } from '../config/aliases.js';
import { passthroughOffMessage, passthroughUpstream } from './passthrough-upstream.js';
import { tapUsage } from './passthrough-usage.js';
import type { Generation } from '../server/reload/live.js';
import { createPool } from '../upstream/pools.js';
import { decodedBody, discardBody, readCapped } from '../upstream/send.js';
import { redactSecrets } from '../util/redact.js';

/**
 * The routes proxied, below `/v1` (find-my-way syntax; `*` matches the rest of the path). Static
 * routes of the gateway (`/v1/chat/completions`, `/v1/models` …) are never shadowed: they are
 * not in this list, and a static route beats a wildcard anyway. Anything else under `/v1` gets
 * the gateway's 404.
 */
export const PASSTHROUGH_ROUTES: readonly string[] = [
  '/embeddings',
  '/moderations',
  '/audio/*',
  '/images/*',
  '/files',
  '/files/*',
  '/batches',
  '/batches/*',
  '/uploads',
  '/uploads/*',
];

/** Client headers never forwarded: the caller's gateway key and its choice of upstream account. */
const STRIPPED_REQUEST_HEADERS = ['authorization', 'api-key', 'x-api-key', 'openai-organization', 'openai-project', 'cookie'];

/**
 * The connections to the passthrough upstream: one undici Pool (the upstream's connect timeout,
 * `max_concurrency` sockets, `first_byte_ms` / `idle_ms` timeouts), replaced when a reload
 * changes the upstream (the old pool closes once its requests finish). reply-from is given
 * this instead of building its own Agent, which would switch TLS certificate checks off
 * (reply-from's `getUndiciOptions` sets `rejectUnauthorized: false`).
 */
class PassthroughTransport {
  private upstream: LiveUpstream | undefined;
  private pool: Pool | undefined;
  private readonly retired = new Set<Promise<void>>();

  constructor(private readonly current: () => LiveUpstream | undefined) {}

  /** reply-from's `undici` option: anything with undici's `request(options, callback)`. */
  readonly request = (opts: Dispatcher.RequestOptions, cb: (err: Error | null, data?: Dispatcher.ResponseData) => void): void => {
    const upstream = this.current();
    // Only ever the origin of the current passthrough upstream: a request resolved just before
    // a reload that moved the passthrough elsewhere fails (502) rather than reach another host.
    if (!upstream || new URL(upstream.base_url!).origin !== String(opts.origin)) {
      cb(Object.assign(new Error('the passthrough upstream changed while the request was starting'), { code: 'ECONNREFUSED' }));
      return;
    }
    this.poolFor(upstream).request(opts, cb);
  };

  private poolFor(upstream: LiveUpstream): Pool {
    if (this.pool && this.upstream === upstream) return this.pool;
    if (this.pool) {
      const closing = this.pool.close().catch(() => {});
      this.retired.add(closing);
      void closing.then(() => this.retired.delete(closing));
    }
    this.upstream = upstream;
    this.pool = createPool(upstream, new URL(upstream.base_url!));
    return this.pool;
  }

  /** Closes the pools (app shutdown); requests in flight finish first. */
  async close(): Promise<void> {
    await Promise.allSettled([this.pool?.close(), ...this.retired]);
    this.pool = undefined;
    this.upstream = undefined;
  }
}

/** Response headers with every value scrubbed of key material (the upstream's key and key-like tokens). */
function scrubHeaders(headers: IncomingHttpHeaders, secrets: readonly (string | undefined)[]): IncomingHttpHeaders {
  const out: IncomingHttpHeaders = {};
  for (const [k, v] of Object.entries(headers)) {
    out[k] = v === undefined ? v : Array.isArray(v) ? v.map((x) => redactSecrets(x, secrets)) : redactSecrets(String(v), secrets);
  }
  return out;
}

/** Marks the request's record: its upstream failed it (record outcome `upstream_error`). */
function upstreamFailed(req: FastifyRequest): void {
  if (req.described) req.described = { ...req.described, upstreamFailed: true };
}

/** Largest upstream error body relayed (bytes); an error body is small. */
const MAX_ERROR_BODY = 64 * 1024;

/**
 * Relays an upstream error answer scrubbed of key material; a refused provider key is the
 * gateway's 502. A compressed body (the client's `accept-encoding` is passed on) is decoded
 * and sent plain; one in an encoding not decoded here (zstd) is dropped: the status alone.
 */
async function relayError(reply: FastifyReply, status: number, body: Readable, apiKey: string | undefined): Promise<void> {
  if (status >= 500 || status === 401 || status === 403) upstreamFailed(reply.request);
  const encoding = reply.getHeader('content-encoding');
  const coded = typeof encoding === 'string' && encoding !== 'identity';
  const decoded = coded ? decodedBody(body, encoding) : null;
  let text = '';
  if (coded && !decoded) discardBody(body);
  else {
    try {
      text = (await readCapped(decoded ?? body, MAX_ERROR_BODY)).buf.toString('utf8');
    } catch {
      // a broken error body: the status alone goes out
    }
  }
  reply.removeHeader('content-encoding');
  reply.removeHeader('content-length');
  if (status === 401 || status === 403) {
    reply.removeHeader('content-type');
    sendError(reply, new GatewayError('GW_ERR_UPSTREAM_AUTH'));
    return;
  }
  void reply.send(redactSecrets(text, [apiKey]));
}

function lowerCaseKeys(headers: Readonly<Record<string, string>>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(headers)) out[k.toLowerCase()] = v;
  return out;
}

/**
 * Registers the passthrough routes (see PASSTHROUGH_ROUTES) in the `/v1` scope `v1`, which must
 * already have the auth `onRequest` hook. `current` gives the generation new requests use; its
 * `config.passthrough.upstream` names the upstream.
 */
export function registerPassthrough(v1: FastifyInstance, current: () => Generation, limits?: KeyLimits): void {
  // Keyed by the Fastify request (reply-from's callbacks see it typed for any raw server).
  const targets = new WeakMap<object, LiveUpstream>();
  // JSON bodies read for their model (passthrough-access.ts), forwarded as read.
  const bodies = new WeakMap<object, ReadBody>();
  const transport = new PassthroughTransport(() => passthroughUpstream(current()));
  const target = (req: object): LiveUpstream => {
    const upstream = targets.get(req);
    // Set by the onRequest hook below, which runs before any proxy callback.
    if (!upstream) throw new GatewayError('GW_ERR_INTERNAL');
    return upstream;
  };

  /** The usage an answer reported, priced at the configured model's price when the body names one (else $0). */
  const booked = (req: FastifyRequest, usage: Usage): void => {
    const d = req.described;
    if (!d) return;
    const model = d.model === null ? undefined : modelNamed(current().config, d.model);
    req.described = { ...d, usage, costUsd: model ? costUsd(usage, model.price) : 0 };
  };

  void v1.register(async (scope) => {
    scope.addHook('onRequest', async (req) => {
      const upstream = passthroughUpstream(current());
      if (!upstream) throw new GatewayError('GW_ERR_PASSTHROUGH_OFF', { message: passthroughOffMessage(current(), req.method, req.url) });
      targets.set(req, upstream);
    });
    // A JSON body is read for its model before preHandler, while the app's request-timeout
    // guard still runs (server/http/request-hooks.ts clears it there): a trickled body gets its 408.
    scope.addHook('preValidation', async (req) => {
      const read = await readJsonBody(req, current().config.server.body_limit_bytes);
      if (read) bodies.set(req, read);
    });
    // The key's model allow-list, then its limits.
    scope.addHook('preHandler', async (req, reply) => {
      const { config } = current();
      const read = bodies.get(req);
      const endpoint = endpointOf(req.url);
      req.described = { api: endpoint, model: read?.model ?? null, upstream: target(req).id };
      checkPassthroughAccess(req.caller, endpoint, read?.model ?? null);
      // The key's request rate, concurrency and budget, and the tag budgets, apply here too;
      // the slot is returned, with the answer's usage and cost when it reported them, when the
      // connection closes (account budgets do not apply: the answer's cost is known only then).
      if (limits) {
        const tags = requestTags(req.headers, req.caller?.metadata, config.tags.headers);
        const budgets = config.budgets.filter((b) => b.tag !== undefined);
        const admission = await limits.admit(req.caller, { max_tokens: 0 }, { budgets, alerts: config.budgetAlerts, tags });
        void reply.headers(admission.headers);
        reply.raw.once('close', () => void admission.settle(req.described?.usage ?? ZERO_USAGE, req.described?.costUsd ?? 0).catch(() => {}));
      }
    });
    scope.addHook('onClose', async () => {
      await transport.close();
    });

    // The proxy adds its own parsers (raw stream) in place of the app's (server/http/json-body.ts).
    scope.removeContentTypeParser(['application/json', '*']);
    await scope.register(httpProxy, {
      // The upstream is chosen per request (replyOptions.getUpstream).
      upstream: '',
      prefix: '/v1',
      routes: [...PASSTHROUGH_ROUTES],
      undici: { request: transport.request as unknown as Dispatcher['request'] },
      // One `request finished` line per request is the app's; errors are logged in onError.
      disableRequestLogging: true,
      replyOptions: {
        getUpstream: (req) => new URL(target(req).base_url!).origin,
        // reply-from would otherwise retry GETs answered 503 up to 10 times.
        retryDelay: () => null,
        rewriteRequestHeaders: (req, headers) => {
          const upstream = target(req);
          const out: IncomingHttpHeaders = { ...(headers as IncomingHttpHeaders) };
          for (const h of STRIPPED_REQUEST_HEADERS) delete out[h];
          Object.assign(out, lowerCaseKeys(upstream.headers));
          if (upstream.apiKey) out['authorization'] = `Bearer ${upstream.apiKey}`;
          out['x-request-id'] = req.id;
          return out;
        },
        rewriteHeaders: (headers, req) => {
          const upstream = req ? targets.get(req) : undefined;
          const out = scrubHeaders(headers as IncomingHttpHeaders, [upstream?.apiKey]);
          delete out['set-cookie'];
          const upstreamId = out['x-request-id'];
          delete out['x-request-id'];
          if (typeof upstreamId === 'string') out['x-upstream-request-id'] = upstreamId;
          if (req) {
            out['x-request-id'] = req.id;
            const upstream = targets.get(req);
            if (upstream) out['x-switchyard-upstream'] = upstream.id;
          }
          return out;
        },
        // A success streams through untouched. An error answer is read (it is small), scrubbed
        // of the upstream's key like every relayed upstream error, and a 401/403 (the
        // gateway's provider key refused) becomes the gateway's 502, never the caller's 401.
        onResponse: (req, reply, res) => {
          if (res.statusCode < 400) {
            // A JSON answer's usage (embeddings) is read as it streams by: tokens and cost are booked.
            const json = String(reply.getHeader('content-type') ?? '').includes('json') && reply.getHeader('content-encoding') === undefined;
            void reply.send(json ? tapUsage(res.stream as Readable, (usage) => booked(req as FastifyRequest, usage)) : res.stream);
            return;
          }
          void relayError(reply as FastifyReply, res.statusCode, res.stream as Readable, targets.get(req)?.apiKey);
        },
        onError: (reply, { error }) => {
          const cause = (error as { cause?: unknown }).cause ?? error;
          const timedOut = classifyFailure({ thrown: cause }).class === 'timeout' || (error as { statusCode?: number }).statusCode === 504;
          const req = reply.request;
          upstreamFailed(req as FastifyRequest);
          req.log.warn(
            { upstream: targets.get(req)?.id, code: errorCode(cause), error: cause instanceof Error ? cause.message : String(cause) },
            'passthrough upstream failed',
          );
          sendError(reply as FastifyReply, new GatewayError(timedOut ? 'GW_ERR_UPSTREAM_TIMEOUT' : 'GW_ERR_UPSTREAM_UNREACHABLE'));
        },
      },
      // `/v1/<rest>` -> `<base_url path><rest>` on the upstream's origin (reply-from adds the query).
      handler: (req, reply, dest, options) => {
        const base = new URL(target(req).base_url!).pathname.replace(/\/+$/, '');
        const read = bodies.get(req);
        const contentType = String(req.headers['content-type']);
        return reply.from(`${base}${dest}`, read ? { ...options, body: read.bytes, contentType } : options);
      },
    });
  });
}
