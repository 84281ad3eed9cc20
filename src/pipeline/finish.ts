/**
 * The one writer of request records. `finish` ends a model call: it prices the usage,
 * settles the key's limits, adds the spend to the budgets and the daily counters, and emits
 * the record (metrics, one JSON log line, the console's recent requests) exactly once.
 * `recordOutside` does the same for a request the pipeline never took (passthrough, refused
 * before a route, unknown URL). The key's name is logged, never the key.
 */
import type { FastifyBaseLogger, FastifyRequest } from 'fastify';
import { tpmTokens, type Admission } from '../limits/index.js';
import type { TagsConfig } from '../config/schema.js';
import { recordRequest, recordTags } from '../metrics/record.js';
import type { Metrics } from '../metrics/registry.js';
import type { Outcome, RecordSink, RequestRecord } from '../record/request.js';
import { logRecord } from '../record/log-line.js';
import { recentRequests } from '../record/recent.js';
import { NO_TAGS } from '../record/tags.js';
import { costUsd, ZERO_USAGE } from '../usage/usage.js';
import type { Call, PipelineDeps } from './call.js';
import type { Ending } from './outcome.js';

/** Longest `model` id kept as sent on a record (a longer one is cut): no real id comes close. */
const MAX_REQUESTED_MODEL = 256;

/** The `model` id as the client sent it (checked a non-empty string by the route's schema), cut to MAX_REQUESTED_MODEL; null when the body has none. */
export function requestedId(body: Readonly<Record<string, unknown>>): string | null {
  const m = body['model'];
  if (typeof m !== 'string' || m === '') return null;
  return m.length > MAX_REQUESTED_MODEL ? m.slice(0, MAX_REQUESTED_MODEL) : m;
}

/** Where records go: metrics (and the console's ring kept with them) and, when configured, the ledger. */
export interface RecordSinks {
  readonly metrics: Metrics;
  readonly ledger?: RecordSink;
}

/** Emits a finished record: metrics (per tag too, when `tags` lists metric labels), the log line, the recent-requests ring, the ledger. */
function emit(sinks: RecordSinks, log: FastifyBaseLogger, rec: RequestRecord, tags?: TagsConfig): void {
  const { metrics } = sinks;
  recordRequest(metrics, rec);
  if (tags) recordTags(metrics, rec, tags.metric_labels, tags.metric_max_values);
  recentRequests(metrics).push(rec);
  // The ledger books what keys did: a refusal before any key was recognised (a bad or missing
  // key, an unknown route) goes to the log and the metrics only, so anonymous traffic cannot
  // fill the ledger (or its spool during a PostgreSQL outage) and push billing rows out.
  if (rec.key !== null) sinks.ledger?.add(rec);
  logRecord(log, rec);
}

/**
 * Ends a model call. Marks the request recorded before anything else (nothing that runs
 * while this settles can record it again), then awaits the key's settlement (the response is
 * already out, and the caller's next request sees this one's spend).
 */
export async function finish(deps: PipelineDeps, call: Call, admission: Admission | null, end: Ending): Promise<void> {
  const { req } = call;
  req.recorded = true;
  const usage = end.usage ?? ZERO_USAGE;
  const cost = end.price ? costUsd(usage, end.price) : 0;
  const rec: RequestRecord = {
    requestId: req.id,
    api: call.api.operation ? `${call.api.name}/${call.api.operation}` : call.api.name,
    key: req.caller?.name ?? null,
    model: end.served?.model ?? end.model,
    requestedModel: requestedId(call.body),
    upstream: end.served?.upstream ?? null,
    upstreamModel: end.served?.upstreamModel ?? null,
    stream: call.stream,
    status: end.status,
    outcome: end.outcome,
    errorClass: end.errorClass,
    startedAt: req.startedAt,
    durationMs: Date.now() - req.startedAt,
    ttftMs: end.ttftMs,
    usage,
    usageEstimated: end.estimated,
    costUsd: cost,
    attempts: end.attempts,
    fallback: end.fallback,
    shed: end.shed,
    ...(end.cache ? { cache: end.cache } : {}),
    tags: call.tags,
    transport: req.transport,
  };
  call.trace.end(rec);
  // The key's limits (its tpm counts what the provider counts: limits/key-take.ts tpmTokens),
  // and the cost added to its budgets and the daily spend per key and model (one store call).
  // Without an admission no upstream was called: there is no cost.
  if (admission)
    await admission
      .settle(tpmTokens(usage, end.provider), cost, { upstream: rec.upstream, model: rec.model })
      .catch((err: unknown) => req.log.warn({ err }, 'settling key limits failed'));
  emit(deps, req.log, rec, call.gen.config.tags);
}

/** Records a request the pipeline did not take, once (`req.recorded` guards it), as far as `req.described` says what it was. */
export function recordOutside(sinks: RecordSinks, req: FastifyRequest, status: number, outcome: Outcome): void {
  if (req.recorded) return;
  req.recorded = true;
  const d = req.described;
  emit(sinks, req.log, {
    requestId: req.id,
    api: d?.api ?? null,
    key: req.caller?.name ?? null,
    model: d?.model ?? null,
    requestedModel: (d?.requestedModel !== undefined ? d.requestedModel : d?.model) ?? null,
    upstream: d?.upstream ?? null,
    upstreamModel: null,
    stream: false,
    status,
    outcome,
    errorClass: null,
    startedAt: req.startedAt,
    durationMs: Date.now() - req.startedAt,
    ttftMs: null,
    usage: d?.usage ?? ZERO_USAGE,
    usageEstimated: false,
    costUsd: d?.costUsd ?? 0,
    attempts: 0,
    fallback: null,
    shed: null,
    tags: NO_TAGS,
    transport: req.transport,
  });
}
