/**
 * What the shared counters (store/spend.ts) counted while Redis was away: a pending sum per
 * counter, added to the shared counter once Redis is back, exactly once:
 *
 * - Every add this replica sends carries a sequence number per counter, and the script
 *   applies it only if it is above the last one applied for that counter by this replica
 *   (`{prefix}:applied:<replica id>`, a HASH counter -> last sequence, kept 3 days). A
 *   call that timed out may or may not have been applied; it is re-sent with its own
 *   number, so it lands once either way. Commands to one counter leave on one connection in
 *   order, so a higher number applied means every lower one sent before it was too.
 * - A counter with anything pending takes no direct adds until its pending part is flushed,
 *   so numbers stay in order.
 *
 * Rate-window points are added to the window that is current when Redis returns (`SET NX`
 * with the window's length, then `INCRBY`, as rate-limiter-flexible's own script does), and
 * dropped once their window would have ended anyway.
 */

type Kind = 'float' | 'int';

/** What the counters need to know of the store's connection (store/index.ts). */
export interface StoreLink {
  /** Whether the store is on Redis now. */
  online(): boolean;
  /** A Redis call failed: the store degrades. */
  failed(err: Error): void;
}

interface Pending {
  readonly kind: Kind;
  /** float: the counter's expiry, epoch ms; int: the window's length, s. */
  expire: number;
  /** Adds that were sent and failed: re-sent with their own numbers, in order. */
  readonly unsettled: { seq: number; amount: number }[];
  /** Adds made locally since, not numbered yet. */
  sum: number;
  /** When the local window of an int counter began (its points lapse a window later). */
  firstAt: number;
}

/** Counters with pending outage amounts are capped, so a long outage cannot grow memory without bound. */
const MAX_PENDING = 10_000;
const RETRY_MS = 1_000;

/** One numbered add of the script: to `counter`, `amount` (expiry: epoch ms for float, window s for int). */
export interface NumberedAdd {
  readonly counter: string;
  readonly seq: number;
  readonly amount: number;
  readonly expire: number;
  readonly kind: Kind;
}

/** Sends numbered adds as one script call (through the turn's batch when `batched`); each counter's total. */
export type SendAdds = (adds: readonly NumberedAdd[], batched: boolean) => Promise<number[]>;

export class OutageCounts {
  private readonly pending = new Map<string, Pending>();
  private readonly seqs = new Map<string, number>();
  private flushing: Promise<void> | null = null;
  private retry: NodeJS.Timeout | null = null;

  /**
   * @param send sends numbered adds to Redis (store/spend.ts).
   * @param link tells whether Redis is the store now.
   * @param onFlushed called after a flush with how many counters were caught up (log line).
   */
  constructor(
    private readonly send: SendAdds,
    private readonly link: StoreLink,
    private readonly onFlushed: (counters: number) => void,
  ) {}

  /** Whether `counter` has amounts waiting for Redis (it takes no direct adds until they are flushed). */
  has(counter: string): boolean {
    return this.pending.has(counter);
  }

  /** The next number of an add to `counter` (numbered adds land once: see above). */
  nextSeq(counter: string): number {
    const n = (this.seqs.get(counter) ?? 0) + 1;
    this.seqs.set(counter, n);
    return n;
  }

  /**
   * Keeps `amount` for `counter` until Redis is back: a failed numbered add (`unsettledSeq`)
   * to re-send with its number, else added to the counter's pending sum.
   */
  pend(counter: string, kind: Kind, expire: number, amount: number, unsettledSeq?: number): void {
    let p = this.pending.get(counter);
    if (!p) {
      if (this.pending.size >= MAX_PENDING) return;
      p = { kind, expire, unsettled: [], sum: 0, firstAt: Date.now() };
      this.pending.set(counter, p);
    }
    p.expire = expire;
    if (kind === 'int' && Date.now() - p.firstAt > expire * 1000) {
      // The local window this replica counted in has ended: its points lapsed with it.
      p.sum = 0;
      p.firstAt = Date.now();
    }
    if (unsettledSeq !== undefined) p.unsettled.push({ seq: unsettledSeq, amount });
    else p.sum += amount;
  }

  /** What is waiting for Redis of `counter`. */
  pendingOf(counter: string): number {
    const p = this.pending.get(counter);
    return p ? p.sum + p.unsettled.reduce((s, u) => s + u.amount, 0) : 0;
  }

  /** How many counters have amounts waiting for Redis (gauge). */
  get backlog(): number {
    return this.pending.size;
  }

  /** Adds every pending amount to Redis (once each); re-tried every second until all landed. */
  flush(): Promise<void> {
    this.flushing ??= this.flushAll().finally(() => (this.flushing = null));
    return this.flushing;
  }

  private async flushAll(): Promise<void> {
    let done = 0;
    let failed = false;
    for (const [counter, p] of [...this.pending]) {
      try {
        const lapsed = p.kind === 'int' && Date.now() - p.firstAt > p.expire * 1000;
        if (lapsed) p.sum = 0;
        // Numbered before it is sent and kept until it lands, so a failure re-sends the same number.
        if (p.sum !== 0) p.unsettled.push({ seq: this.nextSeq(counter), amount: p.sum });
        p.sum = 0;
        while (p.unsettled.length > 0) {
          const u = p.unsettled[0]!;
          await this.send([{ counter, seq: u.seq, amount: u.amount, expire: p.expire, kind: p.kind }], false);
          p.unsettled.shift();
        }
        if (p.sum === 0) {
          this.pending.delete(counter);
          done++;
        }
      } catch {
        failed = true;
        break;
      }
    }
    if (done > 0) this.onFlushed(done);
    // What failed, or arrived while flushing, goes on the next pass.
    if (this.pending.size > 0 && !this.retry) {
      this.retry = setTimeout(
        () => {
          this.retry = null;
          if (this.link.online()) void this.flush();
        },
        failed ? RETRY_MS : 0,
      ).unref();
    }
  }

  /** Stops the retry timer (store close). */
  stop(): void {
    if (this.retry) clearTimeout(this.retry);
    this.retry = null;
  }
}
