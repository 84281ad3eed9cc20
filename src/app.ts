/**
 * Builds the gateway: Fastify, every stateful resource (providers and their pools, the
 * metrics registry), the routes, and the hooks that close them. Does not listen.
 */
import { randomUUID } from 'node:crypto';
import type { Duplex } from 'node:stream';
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance, type FastifyRequest } from 'fastify';
import type { DestinationStream, Logger } from 'pino';
import { authHook } from './auth/plugin.js';
import { KeyStore } from './auth/keys.js';
import { ConfigError, loadConfig, type GatewayConfig } from './config/load.js';
import { useGatewayErrors } from './errors/reply.js';
import { recordBudgetExhausted, recordShed } from './metrics/record.js';
import { createMetrics, type Metrics } from './metrics/registry.js';
import { newRecord, type RequestRecord } from './pipeline/context.js';
import { finishRequest } from './pipeline/finish.js';
import type { PipelineDeps } from './pipeline/handle.js';
import { PROVIDERS } from './providers/registry.js';
import type { Provider } from './providers/types.js';
import { AuthThrottle, KeyLimits } from './limits/index.js';
import { registerChatCompletions } from './routes/chat-completions.js';
import { registerMessages } from './routes/messages.js';
import { registerResponses } from './routes/responses.js';
import { registerMetrics } from './routes/metrics.js';
import { registerModels } from './routes/models.js';
import { registerPassthrough } from './routes/passthrough.js';
import { Router } from './router/index.js';
import { StateStore } from './store/index.js';
import { Drain } from './server/drain.js';
import { registerHealth } from './server/health.js';
import { LiveState, type Generation } from './server/live.js';
import { createLogger } from './server/logger.js';

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
  }
}

export interface BuildOptions {
  /** Where log lines go (tests capture them); defaults to async stdout. */
  readonly logStream?: DestinationStream;
  /** A ready logger; overrides `logStream`. */
  readonly logger?: Logger;
  /** Environment for `${VAR}` references when the config is reloaded (defaults to `process.env`). */
  readonly env?: NodeJS.ProcessEnv;
}

/** What a reload changed (returned by `reload`, logged, and sent by `POST /admin/reload`). */
export interface ReloadSummary {
  readonly status: 'reloaded';
  readonly config: string;
  readonly models: readonly string[];
  readonly keys: number;
  readonly upstreams: {
    readonly added: readonly string[];
    readonly changed: readonly string[];
    readonly removed: readonly string[];
    readonly unchanged: readonly string[];
  };
  /** Config blocks that changed but only take effect on restart (`server`, `store`, `admin`). */
  readonly restart_required: readonly string[];
  readonly warnings: readonly string[];
}

