/**
 * The hourly rollup `switchyard_spend_hourly`: one row per UTC hour and (key, model,
 * requested model, upstream, API, outcome, tag set) with the sums `/admin/spend` reports, so
 * a month is read from ~hours × combinations rows instead of one row per request.
 *
 * It is kept by the same statement that writes a batch ({@link withRollup}): the rows the
 * INSERT really added (`RETURNING`, so a replayed or re-sent row, skipped by `ON CONFLICT DO
 * NOTHING`, adds nothing) are summed and upserted into the rollup. One statement is atomic:
 * the rollup never counts a row the ledger does not hold, nor misses one it does.
 *
 * Dimension columns are `NOT NULL` ('' for "none", read back as null) so the primary key
 * treats "no key" as one group on every PostgreSQL version (NULLS NOT DISTINCT is 15+ only).
 */

/** The rollup's dimensions: column of `switchyard_spend_hourly` -> expression over a request row. */
export const DIMENSIONS: readonly (readonly [string, string])[] = [
  ['key_name', "coalesce(key_name, '')"],
  ['model', "coalesce(model, '')"],
  ['requested_model', "coalesce(requested_model, '')"],
  ['upstream', "coalesce(upstream, '')"],
  ['api', "coalesce(api, '')"],
  ['outcome', 'outcome'],
  ['tags', 'tags'],
];

/** The rollup's sums: column -> aggregate over request rows. */
export const MEASURES: readonly (readonly [string, string])[] = [
  ['requests', 'count(*)'],
  ['cost_usd', 'sum(cost_usd)'],
  ['input_tokens', 'sum(input_tokens)'],
  ['cached_tokens', 'sum(cached_tokens)'],
  ['cache_write_tokens', 'sum(cache_write_tokens)'],
  ['cache_write_1h_tokens', 'sum(cache_write_1h_tokens)'],
  ['output_tokens', 'sum(output_tokens)'],
  ['reasoning_tokens', 'sum(reasoning_tokens)'],
  ['shed', 'count(*) FILTER (WHERE shed IS NOT NULL)'],
  ['fallback', 'count(*) FILTER (WHERE fallback IS NOT NULL)'],
];

const DIM_COLS = DIMENSIONS.map(([c]) => c);
const MEASURE_COLS = MEASURES.map(([c]) => c);
const GROUP_KEYS = Array.from({ length: DIMENSIONS.length + 1 }, (_, i) => String(i + 1)).join(', ');

/**
 * The upsert that sums the request rows of relation `source` (a table or a CTE of request
 * rows) into the rollup. Rows are sent in primary-key order, so two replicas updating the
 * same rollup rows lock them in the same order (no deadlock cycle between two batches).
 */
export function rollupFrom(source: string): string {
  return [
    `INSERT INTO switchyard_spend_hourly (hour, ${DIM_COLS.join(', ')}, ${MEASURE_COLS.join(', ')})`,
    `SELECT date_trunc('hour', ts, 'UTC'), ${DIMENSIONS.map(([, e]) => e).join(', ')}, ${MEASURES.map(([, e]) => e).join(', ')}`,
    `FROM ${source} GROUP BY ${GROUP_KEYS} ORDER BY ${GROUP_KEYS}`,
    `ON CONFLICT (hour, ${DIM_COLS.join(', ')}) DO UPDATE SET`,
    MEASURE_COLS.map((c) => `${c} = switchyard_spend_hourly.${c} + EXCLUDED.${c}`).join(', '),
  ].join(' ');
}

/**
 * Wraps an `INSERT INTO switchyard_requests …` (without RETURNING) so the same statement
 * also adds the rows it inserted to the rollup.
 */
export function withRollup(insert: string): string {
  return `WITH inserted AS (${insert} RETURNING ts, key_name, model, requested_model, upstream, api, outcome, tags, ${[
    'cost_usd',
    'input_tokens',
    'cached_tokens',
    'cache_write_tokens',
    'cache_write_1h_tokens',
    'output_tokens',
    'reasoning_tokens',
    'shed',
    'fallback',
  ].join(', ')}) ${rollupFrom('inserted')}`;
}

/** Deletes rollup hours before `keepFrom` (retention; ledger/partitions.ts drops the request rows). */
export const DELETE_EXPIRED = 'DELETE FROM switchyard_spend_hourly WHERE hour < $1';
