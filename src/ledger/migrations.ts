/**
 * The ledger's schema, as numbered migrations applied in order by the gateway itself. Each
 * runs once per database, in one transaction, under a transaction-scoped advisory lock so
 * replicas starting together do not race; `switchyard_ledger_migrations` remembers which ran.
 * A migration is never edited once released: a change is a new number.
 *
 * `switchyard_requests` is partitioned by range on `ts`, one partition per UTC day
 * (ledger/partitions.ts creates them ahead and drops those past retention), so a month at
 * 1k req/s is ~30 partitions of ~86M rows each, and a query for a few days reads only those.
 */
import type { PoolClient } from 'pg';

/** Any number: the advisory lock all ledger schema changes take (migrations and partitions). */
export const SCHEMA_LOCK = 0x5377_4c67;

export const MIGRATIONS: readonly { readonly version: number; readonly name: string; readonly sql: string }[] = [
  {
    version: 1,
    name: 'requests',
    sql: `
CREATE TABLE switchyard_requests (
  id uuid NOT NULL,
  ts timestamptz NOT NULL,
  request_id text NOT NULL,
  key_name text,
  tags jsonb NOT NULL DEFAULT '{}',
  api text,
  requested_model text,
  model text,
  upstream text,
  upstream_model text,
  stream boolean NOT NULL,
  status smallint NOT NULL,
  outcome text NOT NULL,
  error_class text,
  attempts smallint NOT NULL,
  fallback text,
  shed text,
  ttft_ms integer,
  duration_ms integer NOT NULL,
  input_tokens bigint NOT NULL,
  cached_tokens bigint NOT NULL,
  cache_write_tokens bigint NOT NULL,
  output_tokens bigint NOT NULL,
  reasoning_tokens bigint NOT NULL,
  tokens_estimated boolean NOT NULL,
  cost_usd double precision NOT NULL,
  PRIMARY KEY (ts, id)
) PARTITION BY RANGE (ts);
CREATE INDEX switchyard_requests_key_ts ON switchyard_requests (key_name, ts);
CREATE INDEX switchyard_requests_model_ts ON switchyard_requests (model, ts);
CREATE INDEX switchyard_requests_tags ON switchyard_requests USING gin (tags);
`,
  },
  {
    // The hourly rollup (ledger/rollup.ts), filled from the rows already in the ledger.
    version: 2,
    name: 'spend_hourly',
    sql: `
CREATE TABLE switchyard_spend_hourly (
  hour timestamptz NOT NULL,
  key_name text NOT NULL,
  model text NOT NULL,
  requested_model text NOT NULL,
  upstream text NOT NULL,
  api text NOT NULL,
  outcome text NOT NULL,
  tags jsonb NOT NULL,
  requests bigint NOT NULL,
  cost_usd double precision NOT NULL,
  input_tokens bigint NOT NULL,
  cached_tokens bigint NOT NULL,
  cache_write_tokens bigint NOT NULL,
  output_tokens bigint NOT NULL,
  reasoning_tokens bigint NOT NULL,
  shed bigint NOT NULL,
  fallback bigint NOT NULL,
  PRIMARY KEY (hour, key_name, model, requested_model, upstream, api, outcome, tags)
);
INSERT INTO switchyard_spend_hourly
SELECT date_trunc('hour', ts, 'UTC'), coalesce(key_name, ''), coalesce(model, ''), coalesce(requested_model, ''), coalesce(upstream, ''),
       coalesce(api, ''), outcome, tags, count(*), sum(cost_usd), sum(input_tokens), sum(cached_tokens), sum(cache_write_tokens),
       sum(output_tokens), sum(reasoning_tokens), count(*) FILTER (WHERE shed IS NOT NULL), count(*) FILTER (WHERE fallback IS NOT NULL)
FROM switchyard_requests GROUP BY 1, 2, 3, 4, 5, 6, 7, 8;
`,
  },
  {
    // The part of cache_write_tokens written to the provider's 1-hour prompt cache (Anthropic's
    // usage.cache_creation.ephemeral_1h_input_tokens), priced apart (price.cache_write_1h);
    // cache_write_tokens stays every write, so cache_write_tokens - cache_write_1h_tokens is the
    // 5-minute part. Rows before this migration read 0 (their writes were booked as 5-minute).
    version: 3,
    name: 'cache_write_1h',
    sql: `
ALTER TABLE switchyard_requests ADD COLUMN cache_write_1h_tokens bigint NOT NULL DEFAULT 0;
ALTER TABLE switchyard_spend_hourly ADD COLUMN cache_write_1h_tokens bigint NOT NULL DEFAULT 0;
`,
  },
];

/**
 * Brings the database's ledger schema up to the newest migration.
 * @returns the versions applied now (empty when it was up to date).
 * @throws the PostgreSQL error of a failed migration (its transaction is rolled back).
 */
export async function migrate(client: PoolClient): Promise<number[]> {
  await client.query('BEGIN');
  try {
    await client.query('SELECT pg_advisory_xact_lock($1)', [SCHEMA_LOCK]);
    await client.query(
      'CREATE TABLE IF NOT EXISTS switchyard_ledger_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())',
    );
    const done = await client.query<{ version: number }>('SELECT version FROM switchyard_ledger_migrations');
    const have = new Set(done.rows.map((r) => r.version));
    const applied: number[] = [];
    for (const m of MIGRATIONS) {
      if (have.has(m.version)) continue;
      await client.query(m.sql);
      await client.query('INSERT INTO switchyard_ledger_migrations (version, name) VALUES ($1, $2)', [m.version, m.name]);
      applied.push(m.version);
    }
    await client.query('COMMIT');
    return applied;
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw err;
  }
}
