/**
 * The usage ledger: every finished request becomes one row in PostgreSQL
 * (`switchyard_requests`), written off the request path in batches. It never blocks or
 * fails a request: `add` only queues. While PostgreSQL cannot be reached the rows go to the
 * spool file (ledger/spool.ts) and are replayed, each row once, when it is back; the backlog
 * is in `/readyz` and `switchyard_ledger_backlog_rows`. A row PostgreSQL has not confirmed
 * `durable_ms / 2` after it was queued is spooled too (ledger/durability.ts), so a killed
 * process loses no row older than `durable_ms`. PostgreSQL refusing the gateway itself (no
 * such database or role, a wrong password, no privilege: ledger/pg-errors.ts) is state
 * `misconfigured`: rows are spooled, and `/readyz` fails naming the problem. The schema is
 * created and migrated by the gateway (ledger/migrations.ts), daily partitions past
 * `retention_days` dropped.
 */
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type pg from 'pg';
import type { FastifyBaseLogger } from 'fastify';
import type { LedgerConfig } from '../config/schema.js';
import type { RecordSink, RequestRecord } from '../record/request.js';
import { openPool, readOnly, withClient } from './checkout.js';
import { DurabilityGuard } from './durability.js';
import { migrate } from './migrations.js';
import { dropExpired } from './partitions.js';
import { classifyPgError, describePgProblem } from './pg-errors.js';
import { ledgerRow, type LedgerRow } from './row.js';
import { Spool } from './spool.js';
import { RowWriter } from './writer.js';

/** `spooling`: PostgreSQL unreachable (an outage); `misconfigured`: it refuses the gateway (see `problem`). */
export type LedgerState = 'connecting' | 'up' | 'spooling' | 'misconfigured' | 'closed';

/** What the ledger reports to metrics and `/readyz`. */
export interface LedgerStatus {
  readonly state: LedgerState;
  /** Rows not yet in PostgreSQL: queued in memory plus spooled. */
  readonly backlogRows: number;
  /** In state `misconfigured`: what PostgreSQL refuses, one line without the password; else null. */
  readonly problem: string | null;
}

/** Counts of rows by what happened to them (metrics/registry.ts `switchyard_ledger_rows_total`). */
export type RowResult = 'written' | 'spooled' | 'replayed' | 'dropped';

const RETENTION_EVERY_MS = 3_600_000;

/** The PostgreSQL URL the ledger uses: `ledger.postgres_url`, else `DATABASE_URL`; null: no ledger. */
export function ledgerUrl(cfg: LedgerConfig, env: NodeJS.ProcessEnv): string | null {
  const url = cfg.postgres_url ?? env['DATABASE_URL'] ?? '';
  return url.trim() === '' ? null : url.trim();
}

export class Ledger implements RecordSink {
  private readonly pool: pg.Pool;
  private readonly writer: RowWriter;
  private readonly spool: Spool;
  private readonly guard: DurabilityGuard;
  private queue: LedgerRow[] = [];
  private st: LedgerState = 'connecting';
  private problem: string | null = null;
  /** A replay of rows the guard spilled while `up` is chained on `busy`. */
  private replayQueued = false;
  private flushTimer: NodeJS.Timeout | null = null;
  private retryTimer: NodeJS.Timeout | null = null;
  private retentionTimer: NodeJS.Timeout | null = null;
  /** The one write (batch, replay, migration) in progress: writes never overlap. */
  private busy: Promise<void> = Promise.resolve();
  /** Called once per row with what happened to it (metrics). */
  onRows: (result: RowResult, n: number) => void = () => undefined;

  /**
   * @param url PostgreSQL connection URL (its password is never logged).
   * @param port the gateway's port (`PORT`), for the default spool path: replicas on one host differ by port (0: the process id).
   * @param worker the worker's slot (1…`server.workers`) when it is one, else 0: workers share the
   *        port, so each spools to its own file (`-w<slot>` before `.jsonl`), kept across its restarts.
   */
  constructor(
    private readonly url: string,
    private readonly cfg: LedgerConfig,
    private readonly log: FastifyBaseLogger,
    port: number,
    worker = 0,
  ) {
    this.pool = openPool(url);
    // An idle client losing its connection is an outage, seen by the next write.
    this.pool.on('error', (err) => this.log.warn({ ledger: 'postgres', code: (err as { code?: string }).code }, 'ledger connection lost'));
    this.writer = new RowWriter(this.pool);
    const path = cfg.spool_path ?? join(tmpdir(), `switchyard-ledger-${port || process.pid}.jsonl`);
    this.spool = new Spool(worker > 0 ? path.replace(/(\.jsonl)?$/, `-w${worker}$1`) : path, cfg.spool_max_bytes);
    this.guard = new DurabilityGuard(cfg.durable_ms / 2, (rows) => this.spill(rows));
  }

