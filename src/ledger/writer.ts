/**
 * Writes ledger rows to PostgreSQL: one INSERT per batch, the columns sent as arrays and
 * unnested (`INSERT … SELECT * FROM unnest($1::uuid[], …)`), so a batch of any size is one
 * statement with one parameter per column. `ON CONFLICT DO NOTHING` on the primary key (ts, id) makes a
 * re-sent batch (a timed-out INSERT that landed anyway, a replayed spool) count once. The
 * same statement adds the rows it inserted to the hourly rollup (ledger/rollup.ts).
 */
import type { Pool, PoolClient } from 'pg';
import { sqlState, withClient } from './checkout.js';
import { dayStart, ensurePartitions } from './partitions.js';
import { withRollup } from './rollup.js';
import { ADDED_COLUMN_DEFAULTS, COLUMNS, type LedgerRow } from './row.js';

const INSERT = withRollup(
  `INSERT INTO switchyard_requests (${COLUMNS.map(([c]) => c).join(', ')}) SELECT * FROM unnest(${COLUMNS.map(([, t], i) => `$${i + 1}::${t}[]`).join(', ')}) ON CONFLICT DO NOTHING`,
);

export class RowWriter {
  /** UTC day starts whose partition this process created or saw. */
  private readonly days = new Set<number>();

  constructor(private readonly pool: Pool) {}

  /** Writes one batch. @throws the PostgreSQL or network error; nothing is half-written (one statement). */
  async write(rows: readonly LedgerRow[]): Promise<void> {
    if (rows.length === 0) return;
    const params = COLUMNS.map(([c, t]) => rows.map((r) => (t === 'jsonb' ? JSON.stringify(r[c]) : (r[c] ?? ADDED_COLUMN_DEFAULTS[c] ?? null))));
    await withClient(this.pool, async (client) => {
      for (let tries = 0; ; tries++) {
        await this.partitionsFor(client, rows);
        try {
          await client.query(INSERT, params);
          return;
        } catch (err) {
          // 23514 "no partition for row": dropped behind this process's back; make it again, once.
          if (sqlState(err) !== '23514' || tries > 0) throw err;
          this.days.clear();
        }
      }
    });
  }

  private async partitionsFor(client: PoolClient, rows: readonly LedgerRow[]): Promise<void> {
    const fresh = rows.map((r) => Date.parse(r.ts)).filter((t) => !this.days.has(dayStart(t)));
    if (fresh.length === 0) return;
    await ensurePartitions(client, fresh);
    for (const t of fresh) this.days.add(dayStart(t));
  }
}
