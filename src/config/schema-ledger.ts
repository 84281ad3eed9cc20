/**
 * The `ledger:` block: where every finished request is written as one row (PostgreSQL), how
 * rows are batched, where they wait while PostgreSQL is down, and how long they are kept.
 */
import { Type } from '@sinclair/typebox';

export const LedgerSchema = Type.Object(
  {
    /** `postgres://user[:password]@host:port/db`; `DATABASE_URL` is used when unset; neither: no ledger. */
    postgres_url: Type.Optional(Type.String()),
    /** Rows per INSERT; a batch is written when it is full or `flush_ms` after its first row. */
    batch_rows: Type.Integer({ minimum: 1, maximum: 10_000, default: 500 }),
    /** How long a batch waits for more rows; at most `durable_ms / 4` whatever is set. */
    flush_ms: Type.Integer({ minimum: 10, maximum: 60_000, default: 250 }),
    /**
     * The durability bound: a finished request's row is in PostgreSQL or appended to the spool
     * file at most this long after the request finished (a row not confirmed by PostgreSQL
     * `durable_ms / 2` after it was queued is spooled), so `kill -9` loses no older row.
     */
    durable_ms: Type.Integer({ minimum: 100, maximum: 60_000, default: 1_000 }),
    /**
     * The file rows wait in while PostgreSQL is unreachable, replayed (each row once) when it
     * is back. Default: `<tmpdir>/switchyard-ledger-<port>.jsonl`. One file per replica; with
     * `server.workers` one per worker, `-w<n>` inserted before `.jsonl` (or appended).
     */
    spool_path: Type.Optional(Type.String({ minLength: 1 })),
    /** Past this size new rows are dropped (counted in `switchyard_ledger_rows_total{result="dropped"}`). */
    spool_max_bytes: Type.Integer({ minimum: 1_024, default: 268_435_456 }),
    /** Days of rows kept: older daily partitions are dropped. 0 keeps everything. */
    retention_days: Type.Integer({ minimum: 0, default: 90 }),
    /** Between tries to reach PostgreSQL again while rows are spooled. */
    retry_ms: Type.Integer({ minimum: 100, maximum: 600_000, default: 5_000 }),
  },
  { additionalProperties: false, default: {} },
);