export interface Gateway {
  readonly app: FastifyInstance;
  readonly metrics: Metrics;
  readonly logger: Logger;
  readonly store: StateStore;
  /** Per-key limits and budgets. */
  readonly limits: KeyLimits;
  /** Graceful shutdown: `drain.shutdown(server.drain_ms)` drains and closes the app. */
  readonly drain: Drain;
  /** The config, keys, router and providers new requests use. */
  current(): Generation;
  /**
   * Re-reads and validates the config file (default: the current config's path) and swaps
   * it in atomically for new requests; requests in flight finish on what they started with.
   * Upstreams whose entry is unchanged keep their provider (and its connections).
   * @throws ConfigError when the file is unreadable or invalid; the running config stays.
   */
  reload(path?: string): ReloadSummary;
}

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** Answers a request Node's HTTP parser rejected (bad framing, header overflow, timeout). */
function clientError(err: NodeJS.ErrnoException, socket: Duplex): void {
  if (!socket.writable) {
    socket.destroy();
    return;
  }
  const [status, reason, message] =
    err.code === 'HPE_HEADER_OVERFLOW'
      ? [431, 'Request Header Fields Too Large', 'The request headers are too large.']
      : err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? [408, 'Request Timeout', 'The request was not received in time.']
        : [400, 'Bad Request', 'The request is not valid HTTP.'];
  const body = JSON.stringify({ error: { message, type: 'invalid_request_error', param: null, code: null } });
  socket.end(`HTTP/1.1 ${status} ${reason}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
}

/**
 * The providers for `config`: an upstream whose entry is unchanged from `prev` keeps its
 * provider; others get a new one.
 * @throws Error when a provider cannot be created (the new ones made so far are closed).
 */
function createProviders(config: GatewayConfig, prev?: Generation): { providers: Map<string, Provider>; added: string[]; changed: string[]; unchanged: string[] } {
  const providers = new Map<string, Provider>();
  const made: Provider[] = [];
  const added: string[] = [];
  const changed: string[] = [];
  const unchanged: string[] = [];
  try {
    for (const upstream of config.upstreams.values()) {
      const before = prev?.config.upstreams.get(upstream.id);
      const reuse = before && JSON.stringify(before) === JSON.stringify(upstream) ? prev?.providers.get(upstream.id) : undefined;
      if (reuse) {
        providers.set(upstream.id, reuse);
        unchanged.push(upstream.id);
        continue;
      }
      const kind = PROVIDERS[upstream.provider];
      if (!kind) throw new Error(`no provider for kind ${upstream.provider}`);
      const p = kind.create(upstream);
      made.push(p);
      providers.set(upstream.id, p);
      (before ? changed : added).push(upstream.id);
    }
  } catch (err) {
    for (const p of made) void p.close().catch(() => {});
    throw err;
  }
  return { providers, added, changed, unchanged };
}

/**
 * Creates the Fastify app for a validated config.
 * @throws Error when a provider cannot be created (unknown kind, unreadable recordings).
 */
export async function buildApp(config: GatewayConfig, opts: BuildOptions = {}): Promise<Gateway> {
  const logger = opts.logger ?? createLogger(config.server.log_level, opts.logStream);
  const app = Fastify({
    loggerInstance: logger as FastifyBaseLogger,
    // One line per finished request is written by the pipeline itself.
    logController: new LogController({ disableRequestLogging: true, requestIdLogLabel: 'request_id' }),
    requestIdHeader: false,
    genReqId: (req) => {
      const given = req.headers['x-request-id'];
      return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
    },
    bodyLimit: config.server.body_limit_bytes,
    // Malformed HTTP still gets an OpenAI-style error body.
    clientErrorHandler: clientError,
    // Fastify's own 503 while closing is not OpenAI-shaped; the drain refuses requests instead.
    return503OnClosing: false,
    ajv: { customOptions: { coerceTypes: false, removeAdditional: false, allErrors: false } },
  });

  const metrics = createMetrics();
  const store = new StateStore(config.store, logger);
  const newRouter = (c: GatewayConfig): Router => {
    const router = new Router(c.routing, store);
    router.onBudgetExhausted = () => recordBudgetExhausted(metrics);
    router.onShed = (model, policy) => recordShed(metrics, model, policy);
    // One line per long cooldown (bad key, empty account, refused or unknown model). The
    // reason is the upstream's message, scrubbed of key material; the key is never logged.
    router.health.onCooldown = (ev) =>
      logger.warn(
        { upstream: ev.upstream, target: ev.target, error_class: ev.class, reason: ev.reason, probe_at: new Date(ev.untilMs).toISOString() },
        'upstream cooling down',
      );
    return router;
  };
  const live = new LiveState(
    { config, keys: new KeyStore(config.keys), router: newRouter(config), providers: createProviders(config).providers },
    (err) => logger.warn({ err }, 'closing a replaced upstream provider failed'),
  );
  const current = (): Generation => live.current;
  metrics.sources.storeMode = () => store.mode;
  metrics.sources.windows = async () => {
    const ups = [...live.current.config.upstreams.values()];
    const views = await store.view(ups.map((u) => ({ key: `${u.id}/`, upstream: u.id, windowMs: u.window.seconds * 1000 })));
    return ups.map((u, i) => ({ upstream: u.id, occupancy: views[i]!.window }));
  };
  metrics.sources.targets = () => {
    const { config: c, router } = live.current;
    return [...c.models.values()].flatMap((m) =>
      m.targets.map((t) => ({ target: t.key, upstream: t.upstream.id, state: router.health.state(t.key, t.upstream.id) })),
    );
  };
  metrics.sources.queues = () => {
    const { config: c, router } = live.current;
    return [...c.upstreams.keys()].map((id) => ({ upstream: id, depth: router.queue.queued(id) }));
  };
  const limits = new KeyLimits(store, metrics);
  const drain = new Drain();
  const deps: PipelineDeps = { hold: () => live.hold(), metrics, limits, drain };

  const reload = (path: string = live.current.config.path): ReloadSummary => {
    const prev = live.current;
    let summary: ReloadSummary;
    try {
      const next = loadConfig(path, opts.env);
      let made;
      try {
        made = createProviders(next, prev);
      } catch (err) {
        throw new ConfigError(`${path}: ${(err as Error).message}`);
      }
      live.swap({ config: next, keys: new KeyStore(next.keys), router: newRouter(next), providers: made.providers });
      const changedBlock = (k: 'server' | 'store' | 'admin') => JSON.stringify(prev.config[k]) !== JSON.stringify(next[k]);
      summary = {
        status: 'reloaded',
        config: path,
        models: [...next.models.keys()],
        keys: next.keys.length,
        upstreams: {
          added: made.added,
          changed: made.changed,
          removed: [...prev.config.upstreams.keys()].filter((id) => !next.upstreams.has(id)),
          unchanged: made.unchanged,
        },
        restart_required: (['server', 'store', 'admin'] as const).filter(changedBlock),
        warnings: next.warnings,
      };
    } catch (err) {
      // ConfigError messages name paths and redact secret values; never log the file itself.
      const message = err instanceof ConfigError ? err.message : (err as Error).message;
      logger.warn({ config: path, error: message }, 'config reload rejected; the running config stays');
      throw err instanceof ConfigError ? err : new ConfigError(message);
    }
    logger.info({ reload: summary }, 'config reloaded');
    return summary;
  };

  /** The one record of a request the pipeline did not take (passthrough, refused, unknown route), once. */
  const recordOutsidePipeline = (req: FastifyRequest, status: number, outcome: RequestRecord['outcome']): void => {
    if (req.recorded) return;
    req.recorded = true;
    const rec = newRecord(req.id, req.caller?.name ?? null, req.startedAt);
    rec.status = status;
    rec.outcome = outcome;
    rec.durationMs = Date.now() - req.startedAt;
    finishRequest(metrics, req.log, rec);
  };

  app.decorateRequest('caller', null);
  app.decorateRequest('startedAt', 0);
  app.decorateRequest('recorded', false);
  app.decorateRequest('pipelineOwned', false);
  app.decorateRequest('bodyTimer', null);
  app.addHook('onRequest', async (req, reply) => {
    req.startedAt = Date.now();
    void reply.header('x-request-id', req.id);
    // Fastify runs onResponse only for responses that finish: a connection closed first (a
    // client leaving a passthrough stream, an upload cut by the drain) is recorded here.
    if (req.url.startsWith('/v1/')) {
      reply.raw.once('close', () => {
        if (reply.raw.writableFinished || req.pipelineOwned) return;
        if (drain.draining) recordOutsidePipeline(req, 503, 'gateway_error');
        else recordOutsidePipeline(req, 499, 'client_aborted');
      });
    }
    // A client trickling its body cannot hold a connection forever (slowloris): the whole
    // request must arrive within request_timeout_ms. (Node's own requestTimeout did not
    // cut a body sent a byte at a time once the headers were in.)
    const limit = live.current.config.server.request_timeout_ms;
    if (limit > 0 && req.method !== 'GET' && req.method !== 'HEAD') {
      const timer = setTimeout(() => {
        const res = reply.raw;
        if (!res.headersSent) {
          const body = JSON.stringify({ error: { message: 'The request body was not received in time.', type: 'invalid_request_error', param: null, code: 'request_timeout' } });
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
  // The body is in: the request-timeout guard is done.
  app.addHook('preHandler', async (req) => {
    if (req.bodyTimer) clearTimeout(req.bodyTimer);
  });
  // Requests refused before the pipeline (bad key, bad body, unknown route) still get their
  // record: nothing a client sent goes unlogged or uncounted.
  app.addHook('onResponse', async (req, reply) => {
    if (!req.url.startsWith('/v1/')) return;
    const status = reply.statusCode;
    recordOutsidePipeline(req, status, status >= 500 ? 'gateway_error' : status >= 400 ? 'client_error' : 'ok');
  });
  // Any content type is read as JSON: `curl -d` sends form-encoded by default, and OpenAI
  // itself accepts such bodies.
  app.removeContentTypeParser('text/plain');
  app.addContentTypeParser('*', { parseAs: 'string' }, app.getDefaultJsonParser('error', 'error'));

  // Before the /v1 routes' auth hook: while draining, new requests get 503 shutting_down.
  drain.attach(app);

  useGatewayErrors(app, 'request failed');

  registerHealth(app, () => live.current.config, () => store.mode, () => drain.draining);
  registerMetrics(app, metrics);
  await app.register(async (v1) => {
    const throttle = new AuthThrottle(10);
    v1.addHook('onRequest', authHook(() => live.current.keys, throttle, () => metrics.authThrottled.inc()));
    registerModels(v1, () => live.current.config, Date.now());
    registerChatCompletions(v1, deps);
    registerPassthrough(v1, () => live.current, limits);
    registerResponses(v1, deps);
    registerMessages(v1, deps);
  });

  // Give Redis a moment to connect before serving, so the first requests share state.
  app.addHook('onReady', async () => {
    await store.ready(config.store.command_timeout_ms * 4);
  });
  app.addHook('onClose', async () => {
    await Promise.allSettled([live.closeAll(), store.close()]);
  });
  return { app, metrics, logger, store, limits, drain, current, reload };
}
