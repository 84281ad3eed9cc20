/**
 * Every Prometheus metric Switchyard exports, defined in this one file. Names follow
 * `switchyard_<thing>_<unit>` with `_total` for counters and `_seconds` for durations
 * (Prometheus naming best practices). Each app instance owns its registry, so several
 * gateways in one process (tests) do not collide.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { createBudgetMetrics, type BudgetMetrics, type BudgetReading } from './budgets.js';
import { createGuardMetrics, type GuardMetrics } from './guards.js';
import { createWebSocketMetrics, type WebSocketMetrics } from './websocket.js';
import { createConnectionMetrics, type ConnectionMetrics } from './connections.js';
import { createCapacityMetrics, type CapacityMetrics, type CapacitySources } from './capacity.js';
import { GaugeTally, Tally, type LabelsOf, type TallyOf } from './tally.js';

/** Every metric; the routing and capacity ones (metrics/capacity.ts) at the top level too. */
export interface Metrics extends CapacityMetrics {
  readonly registry: Registry;
  readonly requests: Counter<'model' | 'upstream' | 'status' | 'outcome'>;
  readonly requestDuration: Histogram<'model' | 'upstream' | 'stream'>;
  readonly ttft: Histogram<'model' | 'upstream'>;
  readonly tokens: Counter<'model' | 'upstream' | 'kind'>;
  /** Cache reads over all prompt tokens since the process started, 0..1, per public model and upstream. */
  readonly cacheReadShare: Gauge<'model' | 'upstream'>;
  readonly cost: Counter<'model' | 'upstream'>;
  /** Spend per client key NAME (never the key) and public model. */
  readonly spend: Counter<'key' | 'model'>;
  /** Tokens per client key NAME (never the key) and kind. */
  readonly keyTokens: Counter<'key' | 'kind'>;
  readonly upstreamErrors: Counter<'upstream' | 'class'>;
  readonly inFlight: Gauge<'model'>;
  readonly attempts: Counter<'upstream' | 'outcome'>;
  readonly retries: Counter<'model'>;
  readonly fallbacks: Counter<'from' | 'to'>;
  readonly cacheAffinity: Counter<'model' | 'decision'>;
  readonly retryBudgetExhausted: Counter;
  readonly queueWait: Histogram<'upstream'>;
  /** Requests refused by a per-key limit, by key NAME and reason (requests, tokens, concurrency, budget). */
  readonly limitRejections: Counter<'key' | 'reason'>;
  /** Remaining budget in USD per key NAME, for keys with `limits.budget_usd`. */
  readonly budgetRemaining: Gauge<'key'>;
  /** Requests refused because their address sent too many bad keys. */
  readonly authThrottled: Counter;
  readonly bodyGuardRefused: Counter;
  /** Ledger rows by what happened to them: written, spooled, replayed, dropped. */
  readonly ledgerRows: Counter<'result'>;
  readonly ledgerBacklog: Gauge;
  readonly tagRequests: Counter<'tag' | 'value'>;
  readonly tagSpend: Counter<'tag' | 'value'>;
  /** Tag, account and key budgets (metrics/budgets.ts). */
  readonly budgets: BudgetMetrics;
  readonly websocket: WebSocketMetrics;
  readonly guards: GuardMetrics;
  /** Open and refused client-port connections (metrics/connections.ts). */
  readonly connections: ConnectionMetrics;
  /** Read at scrape time by the state gauges; set by the app once the router exists. */
  readonly sources: MetricSources;
  /** The per-request counters' increments, summed until a scrape (metrics/tally.ts); record.ts writes through these. */
  readonly tally: {
    readonly requests: TallyOf<Metrics['requests']>;
    readonly tokens: TallyOf<Metrics['tokens']>;
    readonly keyTokens: TallyOf<Metrics['keyTokens']>;
    readonly cost: TallyOf<Metrics['cost']>;
    readonly spend: TallyOf<Metrics['spend']>;
    readonly attempts: TallyOf<Metrics['attempts']>;
    readonly cacheAffinity: TallyOf<Metrics['cacheAffinity']>;
    /** Model calls in flight per public model. */
    readonly inFlight: GaugeTally<LabelsOf<Metrics['inFlight']>, { n: number }>;
    /** Cache reads and whole prompts per public model and upstream since the process started. */
    readonly cacheReadShare: GaugeTally<LabelsOf<Metrics['cacheReadShare']>, { read: number; input: number }>;
  };
}

