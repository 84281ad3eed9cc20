/**
 * The Redis store, through ioredis. Every multi-step operation is one Lua script, so the
 * check and the update are atomic across replicas, and every script reads the clock from
 * Redis (`TIME`), so replicas with skewed clocks still agree on windows and expiries.
 *
 * Keys (all under one hash tag, `{prefix}`, so a Redis Cluster keeps each script on one slot):
 *   {prefix}:inflight:<upstream>  ZSET lease id -> expiry ms   (global max_concurrency)
 *   {prefix}:window:<upstream>    ZSET lease id -> start ms    (deep calls in the burst window)
 *   {prefix}:cool:<target>        STRING epoch ms              (cooldown, PX-expiring)
 *   {prefix}:pin:<session>        STRING target key            (sticky pin, PX-expiring)
 * Entries expire by score, so a replica that dies mid-request leaks nothing: its in-flight
 * slots lapse after `lease_ms`, its window entries after the window.
 *
 * Calls fail fast (no offline queue, `command_timeout_ms`); the caller (store/index.ts)
 * falls back to its local store when one fails.
 */
import { randomUUID } from 'node:crypto';
import { Redis, Cluster, type RedisOptions } from 'ioredis';
import type { Lease, SharedStore, SlotRequest, SlotResult, TargetRef, TargetView } from './types.js';

const NOW = `local t = redis.call('TIME') local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)`;

/** KEYS: per target (inflight, window, cool); ARGV: per target window ms. Returns flat triples + now. */
const VIEW = `${NOW}
local out = {}
for i = 1, #ARGV do
  local inflight, win, cool = KEYS[3*i-2], KEYS[3*i-1], KEYS[3*i]
  redis.call('ZREMRANGEBYSCORE', inflight, '-inf', now)
  redis.call('ZREMRANGEBYSCORE', win, '-inf', now - tonumber(ARGV[i]))
  out[#out+1] = redis.call('ZCARD', inflight)
  out[#out+1] = redis.call('ZCARD', win)
  out[#out+1] = tonumber(redis.call('GET', cool) or '0')
end
out[#out+1] = now
return out`;

/** KEYS: inflight, window; ARGV: limit, lease ms, id, deep (0/1), window ms, threshold. Returns {ok, reason}. */
const ACQUIRE = `${NOW}
local limit, lease, id, deep, wms, threshold = tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3], ARGV[4] == '1', tonumber(ARGV[5]), tonumber(ARGV[6])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) >= limit then return {0, 'full'} end
if deep then
  redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now - wms)
  if redis.call('ZCARD', KEYS[2]) >= threshold then return {0, 'hot'} end
  redis.call('ZADD', KEYS[2], now, id)
  redis.call('PEXPIRE', KEYS[2], wms * 2)
end
redis.call('ZADD', KEYS[1], now + lease, id)
redis.call('PEXPIRE', KEYS[1], lease * 2)
return {1, 'ok'}`;

/** KEYS: inflight, window; ARGV: id. */
const RELEASE = `redis.call('ZREM', KEYS[1], ARGV[1]) redis.call('ZREM', KEYS[2], ARGV[1]) return 1`;

/** KEYS: cool; ARGV: until ms. Keeps the later cooldown. */
const COOL = `${NOW}
local untilMs = tonumber(ARGV[1])
local cur = tonumber(redis.call('GET', KEYS[1]) or '0')
if untilMs > cur and untilMs > now then redis.call('SET', KEYS[1], untilMs, 'PX', untilMs - now) end
return 1`;

type Client = Redis | Cluster;

interface Scripts {
  syView(keys: number, ...args: (string | number)[]): Promise<number[]>;
  syAcquire(k1: string, k2: string, ...args: (string | number)[]): Promise<[number, string]>;
  syRelease(k1: string, k2: string, id: string): Promise<number>;
  syCool(k1: string, until: number): Promise<number>;
}

