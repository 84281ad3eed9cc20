/**
 * Borrowing a PostgreSQL connection for the ledger. A connection reset while a client is
 * checked out makes `pg` emit `error` on the client; without a listener that would be an
 * uncaught exception, so one is attached for the loan. A client that failed is destroyed on
 * release rather than returned to the pool. Also the pool itself, and the read-only
 * statement the admin API runs.
 */
import { createRequire } from 'node:module';
import type pg from 'pg';

/**
 * The ledger's pool for `url` (a postgres:// URL): two connections, 3 s to connect, 30 s per
 * query. `pg` is loaded here, by the first ledger: a gateway without one never loads it
 * (~3 MB of heap and its startup time).
 */
export function openPool(url: string): pg.Pool {
  const { Pool } = createRequire(import.meta.url)('pg') as typeof pg;
  return new Pool({
    connectionString: url,
    max: 2,
    connectionTimeoutMillis: 3_000,
    idleTimeoutMillis: 10_000,
    query_timeout: 30_000,
    application_name: 'switchyard-ledger',
  });
}

/**
 * Runs `fn` with a client from `pool` and releases it after.
 * @throws what `pool.connect()` or `fn` throws (network, SQLSTATE errors).
 */
export async function withClient<T>(pool: pg.Pool, fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  let broken: Error | undefined;
  const onError = (err: Error): void => {
    broken = err;
  };
  client.on('error', onError);
  try {
    return await fn(client);
  } catch (err) {
    broken ??= err as Error;
    throw err;
  } finally {
    client.off('error', onError);
    // A SQLSTATE error leaves the connection usable; anything else (reset, timeout) does not.
    const reusable = broken === undefined || sqlState(broken) !== null;
    client.release(reusable ? undefined : broken);
  }
}

/** The SQLSTATE of a PostgreSQL error (five characters, e.g. `08006`), or null for any other error (network, timeout). */
export function sqlState(err: unknown): string | null {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) ? code : null;
}

/**
 * Runs one read-only statement (a `READ ONLY` transaction, 10 s statement timeout).
 * @returns the rows as `pg` returns them.
 * @throws the PostgreSQL or network error.
 */
export async function readOnly(pool: pg.Pool, sql: string, params: readonly unknown[]): Promise<Record<string, unknown>[]> {
  return withClient(pool, async (c) => {
    await c.query('BEGIN READ ONLY');
    try {
      await c.query("SET LOCAL statement_timeout = '10s'");
      const res = await c.query(sql, params as unknown[]);
      return res.rows as Record<string, unknown>[];
    } finally {
      await c.query('COMMIT').catch(() => undefined);
    }
  });
}
