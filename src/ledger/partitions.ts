/**
 * Daily partitions of `switchyard_requests`: created before rows of a new UTC day are
 * written, and dropped once past `ledger.retention_days`. Partition names carry their day
 * (`switchyard_requests_20261202`), so retention reads the day from the name.
 */
import type { PoolClient } from 'pg';
import { SCHEMA_LOCK } from './migrations.js';
import { DELETE_EXPIRED } from './rollup.js';

const DAY_MS = 86_400_000;
const PREFIX = 'switchyard_requests_';

/** `YYYYMMDD` of the UTC day holding `ms`. */
export function dayName(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10).replaceAll('-', '');
}

/** Start of the UTC day holding `ms`, epoch ms. */
export function dayStart(ms: number): number {
  return Math.floor(ms / DAY_MS) * DAY_MS;
}

/**
 * Creates the partitions for the UTC days holding `times` (epoch ms) that do not exist yet.
 * Takes the schema lock, so two replicas creating the same day do not collide.
 */
export async function ensurePartitions(client: PoolClient, times: Iterable<number>): Promise<void> {
  const days = [...new Set([...times].map(dayStart))].sort((a, b) => a - b);
  if (days.length === 0) return;
  await client.query('BEGIN');
  try {
    await client.query('SELECT pg_advisory_xact_lock($1)', [SCHEMA_LOCK]);
    for (const d of days) {
      const from = new Date(d).toISOString();
      const to = new Date(d + DAY_MS).toISOString();
      // Names and bounds are made here from numbers, never from client input.
      await client.query(`CREATE TABLE IF NOT EXISTS ${PREFIX}${dayName(d)} PARTITION OF switchyard_requests FOR VALUES FROM ('${from}') TO ('${to}')`);
    }
    await client.query('COMMIT');
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw err;
  }
}

/**
 * Drops the daily partitions whose whole day is older than `retentionDays` before `now`,
 * and the hourly rollup's rows of those days (ledger/rollup.ts).
 * @returns the names dropped.
 */
export async function dropExpired(client: PoolClient, retentionDays: number, now = Date.now()): Promise<string[]> {
  if (retentionDays <= 0) return [];
  const keepFromMs = dayStart(now) - (retentionDays - 1) * DAY_MS;
  const keepFrom = dayName(keepFromMs);
  await client.query(DELETE_EXPIRED, [new Date(keepFromMs).toISOString()]);
  const res = await client.query<{ name: string }>(
    `SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid JOIN pg_class p ON p.oid = i.inhparent WHERE p.relname = 'switchyard_requests'`,
  );
  const dropped: string[] = [];
  for (const { name } of res.rows) {
    const day = name.slice(PREFIX.length);
    if (!/^\d{8}$/.test(day) || day >= keepFrom) continue;
    await client.query(`DROP TABLE IF EXISTS ${name}`);
    dropped.push(name);
  }
  return dropped;
}
