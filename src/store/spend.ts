/**
 * Spend counters (USD) kept in the shared store: `INCRBYFLOAT` with an expiry in Redis, and a
 * local copy that serves while Redis is away (memory mode, and degraded mode, starting from
 * the last shared total rather than from zero).
 */
import type { Cluster, Redis } from 'ioredis';

/** Runs a call on Redis, or on the local fallback when Redis is not the store now (store/index.ts). */
export type ViaStore = <T>(viaRedis: () => Promise<T>, viaLocal: () => Promise<T>) => Promise<T>;

export class SpendCounters {
  /** key -> the local value and its expiry (epoch ms). */
  private readonly local = new Map<string, { v: number; exp: number }>();

  /**
   * @param client the ioredis client (null in memory mode: `via` never calls Redis then).
   * @param prefix the store's key prefix with its hash tag (`{switchyard}`).
   */
  constructor(
    private readonly via: ViaStore,
    private readonly client: Redis | Cluster | null,
    private readonly prefix: string,
  ) {}

  private entry(key: string): { v: number; exp: number } | undefined {
    const e = this.local.get(key);
    if (e && e.exp <= Date.now()) {
      this.local.delete(key);
      return undefined;
    }
    return e;
  }

  /** Reads a counter, USD (0 when absent). */
  get(key: string): Promise<number> {
    const k = `${this.prefix}:spend:${key}`;
    return this.via(
      async () => Number((await this.client!.get(k)) ?? 0),
      async () => this.entry(key)?.v ?? 0,
    );
  }

  /** Adds `amount` USD to a counter that expires at `expireAtMs` (epoch ms); returns the new total. */
  add(key: string, amount: number, expireAtMs: number): Promise<number> {
    const k = `${this.prefix}:spend:${key}`;
    return this.via(
      async () => {
        const res = await this.client!.multi().incrbyfloat(k, amount).pexpireat(k, expireAtMs).exec();
        const err = res?.find(([e]) => e)?.[0];
        if (err) throw err;
        // Kept locally too, so an outage starts from the shared total rather than from zero.
        const total = Number(res?.[0]?.[1] ?? 0);
        this.local.set(key, { v: total, exp: expireAtMs });
        return total;
      },
      async () => {
        const e = this.entry(key) ?? { v: 0, exp: expireAtMs };
        e.v += amount;
        this.local.set(key, e);
        return e.v;
      },
    );
  }
}
