/**
 * The only caller of prom-client outside the registry: turns finished request records and
 * upstream failures into metric updates.
 */
import type { RequestRecord } from '../record/request.js';
import type { Metrics } from './registry.js';

const NONE = 'none';

/** Records one finished request. */
export function recordRequest(m: Metrics, r: RequestRecord): void {
  const model = r.model ?? NONE;
  const upstream = r.upstream ?? NONE;
  m.requests.inc({ model, upstream, status: String(r.status), outcome: r.outcome });
  m.requestDuration.observe({ model, upstream, stream: String(r.stream) }, r.durationMs / 1000);
  if (r.ttftMs !== null) m.ttft.observe({ model, upstream }, r.ttftMs / 1000);
  // The key's configured name, never the key itself.
  const key = r.key ?? NONE;
  const u = r.usage;
  const kinds: [string, number][] = [
    ['input', u.input - u.cached - (u.cacheWrite ?? 0)],
    ['cached_input', u.cached],
    ['cache_write', u.cacheWrite ?? 0],
    ['output', u.output],
    ['reasoning', u.reasoning],
  ];
  for (const [kind, n] of kinds) {
    if (n <= 0) continue;
    m.tokens.inc({ model, upstream, kind }, n);
    m.keyTokens.inc({ key, kind }, n);
  }
  if (r.costUsd > 0) {
    m.cost.inc({ model, upstream }, r.costUsd);
    m.spend.inc({ key, model }, r.costUsd);
  }
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
  m.attempts.inc({ upstream, outcome: cls });
}

/** Records an upstream attempt that delivered a response. */
export function recordAttemptOk(m: Metrics, upstream: string): void {
  m.attempts.inc({ upstream, outcome: 'ok' });
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
  m.inFlight.inc({ model }, delta);
}

/** Counts a deep call shed by `policy`. */
export function recordShed(m: Metrics, model: string, policy: string): void {
  m.sheds.inc({ model, policy });
}

export function recordWindowSpent(m: Metrics, upstream: string): void {
  m.windowsSpent.inc({ upstream });
}
