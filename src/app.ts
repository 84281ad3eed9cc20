/**
 * Builds the gateway: Fastify, every stateful resource (providers and their pools, the
 * metrics registry), the routes, and the hooks that close them. Does not listen.
 */
import { randomUUID } from 'node:crypto';
import Fastify, { LogController, type FastifyBaseLogger } from 'fastify';
import { authHook } from './auth/plugin.js';
import { KeyStore } from './auth/keys.js';
import { ConfigError, loadConfig } from './config/load.js';
import type { GatewayConfig } from './config/types.js';
import { useGatewayErrors } from './errors/reply.js';
import { recordBudgetExhausted, recordShed, recordWindowSpent } from './metrics/record.js';
import { createMetrics, type Metrics } from './metrics/registry.js';
import { Ledger, ledgerUrl } from './ledger/index.js';
import { countPromptTokens } from './usage/estimate.js';
import type { PipelineDeps } from './pipeline/handle.js';
import { PROVIDERS } from './providers/registry.js';
import { AuthThrottle, BudgetAlerts, KeyLimits } from './limits/index.js';
import { registerChatCompletions } from './routes/chat-completions.js';
import { registerMessages } from './routes/messages.js';
import { registerResponses } from './routes/responses.js';
import { registerResponsesWs, useWebSockets } from './routes/responses-ws.js';
import { registerResponsesStore } from './routes/responses-store.js';
import { registerMetrics } from './routes/metrics.js';
import { registerModels } from './routes/models.js';
import { registerPassthrough } from './routes/passthrough.js';
import { Router } from './router/index.js';
import { StateStore } from './store/index.js';
import { clientError } from './server/http/client-error.js';
import { capConnections } from './server/http/connection-cap.js';
import { Drain } from './server/lifecycle/drain.js';
import { watchIdleMemory } from './server/lifecycle/idle-gc.js';
import type { BuildOptions, Gateway, ReloadSummary } from './server/gateway.js';
import { BodyGuard, useBodyGuard } from './server/http/body-guard.js';
import { useJsonBodies } from './server/http/json-body.js';
import { useBodyDecoding } from './server/http/body-decoding.js';
import { createProviders, reloadSummary } from './server/reload/generations.js';
import { registerHealth } from './server/lifecycle/health.js';
import { LiveState, type Generation } from './server/reload/live.js';
import { createLogger } from './server/logger.js';
import { useRequestHooks } from './server/http/request-hooks.js';
import { startTracing } from './tracing/index.js';
import { packageVersion } from './util/version.js';

