/**
 * The client app's stateful parts, made once per app before any plugin is registered and in
 * the order they start: metrics, the shared store, the first generation (config, keys,
 * router, providers), limits and budget alerts, the drain, the ledger, tracing. Every
 * plugin gets them as its options; `buildApp` hands the public ones out as the Gateway.
 */
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import type { GatewayConfig } from '../config/types.js';
import { Ledger, ledgerUrl } from '../ledger/index.js';
import { AuthThrottle, BudgetAlerts, KeyLimits } from '../limits/index.js';
import { recordLedgerRows } from '../metrics/record.js';
import { createMetrics, type Metrics } from '../metrics/registry.js';
import type { PipelineDeps } from '../pipeline/handle.js';
import { webSockets, type WebSockets } from '../routes/responses-ws.js';
import type { BuildOptions, Gateway, WorkerRole } from '../server/gateway.js';
import { Drain } from '../server/lifecycle/drain.js';
import { Reloader } from '../server/reload/reloader.js';
import { StateStore } from '../store/index.js';
import { startTracing, type Tracing } from '../tracing/index.js';
import { countPromptTokens, loadTokenizer } from '../usage/estimate.js';
import { packageVersion } from '../util/version.js';

/** What the client app's plugins share (their options). */
export type GatewayParts = {
  /** The config at start-up (`server`, `store` and `admin` changes take a restart). */
  readonly config: GatewayConfig;
  /** Set when this process is one of `server.workers`. */
  readonly worker: WorkerRole | undefined;
  readonly logger: Logger;
  readonly metrics: Metrics;
  readonly store: StateStore;
  /** The current generation and reload. */
  readonly generations: Reloader;
  /** Wrong keys, throttled (the auth hook of the `/v1` routes). */
  readonly authThrottle: AuthThrottle;
  readonly alerts: BudgetAlerts;
  readonly limits: KeyLimits;
  readonly drain: Drain;
  readonly ledger: Ledger | null;
  readonly tracing: Tracing;
  /** The Responses API's WebSocket mode: its sockets and turns. */
  readonly sockets: WebSockets;
  /** What the model-call routes run with. */
  readonly deps: PipelineDeps;
};

/** The ledger when `ledger.postgres_url` or `DATABASE_URL` is set (started in the background), else null. */
function openLedger(config: GatewayConfig, env: NodeJS.ProcessEnv, logger: Logger, metrics: Metrics, worker = 0): Ledger | null {
  const url = ledgerUrl(config.ledger, env);
  if (!url) return null;
  const ledger = new Ledger(url, config.ledger, logger, Number(env['PORT'] || 8080), worker);
  ledger.onRows = (result, n) => recordLedgerRows(metrics, result, n);
  ledger.start();
  return ledger;
}

/**
 * Makes the parts of the client app `app` for a validated config.
 * @throws Error when a provider cannot be created (unknown kind, unreadable recordings).
 */
export async function openParts(app: FastifyInstance, config: GatewayConfig, opts: BuildOptions, logger: Logger): Promise<GatewayParts> {
  const env = opts.env ?? process.env;
  const metrics = createMetrics();
  // `store.replicas` counts gateway instances; each worker process is a replica of the store.
  const store = new StateStore(opts.worker ? { ...config.store, replicas: config.store.replicas * opts.worker.workers } : config.store, logger);
  const authThrottle = new AuthThrottle(10);
  const generations = new Reloader(config, { store, metrics, logger, authThrottle, env: opts.env });
  const alerts = new BudgetAlerts(store, metrics, logger);
  const limits = new KeyLimits({ windows: store.keyWindows, spend: store }, metrics, countPromptTokens, alerts);
  // A `tpm` key counts every prompt from the first request, and a model with a context_window
  // long ones (pipeline/context-window.ts): the tokenizer is loaded before the port opens.
  if (config.keys.some((k) => k.limits?.tpm !== undefined) || [...config.models.values()].some((m) => m.contextWindow !== undefined)) await loadTokenizer();
  const drain = new Drain();
  const ledger = openLedger(config, env, logger, metrics, opts.worker?.slot);
  // Off (and no OpenTelemetry module loaded) unless an OTLP endpoint is set: tracing/index.ts.
  const tracing = await startTracing(env, logger, packageVersion());
  const { live } = generations;
  const deps: PipelineDeps = { hold: () => live.hold(), metrics, limits, drain, tracing, journal: store, ...(ledger ? { ledger } : {}) };
  const sockets = webSockets(app, { config, drain, metrics: metrics.websocket });
  return { config, worker: opts.worker, logger, metrics, store, generations, authThrottle, alerts, limits, drain, ledger, tracing, sockets, deps };
}

/** The Gateway handle of the client app `app` and its parts. */
export function gatewayOf(app: FastifyInstance, p: GatewayParts): Gateway {
  const { live } = p.generations;
  return {
    app,
    metrics: p.metrics,
    logger: p.logger,
    store: p.store,
    limits: p.limits,
    ledger: p.ledger,
    drain: p.drain,
    current: () => live.current,
    reload: (path) => p.generations.reload(path),
  };
}
