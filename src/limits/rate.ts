/**
 * The `rpm` / `tpm` limiters of the client keys: rate-limiter-flexible fixed one-minute
 * windows. With Redis, a RateLimiterRedis on the store's ioredis client with a
 * RateLimiterMemory `insuranceLimiter` holding `limit / replicas` points, so a Redis outage
 * degrades to local limits; in memory mode a RateLimiterMemory.
 */
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';
import type { Caller } from '../auth/keys.js';
import type { StateStore } from '../store/index.js';
import { resetDuration } from './periods.js';

const WINDOW_S = 60;

/** A key's limits, as its config gives them. */
export type Limits = NonNullable<Caller['limits']>;

/** The limiters of one key; `sig` tells whether its limits changed (a reload). */
export interface KeyLimiters {
  readonly sig: string;
  readonly rpm: RateLimiterAbstract | null;
  readonly tpm: RateLimiterAbstract | null;
}

/** One key's limiters, made on first use and remade when the key's rpm / tpm change. */
export class RateLimiters {
  private readonly byKey = new Map<string, KeyLimiters>();

  constructor(private readonly store: StateStore) {}

  private limiter(kind: 'rpm' | 'tpm', name: string, points: number): RateLimiterAbstract {
    const client = this.store.redisClient;
    const local = (p: number) => new RateLimiterMemory({ points: p, duration: WINDOW_S, keyPrefix: `${kind}:${name}` });
    if (!client) return local(points);
    return new RateLimiterRedis({
      storeClient: client,
      points,
      duration: WINDOW_S,
      keyPrefix: `${this.store.keyPrefix}:rl:${kind}:${name}`,
      rejectIfRedisNotReady: true,
      insuranceLimiter: local(Math.max(1, Math.floor(points / this.store.replicas))),
    });
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
export async function consume(lim: RateLimiterAbstract, key: string, points: number): Promise<{ ok: true; res: RateLimiterRes } | { ok: false; res: RateLimiterRes }> {
  try {
    return { ok: true, res: await lim.consume(key, points) };
  } catch (e) {
    if (isRes(e)) return { ok: false, res: e };
    // Neither Redis nor the insurance limiter answered: let the request through.
    return { ok: true, res: new RateLimiterRes(points, 0, 0) };
  }
}

/** Sets OpenAI's `x-ratelimit-{limit,remaining,reset}-<kind>` headers from a limiter's answer. */
export function setRateHeaders(h: Record<string, string>, kind: 'requests' | 'tokens', limit: number, r: RateLimiterRes): void {
  h[`x-ratelimit-limit-${kind}`] = String(limit);
  h[`x-ratelimit-remaining-${kind}`] = String(Math.max(0, Math.min(limit, limit - r.consumedPoints)));
  h[`x-ratelimit-reset-${kind}`] = resetDuration(r.msBeforeNext);
}