  /** Connects, migrates and replays what an earlier run spooled, in the background; never throws. */
  start(): void {
    this.busy = this.busy.then(async () => {
      await this.spool.open().catch((err: unknown) => this.log.warn({ err, spool: this.spool.path }, 'ledger spool cannot be opened'));
      await this.reconnect();
    });
    this.retentionTimer = setInterval(() => void this.retention(), RETENTION_EVERY_MS);
    this.retentionTimer.unref();
  }

  get status(): LedgerStatus {
    return { state: this.st, backlogRows: this.queue.length + this.spool.rows, problem: this.problem };
  }

  /**
   * Queues a finished request's row: written within `min(flush_ms, durable_ms / 4)` or once a
   * batch is full, and in PostgreSQL or the spool within `durable_ms`.
   */
  add(rec: RequestRecord): void {
    if (this.st === 'closed') return;
    const row = ledgerRow(rec);
    this.queue.push(row);
    this.guard.hold(row);
    if (this.queue.length >= this.cfg.batch_rows) this.flushSoon(0);
    else this.flushSoon(Math.min(this.cfg.flush_ms, this.cfg.durable_ms / 4));
  }

  /** Rows still only in memory at the durability bound: to the spool now; replayed once PostgreSQL is `up`. */
  private spill(rows: LedgerRow[]): void {
    const spilled = new Set(rows);
    this.queue = this.queue.filter((r) => !spilled.has(r));
    void this.toSpool(rows).then(() => {
      if ((this.st !== 'up' && this.st !== 'connecting') || this.replayQueued) return;
      this.replayQueued = true;
      this.busy = this.busy.then(() => {
        this.replayQueued = false;
        return this.reconnect();
      });
    });
  }

  private flushSoon(ms: number): void {
    if (this.flushTimer && ms > 0) return;
    if (this.flushTimer) clearTimeout(this.flushTimer);
    this.flushTimer = setTimeout(() => {
      this.flushTimer = null;
      void this.flush();
    }, ms);
    this.flushTimer.unref();
  }

  /** Writes (or spools) everything queued now; resolves when done. Never rejects. */
  flush(): Promise<void> {
    this.busy = this.busy.then(async () => {
      while (this.queue.length > 0) {
        const batch = this.queue.splice(0, this.cfg.batch_rows);
        if (this.st !== 'up') {
          await this.toSpool(batch);
          continue;
        }
        try {
          await this.writer.write(batch);
          this.guard.release(batch);
          this.onRows('written', batch.length);
        } catch (err) {
          await this.failed(err, batch);
        }
      }
    });
    return this.busy;
  }

  private async failed(err: unknown, batch: LedgerRow[]): Promise<void> {
    if (classifyPgError(err) === 'data') {
      if (batch.length > 1) return this.oneByOne(batch);
      const code = (err as { code?: string }).code;
      this.log.error(
        { ledger: 'postgres', code, message: (err as Error).message, request_id: batch[0]?.request_id },
        'ledger row refused by PostgreSQL; dropped',
      );
      this.guard.release(batch);
      this.onRows('dropped', batch.length);
      return;
    }
    this.trouble(err, 'ledger cannot reach PostgreSQL; spooling rows');
    await this.toSpool(batch);
    this.retryLater();
  }

  /**
   * PostgreSQL failed the ledger (not its data): an outage is state `spooling` (logged with
   * `outageMsg`, when given); anything else is `misconfigured`, logged as an error naming the
   * problem once per distinct problem.
   */
  private trouble(err: unknown, outageMsg: string | null): void {
    if ((this.st as LedgerState) === 'closed') return;
    if (classifyPgError(err) === 'outage') {
      if (outageMsg) this.log.warn({ ledger: 'postgres', code: (err as { code?: string }).code ?? (err as Error).message }, outageMsg);
      this.st = 'spooling';
      this.problem = null;
      return;
    }
    const problem = describePgProblem(err, this.url);
    if (problem !== this.problem) {
      this.log.error(
        { ledger: 'postgres', code: (err as { code?: string }).code, problem, spool: this.spool.path },
        'ledger refused by PostgreSQL: not ready until it is fixed; spooling rows meanwhile',
      );
    }
    this.st = 'misconfigured';
    this.problem = problem;
  }

