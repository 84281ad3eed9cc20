/**
 * Every Prometheus metric Switchyard exports, defined in this one file. Names follow
 * `switchyard_<thing>_<unit>` with `_total` for counters and `_seconds` for durations
 * (Prometheus naming best practices). Each app instance owns its registry, so several
 * gateways in one process (tests) do not collide.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

export interface Metrics {
  readonly registry: Registry;
  readonly requests: Counter<'model' | 'upstream' | 'status' | 'outcome'>;
  readonly requestDuration: Histogram<'model' | 'upstream' | 'stream'>;
  readonly ttft: Histogram<'model' | 'upstream'>;
  readonly tokens: Counter<'model' | 'upstream' | 'kind'>;
  readonly cost: Counter<'model' | 'upstream'>;
  readonly upstreamErrors: Counter<'upstream' | 'class'>;
  readonly inFlight: Gauge<'model'>;
}

/** Creates the registry and all metrics. */
export function createMetrics(): Metrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'switchyard_' });
  const registers = [registry];
  return {
    registry,
    requests: new Counter({
      name: 'switchyard_requests_total',
      help: 'Finished client requests by public model, upstream, HTTP status and outcome (ok, client_error, upstream_error, client_aborted).',
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
      help: 'Tokens by kind: input (uncached), cached_input, output, reasoning (a part of output).',
      labelNames: ['model', 'upstream', 'kind'],
      registers,
    }),
    cost: new Counter({
      name: 'switchyard_cost_usd_total',
      help: 'Spend in USD computed from upstream-reported usage and the configured price table.',
      labelNames: ['model', 'upstream'],
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
  };
}
