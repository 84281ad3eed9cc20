/**
 * Counters kept in the shared store that must not lose what was counted while Redis was
 * away: spend (USD, `INCRBYFLOAT` with an expiry at the period end) and the points the
 * `rpm` / `tpm` windows counted locally during an outage (store/key-windows.ts).
 *
 * While Redis answers, a request's spend adds are one script call for all its counters
 * (store/redis-scripts.ts COUNTER_ADD), sent in one script call with the request's slot release
 * (store/batch.ts: one command); reads of several counters are one `MGET`. While it is away (degraded mode),
 * adds go to a local copy (which starts from the last shared total, not from zero) and to a
 * pending sum per counter; when Redis is back, each pending sum is added to the shared
 * counter, exactly once:
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
import { randomUUID } from 'node:crypto';
import type { Cluster, Redis } from 'ioredis';
import type { TurnBatch } from './batch.js';
import { COUNTER_ADD } from './redis-scripts.js';

/** Runs a call on Redis, or on the local fallback when Redis is not the store now (store/index.ts). */
export type ViaStore = <T>(viaRedis: () => Promise<T>, viaLocal: () => Promise<T>) => Promise<T>;

type Kind = 'float' | 'int';

/** One amount for `addMany`: USD added to counter `key`, which expires at `expireAtMs` (epoch ms). */
export interface SpendAdd {
  readonly key: string;
  readonly amount: number;
  readonly expireAtMs: number;
}

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
interface NumberedAdd {
  readonly counter: string;
  readonly seq: number;
  readonly amount: number;
  readonly expire: number;
  readonly kind: Kind;
}

interface AddingClient {
  syCounterAdd(...args: (string | number)[]): Promise<(number | string)[]>;
}

export class SpendCounters {
  /** key -> the local value and its expiry (epoch ms). */
  private readonly local = new Map<string, { v: number; exp: number }>();
  private readonly pending = new Map<string, Pending>();
  private readonly seqs = new Map<string, number>();
  private readonly applied: string;
  private flushing: Promise<void> | null = null;
  private retry: NodeJS.Timeout | null = null;
  /** Called after a flush with how many counters were caught up (log line). */
  onFlushed?: (counters: number) => void;

  /**
   * @param via runs a read on Redis or locally; `link` tells whether Redis is the store now.
   * @param client the ioredis client (null in memory mode: Redis is never called then).
   * @param prefix the store's key prefix with its hash tag (`{switchyard}`).
   * @param batch sends spend adds with the other settlement calls of their turn (store/batch.ts).
   */
  constructor(
    private readonly via: ViaStore,
    private readonly link: StoreLink,
    private readonly client: Redis | Cluster | null,
    private readonly prefix: string,
    private readonly batch: TurnBatch | null = null,
  ) {
    this.applied = `${prefix}:applied:${randomUUID()}`;
    client?.defineCommand('syCounterAdd', { lua: COUNTER_ADD });
  }

  /** Sends numbered adds as one script call (through the batch when `batched`); each counter's total. */
  private async send(adds: readonly NumberedAdd[], batched: boolean): Promise<number[]> {
    const keys = [this.applied, ...adds.map((a) => a.counter)];
    const args = adds.flatMap((a) => [a.seq, a.amount, a.expire, a.kind]);
    const out = batched && this.batch ? await this.batch.send<(number | string)[]>('add', keys, args) : await (this.client as unknown as AddingClient).syCounterAdd(keys.length, ...keys, ...args);
    return adds.map((_a, i) => Number(out[2 * i + 1]));
  }

  private entry(key: string): { v: number; exp: number } | undefined {
    const e = this.local.get(key);
    if (e && e.exp <= Date.now()) {
      this.local.delete(key);
      return undefined;
    }
    return e;
  }

  private nextSeq(counter: string): number {
    const n = (this.seqs.get(counter) ?? 0) + 1;
    this.seqs.set(counter, n);
    return n;
  }

