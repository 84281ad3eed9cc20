/**
 * `GET /admin/spend`'s question, read from its query string and turned into one SQL
 * statement: spend, requests and tokens per period and per group. The whole hours of the
 * range are read from the hourly rollup (ledger/rollup.ts), the part-hours at its ends from
 * `switchyard_requests`, so a month costs about as much as its rollup rows, not its requests.
 * Every group and granularity is from a fixed list and every value is a bind parameter, so
 * nothing a caller sends becomes SQL text.
 */
import { TAG_NAME_CHARS } from '../config/schema-tags.js';
import { MEASURES } from './rollup.js';

/** Groups by column; `tag:<name>` groups by one tag's value. */
const COLUMNS: Readonly<Record<string, string>> = {
  key: 'key_name',
  model: 'model',
  requested_model: 'requested_model',
  upstream: 'upstream',
  api: 'api',
  outcome: 'outcome',
};
/** The sums every answer row carries: the rollup's measures (ledger/rollup.ts). */
const SUMS = MEASURES.map(([c]) => c);
/** The same sums over request rows. */
const ROW_SUMS = MEASURES.map(([c, agg]) => `${agg} AS ${c}`);
const GRANULARITIES = ['hour', 'day', 'month', 'none'] as const;
export type Granularity = (typeof GRANULARITIES)[number];
const TAG = new RegExp(`^tag:(${TAG_NAME_CHARS})$`);
const MAX_GROUPS = 4;
const MAX_RANGE_MS = 400 * 86_400_000;
const HOUR = 3_600_000;
/** Rows returned at most; `truncated: true` says more groups matched. */
export const MAX_ROWS = 10_000;

export interface SpendQuery {
  readonly from: Date;
  readonly to: Date;
  readonly granularity: Granularity;
  /** As asked (`key`, `model`, `tag:repo` …), in order. */
  readonly groupBy: readonly string[];
  readonly sql: string;
  readonly params: readonly unknown[];
}

/** A query-string problem, with a message that says what to send. */
export class SpendQueryError extends Error {
  constructor(
    message: string,
    readonly param: string,
  ) {
    super(message);
  }
}

/**
 * ISO-8601 (RFC 3339) as `from`/`to` take it: a date, or a date and time with an optional
 * UTC offset (none is UTC). The offset's sign may be a space: an unencoded `+` in a query
 * string is decoded to one (WHATWG URL, application/x-www-form-urlencoded).
 */