export interface RedisStoreOptions {
  readonly url?: string;
  readonly clusterNodes: readonly string[];
  readonly options: Record<string, unknown>;
  readonly prefix: string;
  readonly commandTimeoutMs: number;
  readonly leaseMs: number;
}

/**
 * Creates the ioredis client: no offline queue and no per-command retries (a call either
 * answers within the timeout or fails at once), reconnecting every ≤ 1 s in the background.
 */
export function createRedisClient(o: RedisStoreOptions): Client {
  const base: RedisOptions = {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    commandTimeout: o.commandTimeoutMs,
    connectTimeout: Math.max(500, o.commandTimeoutMs * 4),
    retryStrategy: (times: number) => Math.min(100 + times * 100, 1_000),
    lazyConnect: false,
    ...(o.options as RedisOptions),
  };
  if (o.clusterNodes.length > 0) {
    return new Cluster(o.clusterNodes.map((u) => ({ host: new URL(u).hostname, port: Number(new URL(u).port || 6379) })), {
      enableOfflineQueue: false,
      redisOptions: base,
      clusterRetryStrategy: (times: number) => Math.min(100 + times * 100, 1_000),
    });
  }
  return o.url ? new Redis(o.url, base) : new Redis(base);
}

export class RedisStore implements SharedStore {
  readonly kind = 'redis' as const;
  private readonly r: Client & Scripts;
  private readonly p: string;

  constructor(
    client: Client,
    private readonly o: Pick<RedisStoreOptions, 'prefix' | 'leaseMs'>,
  ) {
    client.defineCommand('syView', { lua: VIEW });
    client.defineCommand('syAcquire', { lua: ACQUIRE, numberOfKeys: 2 });
    client.defineCommand('syRelease', { lua: RELEASE, numberOfKeys: 2 });
    client.defineCommand('syCool', { lua: COOL, numberOfKeys: 1 });
    this.r = client as Client & Scripts;
    this.p = `{${o.prefix}}`;
  }

  private key(kind: string, id: string): string {
    return `${this.p}:${kind}:${id}`;
  }

  async view(targets: readonly TargetRef[]): Promise<TargetView[]> {
    if (targets.length === 0) return [];
    const keys = targets.flatMap((t) => [this.key('inflight', t.upstream), this.key('window', t.upstream), this.key('cool', t.key)]);
    const out = await this.r.syView(keys.length, ...keys, ...targets.map((t) => Math.ceil(t.windowMs)));
    const now = out[out.length - 1]!;
    return targets.map((_t, i) => {
      const until = Number(out[3 * i + 2]);
      return { inFlight: Number(out[3 * i]), window: Number(out[3 * i + 1]), coolingUntil: until > now ? until : 0 };
    });
  }

  async acquire(req: SlotRequest): Promise<SlotResult> {
    const id = randomUUID();
    const [ok, reason] = await this.r.syAcquire(
      this.key('inflight', req.upstream),
      this.key('window', req.upstream),
      req.limit,
      this.o.leaseMs,
      id,
      req.deep ? '1' : '0',
      Math.ceil(req.windowMs),
      req.threshold,
    );
    if (ok === 1) return { ok: true, lease: { id, upstream: req.upstream, deep: req.deep, from: 'redis' } };
    return { ok: false, reason: reason === 'hot' ? 'hot' : 'full' };
  }

  async release(lease: Lease): Promise<void> {
    await this.r.syRelease(this.key('inflight', lease.upstream), this.key('window', lease.upstream), lease.id);
  }

  async setCooldown(targetKey: string, untilMs: number): Promise<void> {
    await this.r.syCool(this.key('cool', targetKey), Math.ceil(untilMs));
  }

  async getPin(session: string): Promise<string | undefined> {
    return (await this.r.get(this.key('pin', session))) ?? undefined;
  }

  async setPin(session: string, target: string, ttlMs: number): Promise<void> {
    await this.r.set(this.key('pin', session), target, 'PX', Math.max(1, Math.ceil(ttlMs)));
  }

  async close(): Promise<void> {
    this.r.disconnect();
  }
}
