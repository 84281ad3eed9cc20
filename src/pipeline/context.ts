/**
 * The per-request record: filled in as the request moves through the pipeline and
 * emitted exactly once (metrics + one log line) when it ends, whatever the outcome.
 */
import type { Usage } from './usage.js';

export type Outcome = 'ok' | 'client_error' | 'upstream_error' | 'client_aborted' | 'gateway_error';

export interface RequestRecord {
  requestId: string;
  key: string | null;
  /** Public model name the client asked for (only once it is known to exist). */
  model: string | null;
  upstream: string | null;
  upstreamModel: string | null;
  stream: boolean;
  status: number;
  outcome: Outcome;
  /** Upstream failure class, when one happened. */
  errorClass: string | null;
  startedAt: number;
  durationMs: number;
  /** Request start to first event sent to the client, streams only. */
  ttftMs: number | null;
  usage: Usage;
  /** True when usage was not reported by the upstream and was counted by the gateway. */
  usageEstimated: boolean;
  costUsd: number;
  attempts: number;
}

/** A fresh record for a request that just arrived. */
export function newRecord(requestId: string, key: string | null, startedAt: number): RequestRecord {
  return {
    requestId,
    key,
    model: null,
    upstream: null,
    upstreamModel: null,
    stream: false,
    status: 0,
    outcome: 'ok',
    errorClass: null,
    startedAt,
    durationMs: 0,
    ttftMs: null,
    usage: { input: 0, cached: 0, output: 0, reasoning: 0 },
    usageEstimated: false,
    costUsd: 0,
    attempts: 0,
  };
}