const ISO = /^(\d{4})-(\d{2})-(\d{2})(?:[Tt](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?(?:([Zz])|([+\- ])(\d{2}):?(\d{2}))?)?$/;

/** A time as `from`/`to` give it, or null when it is not one (not ISO-8601, or no such day or time). */
function isoTime(text: string): Date | null {
  const m = ISO.exec(text);
  if (!m) return null;
  const [y, mo, d, h = 0, mi = 0, sec = 0] = m.slice(1, 7).map((x) => (x === undefined ? undefined : Number(x)));
  const ms = Number((m[7] ?? '').padEnd(3, '0').slice(0, 3));
  const offset = m[9] ? (m[9] === '-' ? -1 : 1) * (Number(m[10]) * 60 + Number(m[11])) : 0;
  if (y! < 1 || h > 23 || mi > 59 || sec > 59 || Number(m[10] ?? 0) > 23 || Number(m[11] ?? 0) > 59) return null;
  const t = Date.UTC(y!, mo! - 1, d!, h, mi, sec, ms);
  const day = new Date(t);
  if (day.getUTCFullYear() !== y || day.getUTCMonth() !== mo! - 1 || day.getUTCDate() !== d) return null; // 2026-02-31
  return new Date(t - offset * 60_000);
}

function time(v: unknown, name: string, fallback: Date): Date {
  if (v === undefined || v === '') return fallback;
  const d = typeof v === 'string' ? isoTime(v.trim()) : null;
  if (d === null) {
    throw new SpendQueryError(
      `${name} must be an ISO-8601 date or time (2026-12-01, 2026-12-01T08:00:00Z or 2026-12-01T08:00:00%2B05:30; no offset is UTC).`,
      name,
    );
  }
  return d;
}

/**
 * Reads `group_by` (a comma-separated list, or the parameter repeated), `from`, `to` (ISO-8601;
 * see {@link ISO}) and `granularity` (defaults: no groups, the last 7 days up to now, `day`)
 * and builds the statement.
 * @throws SpendQueryError for an unknown group or granularity, a bad time, `from` not before
 *         `to`, more than 4 groups or a range over 400 days.
 */
export function spendQuery(q: Record<string, unknown>, now = Date.now()): SpendQuery {
  const to = time(q['to'], 'to', new Date(now));
  const from = time(q['from'], 'from', new Date(to.getTime() - 7 * 86_400_000));
  if (from >= to) throw new SpendQueryError('from must be before to.', 'from');
  if (to.getTime() - from.getTime() > MAX_RANGE_MS) throw new SpendQueryError('The range from..to is at most 400 days.', 'from');
  const g = q['granularity'] ?? 'day';
  if (typeof g !== 'string' || !(GRANULARITIES as readonly string[]).includes(g)) {
    throw new SpendQueryError(`granularity must be one of ${GRANULARITIES.join(', ')}.`, 'granularity');
  }
  const granularity = g as Granularity;
  // A repeated group_by (group_by=key&group_by=model) counts as one list.
  const gb = q['group_by'];
  const raw = typeof gb === 'string' ? gb : Array.isArray(gb) && gb.every((x) => typeof x === 'string') ? gb.join(',') : '';
  const groupBy = raw
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  if (groupBy.length > MAX_GROUPS) throw new SpendQueryError(`group_by takes at most ${MAX_GROUPS} groups.`, 'group_by');
  if (new Set(groupBy).size !== groupBy.length) throw new SpendQueryError('group_by names a group twice.', 'group_by');

  // Whole hours [a, b) come from the rollup, the part-hours at either end from the rows.
  let a = Math.ceil(from.getTime() / HOUR) * HOUR;
  let b = Math.floor(to.getTime() / HOUR) * HOUR;
  if (a >= b) a = b = to.getTime();
  const params: unknown[] = [from.toISOString(), to.toISOString(), new Date(a).toISOString(), new Date(b).toISOString()];
  const rollup: string[] = [];
  const rows: string[] = [];
  const names: string[] = [];
  if (granularity !== 'none') {
    names.push('period');
    params.push(granularity);
    rollup.push(`date_trunc($${params.length}, hour, 'UTC') AS period`);
    rows.push(`date_trunc($${params.length}, ts, 'UTC') AS period`);
  }
  groupBy.forEach((name, i) => {
    const col = COLUMNS[name];
    const tag = TAG.exec(name);
    names.push(`g${i}`);
    if (col) {
      rollup.push(`NULLIF(${col}, '') AS g${i}`);
      rows.push(`${col} AS g${i}`);
    } else if (tag) {
      params.push(tag[1]);
      rollup.push(`tags->>$${params.length} AS g${i}`);
      rows.push(`tags->>$${params.length} AS g${i}`);
    } else {
      throw new SpendQueryError(`Unknown group "${name.slice(0, 40)}" in group_by: use ${Object.keys(COLUMNS).join(', ')} or tag:<name>.`, 'group_by');
    }
  });
  const keys = names.map((_, i) => String(i + 1));
  const groupSql = keys.length > 0 ? ` GROUP BY ${keys.join(', ')}` : '';
  const inner = [
    `SELECT ${[...rollup, ...SUMS.map((c) => `sum(${c}) AS ${c}`)].join(', ')} FROM switchyard_spend_hourly WHERE hour >= $3 AND hour < $4${groupSql}`,
    ...['ts >= $1 AND ts < $3', 'ts >= $4 AND ts < $2'].map(
      (where) => `SELECT ${[...rows, ...ROW_SUMS].join(', ')} FROM switchyard_requests WHERE ${where}${groupSql}`,
    ),
  ];
  const sql = [
    // The totals over every group, counted before LIMIT cuts the rows (window sums run after GROUP BY).
    `SELECT ${[...names, ...SUMS.map((c) => `sum(${c}) AS ${c}`), 'sum(sum(requests)) OVER () AS total_requests', 'sum(sum(cost_usd)) OVER () AS total_cost_usd'].join(', ')}`,
    `FROM (${inner.join(' UNION ALL ')}) u`,
    keys.length > 0 ? `GROUP BY ${keys.join(', ')} ORDER BY ${granularity !== 'none' ? '1, ' : ''}cost_usd DESC` : '',
    `LIMIT ${MAX_ROWS + 1}`,
  ].join(' ');
  return { from, to, granularity, groupBy, sql, params };
}

/** The totals over all the groups, truncated ones included, from the answer's rows (zero when there are none). */
export function spendTotals(rows: readonly Record<string, unknown>[]): { requests: number; cost_usd: number } {
  return { requests: Number(rows[0]?.['total_requests'] ?? 0), cost_usd: Number(rows[0]?.['total_cost_usd'] ?? 0) };
}

/** One result row as the API answers it: period (ISO), each group by its name, the sums as numbers. */
export function spendRow(q: SpendQuery, r: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (q.granularity !== 'none') out['period'] = r['period'] instanceof Date ? r['period'].toISOString() : r['period'];
  q.groupBy.forEach((name, i) => (out[name] = r[`g${i}`] ?? null));
  for (const k of SUMS) {
    out[k] = Number(r[k] ?? 0);
  }
  return out;
}
