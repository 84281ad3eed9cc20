/**
 * Emits a finished request exactly once: metrics, one JSON log line (request id comes
 * from the request's child logger) and an entry in the console's recent-requests buffer.
 * The key's name is logged, never the key.
 */
import type { FastifyBaseLogger } from 'fastify';
import { recordRequest } from '../metrics/record.js';
import type { Metrics } from '../metrics/registry.js';
import { recentRequests, type RouteMarks } from '../server/recent.js';
import type { RequestRecord } from './context.js';
import type { Usage } from './usage.js';

/** The log line's token counts; `cache_write` only when the provider wrote to its prompt cache. */
function logTokens(u: Usage): Record<string, number> {
  const t: Record<string, number> = { input: u.input, cached: u.cached, output: u.output, reasoning: u.reasoning };
  if (u.cacheWrite) t['cache_write'] = u.cacheWrite;
  return t;
}

/** `route`: the request's fallback / shed marks (its `RouteRun`), when it got that far. */
export function finishRequest(metrics: Metrics, log: FastifyBaseLogger, rec: RequestRecord, route?: RouteMarks | null): void {
  recordRequest(metrics, rec);
  recentRequests(metrics).push(rec, route);
  log.info(
    {
      key: rec.key,
      model: rec.model,
      upstream: rec.upstream,
      upstream_model: rec.upstreamModel,
      stream: rec.stream,
      status: rec.status,
      outcome: rec.outcome,
      error_class: rec.errorClass,
      attempts: rec.attempts,
      duration_ms: rec.durationMs,
      ttft_ms: rec.ttftMs,
      tokens: logTokens(rec.usage),
      tokens_estimated: rec.usageEstimated,
      cost_usd: rec.costUsd,
    },
    'request finished',
  );
}
