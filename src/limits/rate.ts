/**
 * The `rpm` / `tpm` limiters of the client keys: rate-limiter-flexible fixed one-minute
 * windows. With Redis, a RateLimiterRedis on the store's ioredis client with a
 * RateLimiterMemory `insuranceLimiter` holding `limit / replicas` points, so a Redis outage
 * degrades to local limits; in memory mode a RateLimiterMemory. What the insurance counts
 * during an outage is added to the shared window once Redis is back.
 *
 * While the store is on Redis a request's take does not go through RateLimiterRedis: the key
 * admission op counts the window on the same key with the same arithmetic, together with the
 * key's slot (limits/key-take.ts, store/redis-scripts.ts KEY_ADMIT_BODY). RateLimiterRedis
 * names that key (`sharedKey`) and reads it (`get`, for the admin view).
 */
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';
import type { Caller } from '../auth/keys.js';
import type { StateStore } from '../store/index.js';
import { resetDuration } from './periods.js';

/** Window length, s. */
export const WINDOW_S = 60;

/** A key's limits, as its config gives them. */
export type Limits = NonNullable<Caller['limits']>;

/**
 * One key's window: the shared limiter while the store is on Redis, else its local
 * insurance directly (so a request during an outage waits for no Redis timeout here).
 */
export class WindowLimiter {
  constructor(
    private readonly shared: RateLimiterAbstract | null,
    private readonly local: RateLimiterAbstract,
    private readonly store: StateStore,
  ) {}

  private get lim(): RateLimiterAbstract {
    return this.shared && this.store.mode === 'redis' ? this.shared : this.local;
  }

  /** The shared window's counter key in Redis for `key` (rate-limiter-flexible's naming), or null without Redis. */
  sharedKey(key: string): string | null {
    return this.shared ? this.shared.getKey(key) : null;
  }

  consume(key: string, points: number): Promise<RateLimiterRes> {
    return this.lim.consume(key, points);
  }

  /**
   * Settles points after the call (negative gives back). On Redis through the store's
   * numbered adds (exactly once, even when a timed-out call lands late), else locally.
   */
  async settle(key: string, points: number): Promise<void> {
    if (points === 0) return;
    if (this.shared && (await this.store.windowAdd(this.shared.getKey(key), points, WINDOW_S))) return;
    await (points > 0 ? this.local.penalty(key, points) : this.local.reward(key, -points));
  }

  /**
   * Settles points of a take made on the shared window (limits/key-take.ts, on Redis): through
   * the numbered adds while Redis answers, else kept for the shared window and added once
   * Redis is back (store/spend.ts), never given to the local insurance, which never held them.
   */
  async settleShared(key: string, points: number): Promise<void> {
    if (points === 0 || !this.shared) return;
    const counter = this.shared.getKey(key);
    if (!(await this.store.windowAdd(counter, points, WINDOW_S))) this.store.outagePoints(counter, points, WINDOW_S);
  }

  get(key: string): Promise<RateLimiterRes | null> {
    return this.lim.get(key);
  }
}

/**
 * The local insurance of a shared window. What it counts while Redis is away is recorded, so
 * it is added to the shared window when Redis is back (store/spend.ts), exactly once.
 */
class OutageInsurance extends RateLimiterMemory {
  constructor(
    opts: ConstructorParameters<typeof RateLimiterMemory>[0],
    private readonly record: (key: string, points: number) => void,
  ) {
    super(opts);
  }

  override consume(key: string | number, points = 1, options = {}): Promise<RateLimiterRes> {
    // Counted whether or not it is refused: the window counts refused points too until given back.
    this.record(String(key), points);
    return super.consume(key, points, options);
  }

  override penalty(key: string | number, points = 1, options = {}): Promise<RateLimiterRes> {
    this.record(String(key), points);
    return super.penalty(key, points, options);
  }

  override reward(key: string | number, points = 1, options = {}): Promise<RateLimiterRes> {
    this.record(String(key), -points);
    return super.reward(key, points, options);
  }
}

/** The limiters of one key; `sig` tells whether its limits changed (a reload). */
export interface KeyLimiters {
  readonly sig: string;
  readonly rpm: WindowLimiter | null;
  readonly tpm: WindowLimiter | null;
}

/** One key's limiters, made on first use and remade when the key's rpm / tpm change. */
export class RateLimiters {
  private readonly byKey = new Map<string, KeyLimiters>();

  constructor(private readonly store: StateStore) {}

  private limiter(kind: 'rpm' | 'tpm', name: string, points: number): WindowLimiter {
    const client = this.store.redisClient;
    const opts = (p: number) => ({ points: p, duration: WINDOW_S, keyPrefix: `${kind}:${name}` });
    if (!client) return new WindowLimiter(null, new RateLimiterMemory(opts(points)), this.store);
    const insurance = new OutageInsurance(opts(Math.max(1, Math.floor(points / this.store.replicas))), (key, p) =>
      this.store.outagePoints(shared.getKey(key), p, WINDOW_S),
    );
    const shared = new RateLimiterRedis({
      storeClient: client,
      points,
      duration: WINDOW_S,
      keyPrefix: `${this.store.keyPrefix}:rl:${kind}:${name}`,
      rejectIfRedisNotReady: true,
      insuranceLimiter: insurance,
    });
    return new WindowLimiter(shared, insurance, this.store);
  }

  /** The limiters for `caller`'s current limits. */
  for(caller: Caller, limits: Limits): KeyLimiters {
    const sig = JSON.stringify([limits.rpm, limits.tpm]);
    let l = this.byKey.get(caller.name);
    if (!l || l.sig !== sig) {
      l = {
        sig,
        rpm: limits.rpm ? this.limiter('rpm', caller.name, limits.rpm) : null,
        tpm: limits.tpm ? this.limiter('tpm', caller.name, limits.tpm) : null,
      };
      this.byKey.set(caller.name, l);
    }
    return l;
  }
}

function isRes(v: unknown): v is RateLimiterRes {
  return v instanceof RateLimiterRes;
}

/**
 * Takes `points` from `key`'s window: `ok: false` with the limiter's answer when the window
 * is full. When neither Redis nor the insurance limiter answers, the request goes through.
 */
export async function consume(lim: WindowLimiter, key: string, points: number): Promise<{ ok: true; res: RateLimiterRes } | { ok: false; res: RateLimiterRes }> {
  try {
    return { ok: true, res: await lim.consume(key, points) };
  } catch (e) {
    if (isRes(e)) return { ok: false, res: e };
    // Neither Redis nor the insurance limiter answered: let the request through.
    return { ok: true, res: new RateLimiterRes(points, 0, 0) };
  }
}

/**
 * Sets OpenAI's `x-ratelimit-{limit,remaining,reset}-<kind>` headers from a limiter's answer;
 * `givenBack` points of a refused call were returned since, so they are not counted as used.
 */
export function setRateHeaders(h: Record<string, string>, kind: 'requests' | 'tokens', limit: number, r: Pick<RateLimiterRes, 'consumedPoints' | 'msBeforeNext'>, givenBack = 0): void {
  h[`x-ratelimit-limit-${kind}`] = String(limit);
  h[`x-ratelimit-remaining-${kind}`] = String(Math.max(0, Math.min(limit, limit - (r.consumedPoints - givenBack))));
  h[`x-ratelimit-reset-${kind}`] = resetDuration(r.msBeforeNext);
}
