/**
 * Every metric write of the gateway: finished request records, upstream attempts, and the
 * counters and gauges of limits, budgets, auth, bodies, the ledger, connections and
 * WebSockets. Code outside metrics/ calls these functions and never prom-client itself.
 */
import type { RequestRecord } from '../record/request.js';
import { cacheWrites } from '../usage/usage.js';
import type { ConnectionMetrics } from './connections.js';
import type { Metrics } from './registry.js';
import type { WebSocketMetrics } from './websocket.js';

const NONE = 'none';

/** Records one finished request. */
export function recordRequest(m: Metrics, r: RequestRecord): void {
  const model = r.model ?? NONE;
  const upstream = r.upstream ?? NONE;
  m.tally.requests.add(1, model, upstream, String(r.status), r.outcome);
  m.requestDuration.observe({ model, upstream, stream: String(r.stream) }, r.durationMs / 1000);
  if (r.ttftMs !== null) m.ttft.observe({ model, upstream }, r.ttftMs / 1000);
  // The key's configured name, never the key itself.
  const key = r.key ?? NONE;
  const u = r.usage;
  const writes = cacheWrites(u);
  const t = m.tally;
  tokens(t, model, upstream, key, 'input', u.input - u.cached - writes.m5 - writes.h1);
  tokens(t, model, upstream, key, 'cached_input', u.cached);
  tokens(t, model, upstream, key, 'cache_write', writes.m5);
  tokens(t, model, upstream, key, 'cache_write_1h', writes.h1);
  tokens(t, model, upstream, key, 'output', u.output);
  tokens(t, model, upstream, key, 'reasoning', u.reasoning);
  if (u.input > 0) recordCacheShare(m, model, upstream, u.cached, u.input);
  if (r.cache) t.cacheAffinity.add(1, model, r.cache);
  if (r.costUsd > 0) {
    t.cost.add(r.costUsd, model, upstream);
    t.spend.add(r.costUsd, key, model);
  }
}

/** Adds `n` tokens of `kind` to the model's and the key's counts (nothing when n ≤ 0). */
function tokens(t: Metrics['tally'], model: string, upstream: string, key: string, kind: string, n: number): void {
  t.tokens.add(n, model, upstream, kind);
  t.keyTokens.add(n, key, kind);
}

/** Adds a request's cache reads and prompt to its model and upstream's sums (`switchyard_cache_read_share` is their ratio, set when read). */
function recordCacheShare(m: Metrics, model: string, upstream: string, read: number, input: number): void {
  const s = m.tally.cacheReadShare.at(model, upstream);
  s.read += read;
  s.input += input;
}

/** Values seen per metric tag, per registry: past the cap a value counts as "other". */
const tagValues = new WeakMap<Metrics, Map<string, Set<string>>>();

/**
 * Counts a finished request and its spend per value of each tag in `labels`
 * (`tags.metric_labels`). At most `maxValues` distinct values per tag are labels; later ones
 * are `value="other"`, so clients cannot grow the series without bound.
 */
export function recordTags(m: Metrics, r: RequestRecord, labels: readonly string[], maxValues: number): void {
  if (labels.length === 0) return;
  let seen = tagValues.get(m);
  if (!seen) tagValues.set(m, (seen = new Map()));
  for (const tag of labels) {
    const raw = r.tags[tag];
    if (raw === undefined) continue;
    let values = seen.get(tag);
    if (!values) seen.set(tag, (values = new Set()));
    if (!values.has(raw) && values.size < maxValues) values.add(raw);
    const value = values.has(raw) ? raw : 'other';
    m.tagRequests.inc({ tag, value });
    if (r.costUsd > 0) m.tagSpend.inc({ tag, value }, r.costUsd);
  }
}

/**
 * Records one failed attempt (or a stream that failed after it started) by its failure class
 * (errors/classify.ts): an upstream's failure in `switchyard_upstream_errors_total`, the
 * gateway's own (`gateway`) in `switchyard_gateway_errors_total` by public `model`.
 */
export function recordAttemptFailed(m: Metrics, upstream: string, model: string, cls: string): void {
  if (cls === 'gateway') m.guards.gatewayErrors.inc({ model });
  else m.upstreamErrors.inc({ upstream, class: cls });
  m.tally.attempts.add(1, upstream, cls);
}

