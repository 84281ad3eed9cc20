/**
 * The record of one finished request: what the log line, the metrics, the console's recent
 * requests (and later the ledger) are made from. Built once, by `pipeline/finish.ts`, when
 * the request ends, whatever the outcome; nothing else writes one.
 */
import type { Usage } from '../usage/usage.js';
import type { Tags } from './tags.js';

/**
 * How a request ended, from the client's side, by who ended it (docs/observability.md, "The request log line"):
 * - `ok`: the answer was delivered (a stream's terminal event was written);
 * - `client_error`: the request was refused for what it asked (bad body, unknown model, the
 *   key's own limits or budget), or an upstream refused it for the same reasons;
 * - `upstream_error`: the upstream failed (an error answer, a broken stream, a timeout);
 * - `gateway_shed`: the gateway turned the call away to protect capacity (a reasoning burst
 *   shed with 429, a full or timed-out concurrency queue);
 * - `gateway_refused`: the gateway's own policy declined it (the retry budget is spent, every
 *   account left has spent its budget);
 * - `gateway_error`: the gateway failed or was shutting down;
 * - `client_aborted`: the client left before the answer was delivered (499).
 */
export type Outcome = 'ok' | 'client_error' | 'upstream_error' | 'gateway_shed' | 'gateway_refused' | 'gateway_error' | 'client_aborted';

export interface RequestRecord {
  readonly requestId: string;
  /** The client API the request came in on (`chat`, `responses`, `messages`; `responses/compact` for a compaction); null outside the model routes. */
  readonly api: string | null;
  /** The client key's configured name (never the key); null when the request had no valid key. */
  readonly key: string | null;
  /**
   * Public model that served (or was last tried), else the configured model the client's id
   * names (its aliases resolved) even when it was refused; null when the id names none.
   */
  readonly model: string | null;
  /**
   * The `model` id as the client sent it (an alias, a dated snapshot, an unknown id; at most
   * 256 characters), on every request whose body the pipeline took; null for a body that was
   * refused before (invalid JSON or shape) and outside the model routes.
   */
  readonly requestedModel: string | null;
  readonly upstream: string | null;
  readonly upstreamModel: string | null;
  readonly stream: boolean;
  /** HTTP status sent (200 for a stream that started, even if it later ended with an error event); 499 when the client left before the answer was delivered. */
  readonly status: number;
  readonly outcome: Outcome;
  /** The last upstream failure's class (`errors/classify.ts`), when one decided the outcome. */
  readonly errorClass: string | null;
  /** Epoch ms when the request arrived. */
  readonly startedAt: number;
  /** Arrival to end of response, ms. */
  readonly durationMs: number;
  /** Arrival to the first event sent to the client, ms; streams only. */
  readonly ttftMs: number | null;
  readonly usage: Usage;
  /** True when the upstream reported no usage and the gateway counted it (tokenizer). */
  readonly usageEstimated: boolean;
  /** USD, from `usage` at the serving target's price. */
  readonly costUsd: number;
  /** Upstream attempts made (0 when none was). */
  readonly attempts: number;
  /** `primary->fallback` when a fallback model served or was tried. */
  readonly fallback: string | null;
  /** `model->fallback`, `queued:<ms>` or `rejected` when the burst shedder acted. */
  readonly shed: string | null;
  /** Who and why (record/tags.ts): the key's metadata and the `x-switchyard-tags` header. */
  readonly tags: Tags;
  /** Cache affinity (router/affinity.ts): the session's turn served on its account, moved off it, or its first; absent without a session. */
  readonly cache?: 'warm' | 'moved' | 'cold';
  /** `websocket` for a turn of a Responses WebSocket (routes/responses-ws.ts); else an HTTP request. */
  readonly transport?: 'http' | 'websocket';
}

/** Where finished records go besides metrics, the log and the console (the ledger). */
export interface RecordSink {
  /** Takes the record; never throws, never blocks the request. */
  add(rec: RequestRecord): void;
}
