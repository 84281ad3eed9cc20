/**
 * One ledger row: a finished request's record flattened to the columns of
 * `switchyard_requests` (ledger/migrations.ts). The row id is made here, once, so a row
 * replayed from the spool after a timed-out INSERT that landed anyway is the same row
 * (`ON CONFLICT DO NOTHING` keeps it once). Prompts and replies are never part of a record,
 * so never part of a row; the key is its configured NAME.
 */
import { randomUUID } from 'node:crypto';
import type { RequestRecord } from '../record/request.js';
import { cacheWrites } from '../usage/usage.js';

export interface LedgerRow {
  /** UUID, the row's identity (with `ts`, the primary key). */
  readonly id: string;
  /** ISO-8601 UTC time the request arrived; picks the daily partition. */
  readonly ts: string;
  readonly request_id: string;
  readonly key_name: string | null;
  /** Tag name -> value (record/tags.ts), stored as jsonb. */
  readonly tags: Readonly<Record<string, string>>;
  readonly api: string | null;
  readonly requested_model: string | null;
  readonly model: string | null;
  readonly upstream: string | null;
  readonly upstream_model: string | null;
  readonly stream: boolean;
  readonly status: number;
  readonly outcome: string;
  readonly error_class: string | null;
  readonly attempts: number;
  readonly fallback: string | null;
  readonly shed: string | null;
  readonly ttft_ms: number | null;
  readonly duration_ms: number;
  readonly input_tokens: number;
  /** Prompt tokens read from the provider's prompt cache (a part of input_tokens). */
  readonly cached_tokens: number;
  /** Prompt tokens written to the provider's prompt cache, 5-minute and 1-hour (a part of input_tokens). */
  readonly cache_write_tokens: number;
  /** The part of cache_write_tokens written to the 1-hour cache (migration 3). */
  readonly cache_write_1h_tokens: number;
  readonly output_tokens: number;
  readonly reasoning_tokens: number;
  readonly tokens_estimated: boolean;
  /** USD. */
  readonly cost_usd: number;
}

/** Column names and their PostgreSQL array types, in INSERT order (ledger/writer.ts unnests them). */
export const COLUMNS: readonly (readonly [keyof LedgerRow, string])[] = [
  ['id', 'uuid'],
  ['ts', 'timestamptz'],
  ['request_id', 'text'],
  ['key_name', 'text'],
  ['tags', 'jsonb'],
  ['api', 'text'],
  ['requested_model', 'text'],
  ['model', 'text'],
  ['upstream', 'text'],
  ['upstream_model', 'text'],
  ['stream', 'boolean'],
  ['status', 'smallint'],
  ['outcome', 'text'],
  ['error_class', 'text'],
  ['attempts', 'smallint'],
  ['fallback', 'text'],
  ['shed', 'text'],
  ['ttft_ms', 'integer'],
  ['duration_ms', 'integer'],
  ['input_tokens', 'bigint'],
  ['cached_tokens', 'bigint'],
  ['cache_write_tokens', 'bigint'],
  ['cache_write_1h_tokens', 'bigint'],
  ['output_tokens', 'bigint'],
  ['reasoning_tokens', 'bigint'],
  ['tokens_estimated', 'boolean'],
  ['cost_usd', 'double precision'],
];

/**
 * Values of columns added after a release, for rows spooled by a gateway that predates them
 * (ledger/spool.ts replays a spool file as written): the migration's own default.
 */
export const ADDED_COLUMN_DEFAULTS: Readonly<Partial<Record<keyof LedgerRow, unknown>>> = { cache_write_1h_tokens: 0 };

/** Flattens a finished request's record into a new row (a fresh id). */
export function ledgerRow(rec: RequestRecord): LedgerRow {
  const u = rec.usage;
  return {
    id: randomUUID(),
    ts: new Date(rec.startedAt).toISOString(),
    request_id: rec.requestId,
    key_name: rec.key,
    tags: rec.tags,
    api: rec.api,
    requested_model: rec.requestedModel,
    model: rec.model,
    upstream: rec.upstream,
    upstream_model: rec.upstreamModel,
    stream: rec.stream,
    status: rec.status,
    outcome: rec.outcome,
    error_class: rec.errorClass,
    attempts: rec.attempts,
    fallback: rec.fallback,
    shed: rec.shed,
    ttft_ms: rec.ttftMs === null ? null : Math.round(rec.ttftMs),
    duration_ms: Math.round(rec.durationMs),
    input_tokens: u.input,
    cached_tokens: u.cached,
    cache_write_tokens: u.cacheWrite ?? 0,
    cache_write_1h_tokens: cacheWrites(u).h1,
    output_tokens: u.output,
    reasoning_tokens: u.reasoning,
    tokens_estimated: rec.usageEstimated,
    cost_usd: rec.costUsd,
  };
}
