/**
 * The ledger's durability bound: a row that exists only in the process's memory (queued, or
 * in an INSERT PostgreSQL has not confirmed) is handed to the spool once it is `afterMs` old,
 * so a `kill -9` loses no row older than that plus the time the append takes. The ledger
 * uses `afterMs` = half of `ledger.durable_ms`, leaving the other half for a late timer (a
 * busy event loop) and the file append.
 *
 * A row spilled while its INSERT is still running may land in PostgreSQL too; it keeps its
 * id, so replaying the spool adds nothing (`ON CONFLICT DO NOTHING`, ledger/writer.ts).
 */
import type { LedgerRow } from './row.js';

export class DurabilityGuard {
  /** Rows held only in memory -> when they were (`performance.now()`, ms); oldest first. */
  private readonly held = new Map<LedgerRow, number>();
  private timer: NodeJS.Timeout | null = null;

  /**
   * @param afterMs how long a row may stay only in memory.
   * @param spill takes every row still held when the oldest reaches `afterMs` (they are no longer held).
   */
  constructor(
    private readonly afterMs: number,
    private readonly spill: (rows: LedgerRow[]) => void,
  ) {}

  /** Starts watching a new row (it exists only in memory). */
  hold(row: LedgerRow): void {
    this.held.set(row, performance.now());
    this.arm();
  }

  /** Stops watching rows now durable: written to PostgreSQL or handed to the spool. */
  release(rows: readonly LedgerRow[]): void {
    for (const r of rows) this.held.delete(r);
  }

  /** Stops the timer (the ledger is closing; its last flush writes or spools what is held). */
  stop(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }

  private oldest(): number | undefined {
    for (const t of this.held.values()) return t;
    return undefined;
  }

  private arm(): void {
    const oldest = this.oldest();
    if (this.timer || oldest === undefined) return;
    this.timer = setTimeout(() => this.check(), Math.max(0, oldest + this.afterMs - performance.now()));
    this.timer.unref();
  }

  private check(): void {
    this.timer = null;
    const oldest = this.oldest();
    if (oldest !== undefined && performance.now() - oldest >= this.afterMs) {
      const rows = [...this.held.keys()];
      this.held.clear();
      this.spill(rows);
    }
    this.arm();
  }
}
