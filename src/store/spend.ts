/**
 * Counters kept in the shared store that must not lose what was counted while Redis was
 * away: spend (USD, `INCRBYFLOAT` with an expiry at the period end) and the points the
 * `rpm` / `tpm` windows took on their local insurance limiter during an outage.
 *
 * While Redis answers, spend adds are one script call each, pipelined (one round trip per
 * batch); reads of several counters are one `MGET`. While it is away (degraded mode),
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

/** Runs a call on Redis, or on the local fallback when Redis is not the store now (store/index.ts). */
export type ViaStore = <T>(viaRedis: () => Promise<T>, viaLocal: () => Promise<T>) => Promise<T>;

/** KEYS: counter, applied hash. ARGV: seq, amount, expiry (epoch ms for float, window s for int), kind. */
const ADD = `local seq = tonumber(ARGV[1])
local last = tonumber(redis.call('HGET', KEYS[2], KEYS[1]) or '0')
if seq <= last then return {0, tostring(redis.call('GET', KEYS[1]) or '0')} end
local v
if ARGV[4] == 'int' then
  redis.call('SET', KEYS[1], 0, 'EX', ARGV[3], 'NX')
  v = redis.call('INCRBY', KEYS[1], ARGV[2])
else
  v = redis.call('INCRBYFLOAT', KEYS[1], ARGV[2])
  redis.call('PEXPIREAT', KEYS[1], ARGV[3])
end
redis.call('HSET', KEYS[2], KEYS[1], seq)
redis.call('PEXPIRE', KEYS[2], 259200000)
return {1, tostring(v)}`;

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

interface AddingClient {
  syCounterAdd(counter: string, applied: string, seq: number, amount: number, expire: number, kind: Kind): Promise<[number, string]>;
}

/** The add script queued on an ioredis pipeline (its commands return the pipeline; `exec` answers each). */
interface PipelineAdds {
  syCounterAdd(counter: string, applied: string, seq: number, amount: number, expire: number, kind: Kind): unknown;
  exec(): Promise<[Error | null, unknown][] | null>;
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
   */
  constructor(
    private readonly via: ViaStore,
    private readonly link: StoreLink,
    private readonly client: Redis | Cluster | null,
    private readonly prefix: string,
  ) {
    this.applied = `${prefix}:applied:${randomUUID()}`;
    client?.defineCommand('syCounterAdd', { lua: ADD, numberOfKeys: 2 });
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
   * one round trip (an ioredis pipeline of the numbered add script); returns each counter's
   * new total, in order. An add that fails is kept and re-sent with its own number.
   */
  async addMany(adds: readonly SpendAdd[]): Promise<number[]> {
    const out: number[] = new Array<number>(adds.length).fill(0);
    const sent: { i: number; k: string; seq: number }[] = [];
    adds.forEach((a, i) => {
      const k = this.spendKey(a.key);
      if (!this.client || !this.link.online() || this.pending.has(k)) out[i] = this.addLocal(a.key, a.amount, a.expireAtMs);
      else sent.push({ i, k, seq: this.nextSeq(k) });
    });
    if (sent.length === 0) return out;
    const pipe = this.client!.pipeline() as unknown as PipelineAdds;
    for (const s of sent) pipe.syCounterAdd(s.k, this.applied, s.seq, adds[s.i]!.amount, adds[s.i]!.expireAtMs, 'float');
    const results = await pipe.exec().then((r) => r ?? [], (err: Error) => err);
    let failure = results instanceof Error ? results : null;
    sent.forEach((s, j) => {
      const a = adds[s.i]!;
      const r = results instanceof Error ? undefined : results[j];
      if (r && !r[0]) {
        const total = Number((r[1] as [number, string])[1]);
        // Kept locally too, so an outage starts from the shared total rather than from zero.
        this.local.set(a.key, { v: total, exp: a.expireAtMs });
        out[s.i] = total;
        return;
      }
      // Applied or not, it is re-sent with its own number once Redis is back.
      failure ??= r?.[0] ?? new Error('pipeline not answered');
      out[s.i] = this.addLocal(a.key, a.amount, a.expireAtMs, s.seq);
    });
    if (failure) this.link.failed(failure);
    return out;
  }

  /**
   * Adds `points` (negative: gives back) to the shared rate window at `counter` (`windowS`
   * long) while on Redis, numbered like a spend add, so a call that times out and lands
   * anyway is not counted twice when re-sent. Returns false when the store is not on Redis
   * (the caller then counts on its local insurance limiter).
   */
  async windowAdd(counter: string, points: number, windowS: number): Promise<boolean> {
    if (!this.client || !this.link.online()) return false;
    if (this.pending.has(counter)) {
      this.pend(counter, 'int', windowS, points);
      return true;
    }
    const seq = this.nextSeq(counter);
    try {
      await (this.client as unknown as AddingClient).syCounterAdd(counter, this.applied, seq, points, windowS, 'int');
    } catch (err) {
      this.pend(counter, 'int', windowS, points, seq);
      this.link.failed(err as Error);
    }
    return true;
  }

  /**
   * Records `points` taken (negative: given back) on a local insurance limiter while Redis
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
    const c = this.client as unknown as AddingClient;
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
          await c.syCounterAdd(counter, this.applied, u.seq, u.amount, p.expire, p.kind);
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