export interface MetricSources extends CapacitySources {
  ledgerBacklog?: () => number;
  budgets?: () => Promise<BudgetReading[]>;
}

/** Creates the registry and all metrics. */
export function createMetrics(): Metrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'switchyard_' });
  // prom-client exports these three totals as gauges named `*_total`, which `promtool check metrics` rejects;
  // the per-type gauges (`switchyard_nodejs_active_handles` …) stay, and their sum is the same total.
  for (const n of ['switchyard_nodejs_active_handles_total', 'switchyard_nodejs_active_requests_total', 'switchyard_nodejs_active_resources_total'])
    registry.removeSingleMetric(n);
  Object.assign(registry.getSingleMetric('switchyard_process_max_fds') ?? {}, { aggregator: 'max' }); // one limit, not a sum
  const registers = [registry];
  const sources: MetricSources = {};
  const m: Omit<Metrics, 'tally'> = {
    registry,
    requests: new Counter({
      name: 'switchyard_requests_total',
      help: 'Finished client requests by public model, upstream, HTTP status and outcome (ok, client_error, upstream_error, gateway_shed, gateway_refused, gateway_error, client_aborted).',
      labelNames: ['model', 'upstream', 'status', 'outcome'],
      registers,
    }),
    requestDuration: new Histogram({
      name: 'switchyard_request_duration_seconds',
      help: 'Time from request received to last byte sent.',
      labelNames: ['model', 'upstream', 'stream'],
      buckets: [0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30, 60, 120, 300],
      registers,
    }),
    ttft: new Histogram({
      name: 'switchyard_time_to_first_token_seconds',
      help: 'Time from request received to the first streamed event sent to the client.',
      labelNames: ['model', 'upstream'],
      buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30, 60],
      registers,
    }),
    tokens: new Counter({
      name: 'switchyard_tokens_total',
      help: 'Tokens by kind: input (prompt neither read from nor written to the prompt cache), cached_input (cache reads), cache_write (5-minute cache writes, and writes of unreported lifetime), cache_write_1h (1-hour cache writes), output, reasoning (a part of output). input + cached_input + cache_write + cache_write_1h is the whole prompt.',
      labelNames: ['model', 'upstream', 'kind'],
      registers,
    }),
    cacheReadShare: new Gauge({
      name: 'switchyard_cache_read_share',
      help: "Share of prompt tokens read from the provider's prompt cache (cached_input / whole prompt), 0..1, over this process's lifetime, per public model and upstream. For a window, use rate() of switchyard_tokens_total's kinds.",
      labelNames: ['model', 'upstream'],
      registers,
    }),
    cost: new Counter({
      name: 'switchyard_cost_usd_total',
      help: 'Spend in USD computed from upstream-reported usage and the configured price table.',
      labelNames: ['model', 'upstream'],
      registers,
    }),
    spend: new Counter({
      name: 'switchyard_spend_usd_total',
      help: 'Spend in USD per client key name and public model (upstream-reported usage, else the gateway estimate, priced by the price table).',
      labelNames: ['key', 'model'],
      registers,
    }),
    keyTokens: new Counter({
      name: 'switchyard_key_tokens_total',
      help: 'Tokens per client key name by kind, as switchyard_tokens_total: input (uncached), cached_input (cache reads), cache_write (5-minute), cache_write_1h, output, reasoning (a part of output).',
      labelNames: ['key', 'kind'],
      registers,
    }),
    upstreamErrors: new Counter({
      name: 'switchyard_upstream_errors_total',
      help: 'Upstream failures by class (connect, timeout, rate_limited, server, credential, caller, stream, bad_response).',
      labelNames: ['upstream', 'class'],
      registers,
    }),
    inFlight: new Gauge({
      name: 'switchyard_requests_in_flight',
      help: 'Client requests currently being served.',
      labelNames: ['model'],
      registers,
    }),
    attempts: new Counter({
      name: 'switchyard_upstream_attempts_total',
      help: 'Upstream attempts by outcome: ok, or the failure class.',
      labelNames: ['upstream', 'outcome'],
      registers,
    }),
    retries: new Counter({
      name: 'switchyard_retries_total',
      help: 'Attempts after the first one of a request (failover and backoff retries).',
      labelNames: ['model'],
      registers,
    }),
    fallbacks: new Counter({
      name: 'switchyard_fallbacks_total',
      help: 'Requests that moved to a fallback model.',
      labelNames: ['from', 'to'],
      registers,
    }),
    cacheAffinity: new Counter({
      name: 'switchyard_cache_affinity_total',
      help: "Session requests by cache affinity decision: warm (served on the account holding the session's prompt cache), moved (served elsewhere), cold (the session's first).",
      labelNames: ['model', 'decision'],
      registers,
    }),
    retryBudgetExhausted: new Counter({
      name: 'switchyard_retry_budget_exhausted_total',
      help: 'Requests answered 503 because the retry budget was spent.',
      registers,
    }),
    queueWait: new Histogram({
      name: 'switchyard_queue_wait_seconds',
      help: 'Time a request waited for a concurrency slot on an upstream.',
      labelNames: ['upstream'],
      buckets: [0.001, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10],
      registers,
    }),
    ...createCapacityMetrics(registers, sources),
    limitRejections: new Counter({
      name: 'switchyard_key_limit_rejections_total',
      help: 'Requests refused by a per-key limit, by key name and reason (requests, tokens, concurrency, budget).',
      labelNames: ['key', 'reason'],
      registers,
    }),
    budgetRemaining: new Gauge({
      name: 'switchyard_key_budget_remaining_usd',
      help: 'Remaining budget in USD for the current period, per key name (keys with limits.budget_usd).',
      labelNames: ['key'],
      registers,
      aggregator: 'min', // the latest reading is the lowest
    }),
    ledgerRows: new Counter({
      name: 'switchyard_ledger_rows_total',
      help: 'Ledger rows by result: written (to PostgreSQL), spooled (to the local file while PostgreSQL is down), replayed (from it), dropped (spool full, or refused by PostgreSQL).',
      labelNames: ['result'],
      registers,
    }),
    ledgerBacklog: new Gauge({
      name: 'switchyard_ledger_backlog_rows',
      help: 'Ledger rows not yet in PostgreSQL (queued in memory plus spooled).',
      registers,
      collect() {
        if (sources.ledgerBacklog) this.set(sources.ledgerBacklog());
      },
    }),
    tagRequests: new Counter({
      name: 'switchyard_tag_requests_total',
      help: 'Requests per value of each tag listed in tags.metric_labels (values past tags.metric_max_values count as "other").',
      labelNames: ['tag', 'value'],
      registers,
    }),
    tagSpend: new Counter({
      name: 'switchyard_tag_spend_usd_total',
      help: 'Spend in USD per value of each tag listed in tags.metric_labels (values past tags.metric_max_values count as "other").',
      labelNames: ['tag', 'value'],
      registers,
    }),
    bodyGuardRefused: new Counter({
      name: 'switchyard_body_guard_refused_total',
      help: 'Requests refused with 503 server_overloaded because their large body did not fit server.max_body_bytes_in_flight.',
      registers,
    }),
    authThrottled: new Counter({
      name: 'switchyard_auth_throttled_total',
      help: 'Requests refused with 429 because their key failed too often within a minute, or their address sent too many never-valid keys.',
      registers,
    }),
    budgets: createBudgetMetrics(registers, () => sources.budgets),
    websocket: createWebSocketMetrics(registers),
    connections: createConnectionMetrics(registers),
    guards: createGuardMetrics(registers),
    sources,
  };
  return {
    ...m,
    tally: {
      requests: new Tally(m.requests),
      tokens: new Tally(m.tokens),
      keyTokens: new Tally(m.keyTokens),
      cost: new Tally(m.cost),
      spend: new Tally(m.spend),
      attempts: new Tally(m.attempts),
      cacheAffinity: new Tally(m.cacheAffinity),
      inFlight: new GaugeTally(
        m.inFlight,
        () => ({ n: 0 }),
        (s) => s.n,
      ),
      cacheReadShare: new GaugeTally(
        m.cacheReadShare,
        () => ({ read: 0, input: 0 }),
        (s) => (s.input > 0 ? s.read / s.input : null),
      ),
    },
  };
}