  /** A batch PostgreSQL refused for its data: each row alone, so only the rows it refuses are dropped. */
  private async oneByOne(batch: LedgerRow[]): Promise<void> {
    for (let i = 0; i < batch.length; i++) {
      try {
        await this.writer.write([batch[i]!]);
        this.guard.release([batch[i]!]);
        this.onRows('written', 1);
      } catch (err) {
        if (classifyPgError(err) !== 'data') return this.failed(err, batch.slice(i));
        await this.failed(err, [batch[i]!]);
      }
    }
  }

  private async toSpool(batch: LedgerRow[]): Promise<void> {
    this.guard.release(batch);
    const taken = await this.spool.append(batch);
    if (taken > 0) this.onRows('spooled', taken);
    if (taken < batch.length) {
      this.log.error({ ledger: 'spool', spool: this.spool.path, rows: batch.length - taken }, 'ledger spool full or not writable; rows dropped');
      this.onRows('dropped', batch.length - taken);
    }
  }

  private retryLater(): void {
    if (this.retryTimer || this.st === 'closed') return;
    this.retryTimer = setTimeout(() => {
      this.retryTimer = null;
      this.busy = this.busy.then(() => this.reconnect());
    }, this.cfg.retry_ms);
    this.retryTimer.unref();
  }

  /** Migrates, replays the spool, and goes `up`; on an outage stays `spooling` and retries. */
  private async reconnect(): Promise<void> {
    if (this.st === 'closed') return;
    try {
      const applied = await withClient(this.pool, migrate);
      if (applied.length > 0) this.log.info({ ledger: 'postgres', migrations: applied }, 'ledger schema migrated');
      if (this.spool.pending) {
        const n = await this.spool.replay(this.cfg.batch_rows, (rows) => this.writer.write(rows));
        this.onRows('replayed', n);
        if (n > 0) this.log.info({ ledger: 'postgres', rows: n }, 'ledger spool replayed');
      }
      if ((this.st as LedgerState) === 'closed') return;
      if (this.st !== 'up') {
        this.log.info({ ledger: 'postgres' }, 'ledger writing to PostgreSQL');
        void this.retention();
      }
      this.st = 'up';
      this.problem = null;
    } catch (err) {
      // A data error here (a migration PostgreSQL refuses) needs an operator too: `misconfigured`.
      this.trouble(err, this.st === 'connecting' ? 'ledger cannot reach PostgreSQL yet; spooling rows' : null);
      this.retryLater();
    }
  }

  private async retention(): Promise<void> {
    if (this.st !== 'up' || this.cfg.retention_days <= 0) return;
    try {
      const dropped = await withClient(this.pool, (c) => dropExpired(c, this.cfg.retention_days));
      if (dropped.length > 0) this.log.info({ ledger: 'postgres', dropped }, 'ledger partitions past retention dropped');
    } catch (err) {
      this.log.warn({ ledger: 'postgres', code: (err as { code?: string }).code }, 'ledger retention failed');
    }
  }

  /**
   * Runs a read-only statement for the admin API (`/admin/spend`) with a 10 s statement
   * timeout; the rows as `pg` returns them.
   * @throws the PostgreSQL or network error.
   */
  async read(sql: string, params: readonly unknown[]): Promise<Record<string, unknown>[]> {
    return readOnly(this.pool, sql, params);
  }

  /** Writes (or spools) what is queued and closes the connections; later rows are ignored. */
  async close(): Promise<void> {
    if (this.flushTimer) clearTimeout(this.flushTimer);
    if (this.retryTimer) clearTimeout(this.retryTimer);
    if (this.retentionTimer) clearInterval(this.retentionTimer);
    await this.flush();
    this.guard.stop();
    this.st = 'closed';
    await this.busy;
    await this.pool.end().catch(() => undefined);
  }
}