  private pend(counter: string, kind: Kind, expire: number, amount: number, unsettledSeq?: number): void {
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

  /** The Redis key of spend counter `key`. */
  private spendKey(key: string): string { return `${this.prefix}:spend:${key}`; }

  /**
   * Reads counters, USD each (0 when absent), in one round trip (`MGET`: every counter is
   * under the store's one hash tag); with Redis, plus this replica's part not flushed yet.
   */
  getMany(keys: readonly string[]): Promise<number[]> {
    if (keys.length === 0) return Promise.resolve([]);
    const ks = keys.map((key) => this.spendKey(key));
    return this.via(
      async () => (await this.client!.mget(...ks)).map((v, i) => Number(v ?? 0) + this.pendingOf(ks[i]!)),
      async () => keys.map((key) => this.entry(key)?.v ?? 0),
    );
  }

  private pendingOf(counter: string): number {
    const p = this.pending.get(counter);
    return p ? p.sum + p.unsettled.reduce((s, u) => s + u.amount, 0) : 0;
  }

  /** Counts `amount` locally (and, with Redis configured, as pending for it); returns the local total. */
  private addLocal(key: string, amount: number, expireAtMs: number, pendSeq?: number): number {
    const e = this.entry(key) ?? { v: 0, exp: expireAtMs };
    e.v += amount;
    this.local.set(key, e);
    if (this.client) this.pend(this.spendKey(key), 'float', expireAtMs, amount, pendSeq);
    return e.v;
  }

  /**
   * Adds each amount (USD) to its counter, which expires at its `expireAtMs` (epoch ms), in
   * one script call (sent with the other settlement calls of this turn: store/batch.ts);
   * returns each counter's new total, in order. Adds that fail are kept and re-sent with
   * their own numbers.
   */
  async addMany(adds: readonly SpendAdd[]): Promise<number[]> {
    const out: number[] = new Array<number>(adds.length).fill(0);
    const sent: { i: number; add: NumberedAdd }[] = [];
    adds.forEach((a, i) => {
      const k = this.spendKey(a.key);
      if (!this.client || !this.link.online() || this.pending.has(k)) out[i] = this.addLocal(a.key, a.amount, a.expireAtMs);
      else sent.push({ i, add: { counter: k, seq: this.nextSeq(k), amount: a.amount, expire: a.expireAtMs, kind: 'float' } });
    });
    if (sent.length === 0) return out;
    const totals = await this.send(sent.map((s) => s.add), true).catch((err: Error) => err);
    sent.forEach((s, j) => {
      const a = adds[s.i]!;
      if (!(totals instanceof Error)) {
        // Kept locally too, so an outage starts from the shared total rather than from zero.
        this.local.set(a.key, { v: totals[j]!, exp: a.expireAtMs });
        out[s.i] = totals[j]!;
        return;
      }
      // Applied or not, it is re-sent with its own number once Redis is back.
      out[s.i] = this.addLocal(a.key, a.amount, a.expireAtMs, s.add.seq);
    });
    if (totals instanceof Error) this.link.failed(totals);
    return out;
  }

  /**
   * Adds `points` (negative: gives back) to the shared rate window at `counter` (`windowS`
   * long) while on Redis, numbered like a spend add, so a call that times out and lands
   * anyway is not counted twice when re-sent. Returns false when the store is not on Redis
   * (the caller then counts locally: store/key-windows.ts).
   */
  async windowAdd(counter: string, points: number, windowS: number): Promise<boolean> {
    if (!this.client || !this.link.online()) return false;
    if (this.pending.has(counter)) {
      this.pend(counter, 'int', windowS, points);
      return true;
    }
    const seq = this.nextSeq(counter);
    try {
      // With the turn's batch (store/batch.ts), in order with the key admissions that consume
      // from the window (store/redis-scripts.ts KEY_ADMIT_BODY): a give-back made before a
      // consume in one turn lands first.
      await this.send([{ counter, seq, amount: points, expire: windowS, kind: 'int' }], true);
    } catch (err) {
      this.pend(counter, 'int', windowS, points, seq);
      this.link.failed(err as Error);
    }
    return true;
  }

  /**
   * Records `points` taken (negative: given back) on a local window while Redis
   * was away, for the rate window stored at `counter` (`windowS` long), to be added once back.
   */
  outagePoints(counter: string, points: number, windowS: number): void {
    if (this.client && points !== 0) this.pend(counter, 'int', windowS, points);
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
    if (!this.client) return;
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
    if (done > 0) this.onFlushed?.(done);
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