export type { BuildOptions, Gateway, ReloadSummary } from './server/gateway.js';

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** The ledger when `ledger.postgres_url` or `DATABASE_URL` is set (started in the background), else null. */
function openLedger(config: GatewayConfig, env: NodeJS.ProcessEnv, logger: FastifyBaseLogger, metrics: Metrics, worker = 0): Ledger | null {
  const url = ledgerUrl(config.ledger, env);
  if (!url) return null;
  const ledger = new Ledger(url, config.ledger, logger, Number(env['PORT'] || 8080), worker);
  ledger.onRows = (result, n) => metrics.ledgerRows.inc({ result }, n);
  metrics.sources.ledgerBacklog = () => ledger.status.backlogRows;
  ledger.start();
  return ledger;
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
  });

  const metrics = createMetrics();
  const { max_connections: maxConnections, max_connections_per_address: maxPerAddress } = config.server;
  capConnections(app.server, () => ({ maxConnections, maxPerAddress }), metrics.connections, (refused, address) =>
    logger.warn({ refused, address }, 'connections refused: server.max_connections or max_connections_per_address reached (at most one line a second)'),
  );
  // `store.replicas` counts gateway instances; each worker process is a replica of the store.
  const store = new StateStore(opts.worker ? { ...config.store, replicas: config.store.replicas * opts.worker.workers } : config.store, logger);
  const newRouter = (c: GatewayConfig): Router => {
    const router = new Router(c.routing, store);
    router.onBudgetExhausted = () => recordBudgetExhausted(metrics);
    router.onShed = (model, policy) => recordShed(metrics, model, policy);
    router.onWindowSpent = (upstream) => recordWindowSpent(metrics, upstream);
    // One line per long cooldown (bad key, empty account, refused or unknown model). The
    // reason is the upstream's message, scrubbed of key material; the key is never logged.
    router.health.onCooldown = (ev) =>
      logger.warn(
        { upstream: ev.upstream, target: ev.target, error_class: ev.class, reason: ev.reason, probe_at: new Date(ev.untilMs).toISOString() },
        'upstream cooling down',
      );
    return router;
  };
  // Keys of every config this process loaded count as once valid: a key rotated out is a
  // stale key, throttled on its own, never against its client's address.
  const authThrottle = new AuthThrottle(10);
  const rememberKeys = (keys: KeyStore): KeyStore => {
    for (const d of keys.digests()) authThrottle.remember(d);
    return keys;
  };
  const live = new LiveState(
    { config, keys: rememberKeys(new KeyStore(config.keys)), router: newRouter(config), providers: createProviders(config, PROVIDERS).providers },
    (err) => logger.warn({ err }, 'closing a replaced upstream provider failed'),
  );
  const current = (): Generation => live.current;
  metrics.sources.storeMode = () => store.mode;
  metrics.sources.capacities = async () => {
    const ups = [...live.current.config.upstreams.values()];
    const views = await store.view(ups.map((u) => ({ key: `${u.id}/`, upstream: u.id, capacity: u.bounds, calls: u.callBounds })));
    return ups.map((u, i) => ({ upstream: u.id, deep: views[i]!.deep, limit: views[i]!.limit, callLimit: views[i]!.callLimit }));
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
  const alerts = new BudgetAlerts(store, metrics, logger);
  const limits = new KeyLimits(store, metrics, countPromptTokens, alerts);
  metrics.sources.budgets = async () => {
    const { config: c } = live.current;
    return (await limits.budgets.status(c.budgets, c.keys)).map((b) => ({ budget: b.name, spentUsd: b.spent_usd, amountUsd: b.amount_usd }));
  };
  const drain = new Drain();
  const ledger = openLedger(config, opts.env ?? process.env, logger, metrics, opts.worker?.slot);
  // Off (and no OpenTelemetry module loaded) unless an OTLP endpoint is set: tracing/index.ts.
  const tracing = await startTracing(opts.env ?? process.env, logger, packageVersion());
  const deps: PipelineDeps = { hold: () => live.hold(), metrics, limits, drain, tracing, ...(ledger ? { ledger } : {}) };

  const reload = (path: string = live.current.config.path): ReloadSummary => {
    const prev = live.current;
    let summary: ReloadSummary;
    try {
      const next = loadConfig(path, { kinds: PROVIDERS, env: opts.env });
      let made;
      try {
        made = createProviders(next, PROVIDERS, prev);
      } catch (err) {
        throw new ConfigError(`${path}: ${(err as Error).message}`);
      }
      live.swap({ config: next, keys: rememberKeys(new KeyStore(next.keys)), router: newRouter(next), providers: made.providers });
      summary = reloadSummary(path, prev.config, next, made);
    } catch (err) {
      // ConfigError messages name paths and redact secret values; never log the file itself.
      const message = err instanceof ConfigError ? err.message : (err as Error).message;
      logger.warn({ config: path, error: message }, 'config reload rejected; the running config stays');
      throw err instanceof ConfigError ? err : new ConfigError(message);
    }
    logger.info({ reload: summary }, 'config reloaded');
    return summary;
  };

  // The Responses API's WebSocket mode; its hook marks the turns before any other hook runs.
  const sockets = await useWebSockets(app, { config, drain, metrics: metrics.websocket });
  useRequestHooks(app, { metrics, drain, ...(ledger ? { ledger } : {}), requestTimeoutMs: () => live.current.config.server.request_timeout_ms });
  // Any content type is read as JSON, big bodies in steps (server/http/json-body.ts).
  useJsonBodies(app);

  // Before the /v1 routes' auth hook: while draining, new requests get 503 shutting_down.
  drain.attach(app);
  // Memory given back once quiet after a burst (server/lifecycle/idle-gc.ts; needs node's --expose-gc).
  const stopIdleGc = watchIdleMemory(drain, {
    onCollect: (ms) => logger.info({ pause_ms: Math.round(ms), rss_mb: Math.round(process.memoryUsage.rss() / 1048576) }, 'quiet after a burst: heap collected'),
    onError: (err) => logger.warn({ error: err instanceof Error ? err.message : String(err) }, 'idle memory check failed; the next check runs as usual'),
  });
  // gzip, deflate, br, zstd bodies of the model-call routes, held to the body limit as decoded;
  // then the large-body memory guard, which meters what was decoded.
  useBodyDecoding(app, () => live.current.config.server.body_limit_bytes);
  useBodyGuard(app, new BodyGuard(), () => live.current.config.server.max_body_bytes_in_flight, () => metrics.bodyGuardRefused.inc());
  useGatewayErrors(app, 'request failed');

  registerHealth(app, () => live.current.config, () => store.mode, () => drain.draining, () => ledger?.status ?? null);
  registerMetrics(app, metrics, opts.worker ? () => opts.worker!.metricsText() : undefined);
  await app.register(async (v1) => {
    v1.addHook('onRequest', authHook(() => live.current.keys, authThrottle, () => metrics.authThrottled.inc()));
    registerModels(v1, () => live.current.config, Date.now());
    registerChatCompletions(v1, deps);
    registerPassthrough(v1, () => live.current, limits);
    registerResponses(v1, deps);
    registerResponsesWs(v1, sockets);
    registerResponsesStore(v1, deps);
    registerMessages(v1, deps);
  });

  // Give Redis a moment to connect before serving, so the first requests share state.
  app.addHook('onReady', async () => {
    await store.ready(config.store.command_timeout_ms * 4);
  });
  app.addHook('onClose', async () => {
    // Alerts first: one not sent gives its claim back while the store is still there. The
    // last spans are exported once the requests they trace have finished (the drain came first).
    stopIdleGc();
    await alerts.close();
    await Promise.allSettled([live.closeAll(), store.close(), ledger?.close(), tracing.shutdown()]);
  });
  return { app, metrics, logger, store, limits, ledger, drain, current, reload };
}

