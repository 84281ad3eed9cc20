/**
 * The record of one finished request: what the log line, the metrics, the console's recent
 * requests (and later the ledger) are made from. Built once, by `pipeline/finish.ts`, when
 * the request ends, whatever the outcome; nothing else writes one.
 */
import type { Usage } from '../usage/usage.js';
import type { Tags } from './tags.js';

/** How a request ended, from the client's side. */
export type Outcome = 'ok' | 'client_error' | 'upstream_error' | 'client_aborted' | 'gateway_error';

export interface RequestRecord {
  readonly requestId: string;
  /** The client API the request came in on (`chat`, `responses`, `messages`); null outside the model routes. */
  readonly api: string | null;
  /** The client key's configured name (never the key); null when the request had no valid key. */
  readonly key: string | null;
  /** Public model that served (or was last tried); null when the request named no usable model. */
  readonly model: string | null;
  /** Public model the client asked for (differs from `model` when a fallback or a shed served); null as `model`. */
  readonly requestedModel: string | null;
  readonly upstream: string | null;
  readonly upstreamModel: string | null;
  readonly stream: boolean;
  /** HTTP status sent (200 for a stream that started, even if it later ended with an error event); 499 when the client left first. */
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
}

/** Where finished records go besides metrics, the log and the console (the ledger). */
export interface RecordSink {
  /** Takes the record; never throws, never blocks the request. */
  add(rec: RequestRecord): void;
}