/** Records an upstream attempt that delivered a response. */
export function recordAttemptOk(m: Metrics, upstream: string): void {
  m.tally.attempts.add(1, upstream, 'ok');
}

/** What `recordAttemptStart` reads of an attempt (router/run.ts `Attempt`). */
export interface AttemptStart {
  /** 1-based attempt number within the request. */
  readonly number: number;
  readonly model: { readonly name: string };
  readonly target: { readonly upstream: { readonly id: string } };
  /** Time spent queued for a slot, ms. */
  readonly queuedMs: number;
  /** Set on the first attempt of a fallback model: the primary model's name. */
  readonly fallbackFrom?: string;
}

/** Records the start of an attempt: retries, fallbacks and queue wait. */
export function recordAttemptStart(m: Metrics, a: AttemptStart): void {
  if (a.number > 1) m.retries.inc({ model: a.model.name });
  if (a.fallbackFrom) m.fallbacks.inc({ from: a.fallbackFrom, to: a.model.name });
  if (a.queuedMs > 0) m.queueWait.observe({ upstream: a.target.upstream.id }, a.queuedMs / 1000);
}

/** Counts a request refused because the retry budget was spent. */
export function recordBudgetExhausted(m: Metrics): void {
  m.retryBudgetExhausted.inc();
}

/** Tracks requests in flight for a model. */
export function trackInFlight(m: Metrics, model: string, delta: 1 | -1): void {
  m.tally.inFlight.at(model).n += delta;
}

/** Counts a deep call shed by `policy`. */
export function recordShed(m: Metrics, model: string, policy: string): void {
  m.sheds.inc({ model, policy });
}

/** Counts an answer of `upstream` whose rate-limit headers said its request or token window is spent. */
export function recordWindowSpent(m: Metrics, upstream: string): void {
  m.windowsSpent.inc({ upstream });
}

/** Counts a request a key's limit refused, by `reason` (requests, tokens, concurrency, budget). */
export function recordLimitRejection(m: Metrics, key: string, reason: string): void {
  m.limitRejections.inc({ key, reason });
}

/** Sets what is left of key `key`'s budget this period, USD (the caller keeps it at 0 or more). */
export function recordBudgetRemaining(m: Metrics, key: string, usd: number): void {
  m.budgetRemaining.set({ key }, usd);
}

/** Counts a request a spent configured budget refused or routed around. */
export function recordBudgetRefusal(m: Metrics, budget: string, action: 'refused' | 'routed_around'): void {
  m.budgets.refusals.inc({ budget, action });
}

/** Counts a budget alert webhook by result: sent (answered 2xx) or failed (every try failed). */
export function recordBudgetWebhook(m: Metrics, result: 'sent' | 'failed'): void {
  m.budgets.webhooks.inc({ result });
}

/** Counts a request refused 429 by the auth throttle. */
export function recordAuthThrottled(m: Metrics): void {
  m.authThrottled.inc();
}

/** Counts a request whose large body did not fit `server.max_body_bytes_in_flight`. */
export function recordBodyGuardRefused(m: Metrics): void {
  m.bodyGuardRefused.inc();
}

/** Counts `n` ledger rows by what became of them (written, spooled, replayed, dropped). */
export function recordLedgerRows(m: Metrics, result: string, n: number): void {
  m.ledgerRows.inc({ result }, n);
}

/** Counts a client-port connection refused, by reason. */
export function recordConnectionRefused(c: ConnectionMetrics, reason: string): void {
  c.refused.inc({ reason });
}

/** Tracks the client-port connections open: +1 when one is admitted, -1 when it closes. */
export function trackConnection(c: ConnectionMetrics, delta: 1 | -1): void {
  if (delta > 0) c.open.inc();
  else c.open.dec();
}

/** Tracks the Responses API WebSockets open: +1 when one opens, -1 when it closes. */
export function trackWebSocket(w: WebSocketMetrics, delta: 1 | -1): void {
  if (delta > 0) w.connections.inc();
  else w.connections.dec();
}

/** Counts a `response.create` frame run as a turn. */
export function recordWebSocketTurn(w: WebSocketMetrics): void {
  w.turns.inc();
}
