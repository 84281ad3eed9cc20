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
 * counter, exactly once (store/outage-counts.ts).
 */
import { randomUUID } from 'node:crypto';
import type { Cluster, Redis } from 'ioredis';
import type { TurnBatch } from './batch.js';
import { OutageCounts, type NumberedAdd, type StoreLink } from './outage-counts.js';
import { COUNTER_ADD } from './redis-scripts.js';

/** Runs a call on Redis, or on the local fallback when Redis is not the store now (store/index.ts). */
export type ViaStore = <T>(viaRedis: () => Promise<T>, viaLocal: () => Promise<T>) => Promise<T>;

/** One amount for `addMany`: USD added to counter `key`, which expires at `expireAtMs` (epoch ms). */
export interface SpendAdd {
  readonly key: string;
  readonly amount: number;
  readonly expireAtMs: number;
}

interface AddingClient {
  syCounterAdd(...args: (string | number)[]): Promise<(number | string)[]>;
}

export class SpendCounters {
  /** key -> the local value and its expiry (epoch ms). */
  private readonly local = new Map<string, { v: number; exp: number }>();
  private readonly applied: string;
  /** What was counted while Redis was away, added once it is back (store/outage-counts.ts). */
  private readonly outage: OutageCounts;
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
    this.outage = new OutageCounts(
      (adds, batched) => this.send(adds, batched),
      link,
      (counters) => this.onFlushed?.(counters),
    );
  }

  /** Sends numbered adds as one script call (through the batch when `batched`); each counter's total. */
  private async send(adds: readonly NumberedAdd[], batched: boolean): Promise<number[]> {
    const keys = [this.applied, ...adds.map((a) => a.counter)];
    const args = adds.flatMap((a) => [a.seq, a.amount, a.expire, a.kind]);
    const out =
      batched && this.batch
        ? await this.batch.send<(number | string)[]>('add', keys, args)
        : await (this.client as unknown as AddingClient).syCounterAdd(keys.length, ...keys, ...args);
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

  /** What this replica counted on spend counter `key` that Redis does not hold yet (outage adds not flushed), USD. */
  pendingOf(key: string): number {
    return this.outage.pendingOf(this.spendKey(key));
  }

  /** The Redis key of spend counter `key`. */
  spendKey(key: string): string {
    return `${this.prefix}:spend:${key}`;
  }

  /**
   * Reads counters, USD each (0 when absent), in one round trip (`MGET`: every counter is
   * under the store's one hash tag); with Redis, plus this replica's part not flushed yet.
   */
  getMany(keys: readonly string[]): Promise<number[]> {
    if (keys.length === 0) return Promise.resolve([]);
    const ks = keys.map((key) => this.spendKey(key));
    return this.via(
      async () => (await this.client!.mget(...ks)).map((v, i) => Number(v ?? 0) + this.outage.pendingOf(ks[i]!)),
      async () => keys.map((key) => this.entry(key)?.v ?? 0),
    );
  }

  /** Counts `amount` locally (and, with Redis configured, as pending for it); returns the local total. */
  private addLocal(key: string, amount: number, expireAtMs: number, pendSeq?: number): number {
    const e = this.entry(key) ?? { v: 0, exp: expireAtMs };
    e.v += amount;
    this.local.set(key, e);
    if (this.client) this.outage.pend(this.spendKey(key), 'float', expireAtMs, amount, pendSeq);
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
      if (!this.client || !this.link.online() || this.outage.has(k)) out[i] = this.addLocal(a.key, a.amount, a.expireAtMs);
      else sent.push({ i, add: { counter: k, seq: this.outage.nextSeq(k), amount: a.amount, expire: a.expireAtMs, kind: 'float' } });
    });
    if (sent.length === 0) return out;
    const totals = await this.send(
      sent.map((s) => s.add),
      true,
    ).catch((err: Error) => err);
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
    if (this.outage.has(counter)) {
      this.outage.pend(counter, 'int', windowS, points);
      return true;
    }
    const seq = this.outage.nextSeq(counter);
    try {
      // With the turn's batch (store/batch.ts), in order with the key admissions that consume
      // from the window (store/redis-scripts.ts KEY_ADMIT_BODY): a give-back made before a
      // consume in one turn lands first.
      await this.send([{ counter, seq, amount: points, expire: windowS, kind: 'int' }], true);
    } catch (err) {
      this.outage.pend(counter, 'int', windowS, points, seq);
      this.link.failed(err as Error);
    }
    return true;
  }

  /**
   * Records `points` taken (negative: given back) on a local window while Redis
   * was away, for the rate window stored at `counter` (`windowS` long), to be added once back.
   */
  outagePoints(counter: string, points: number, windowS: number): void {
    if (this.client && points !== 0) this.outage.pend(counter, 'int', windowS, points);
  }

  /** How many counters have amounts waiting for Redis (gauge). */
  get backlog(): number {
    return this.outage.backlog;
  }

  /** Adds every pending amount to Redis (once each); re-tried every second until all landed. */
  flush(): Promise<void> {
    return this.client ? this.outage.flush() : Promise.resolve();
  }

  /** Stops the retry timer (store close). */
  stop(): void {
    this.outage.stop();
  }
}
