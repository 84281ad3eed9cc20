/**
 * The Redis store, through ioredis. Every multi-step operation is one Lua script, so the
 * check and the update are atomic across replicas, and every script reads the clock from
 * Redis (`TIME`), so replicas with skewed clocks still agree on expiries.
 *
 * Keys (all under one hash tag, `{prefix}`, so a Redis Cluster keeps each script on one slot):
 *   {prefix}:inflight:<upstream>  ZSET lease id -> expiry ms   (every call: global max_concurrency)
 *   {prefix}:deep:<upstream>      ZSET lease id -> expiry ms   (deep calls: the learned capacity)
 *   {prefix}:cap:<upstream>       HASH the learned capacity     (store/capacity.ts, store/redis-capacity.ts)
 *   {prefix}:capall:<upstream>    HASH the learned capacity for calls of every kind (the same law)
 *   {prefix}:cool:<target>        STRING epoch ms              (cooldown, PX-expiring)
 *   {prefix}:pin:<session>        STRING target key            (sticky pin, PX-expiring)
 *   {prefix}:journal:<id>         STRING JSON text             (a relayed response's conversation, PX-expiring)
 * Leases expire by score unless renewed, so a replica that dies mid-request leaks nothing:
 * its places lapse within `lease_ms`.
 *
 * Calls fail fast (no offline queue, `command_timeout_ms`); the caller (store/index.ts)
 * falls back to its local store when one fails.
 */
import { randomUUID } from 'node:crypto';
import { Redis, Cluster, type RedisOptions } from 'ioredis';
import type { CapacityBounds, CapacityFeedback } from './capacity.js';
import { CAPACITY_LUA } from './redis-capacity.js';
import type { Lease, SharedStore, SlotRequest, SlotResult, TargetRef, TargetView } from './types.js';

const NOW = `local t = redis.call('TIME') local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)`;

/** KEYS: per target (inflight, deep, cap, cool, capall); ARGV: per target (start, min, ceiling of cap, then of capall). Returns flat quints + now. */
const VIEW = `${NOW}${CAPACITY_LUA}
local out = {}
for i = 1, #KEYS / 5 do
  local inflight, deep, cap, cool, capall = KEYS[5*i-4], KEYS[5*i-3], KEYS[5*i-2], KEYS[5*i-1], KEYS[5*i]
  redis.call('ZREMRANGEBYSCORE', inflight, '-inf', now)
  redis.call('ZREMRANGEBYSCORE', deep, '-inf', now)
  out[#out+1] = redis.call('ZCARD', inflight)
  out[#out+1] = redis.call('ZCARD', deep)
  out[#out+1] = cap_limit(cap, tonumber(ARGV[6*i-5]), tonumber(ARGV[6*i-4]), tonumber(ARGV[6*i-3]))
  out[#out+1] = tonumber(redis.call('GET', cool) or '0')
  out[#out+1] = cap_limit(capall, tonumber(ARGV[6*i-2]), tonumber(ARGV[6*i-1]), tonumber(ARGV[6*i]))
end
out[#out+1] = now
return out`;

/**
 * KEYS: inflight, deep, cap, capall; ARGV: max_concurrency, lease ms, id, deep (0/1), start,
 * min, ceiling (cap), start, min, ceiling (capall).
 * Returns {ok, reason, deep in flight, probe (0/1), in flight}. Hot is decided before full;
 * the learned limit for every call after max_concurrency; the probe gate after both.
 */
const ACQUIRE = `${NOW}${CAPACITY_LUA}
local limit, lease, id, deep = tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3], ARGV[4] == '1'
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local n = 0
local cap = 0
if deep then
  redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
  n = redis.call('ZCARD', KEYS[2])
  cap = cap_limit(KEYS[3], tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7]))
  if n >= cap then return {0, 'hot', n, 0, 0} end
end
local all = redis.call('ZCARD', KEYS[1])
if all >= limit then return {0, 'full', n, 0, all} end
if all >= cap_limit(KEYS[4], tonumber(ARGV[8]), tonumber(ARGV[9]), tonumber(ARGV[10])) then
  if deep then return {0, 'hot', n, 0, all} end
  return {0, 'full', n, 0, all}
end
local probe = 0
if deep then
  local gate = cap_probe_admit(KEYS[3], KEYS[2], id, n + 1, cap, now)
  if gate == 'hot' then return {0, 'hot', n, 0, all} end
  if gate == 'probe' then probe = 1 end
end
if deep then
  redis.call('ZADD', KEYS[2], now + lease, id)
  redis.call('PEXPIRE', KEYS[2], lease * 2)
  n = n + 1
end
redis.call('ZADD', KEYS[1], now + lease, id)
redis.call('PEXPIRE', KEYS[1], lease * 2)
return {1, 'ok', n, probe, all + 1}`;

/** KEYS: (inflight, deep) per lease; ARGV: lease ms, then the lease ids. Extends live leases only. */
const RENEW = `${NOW}
local lease = tonumber(ARGV[1])
for i = 2, #ARGV do
  local inflight, deep = KEYS[2*i-3], KEYS[2*i-2]
  if redis.call('ZSCORE', inflight, ARGV[i]) then
    redis.call('ZADD', inflight, 'XX', now + lease, ARGV[i])
    redis.call('PEXPIRE', inflight, lease * 2)
  end
  if redis.call('ZSCORE', deep, ARGV[i]) then
    redis.call('ZADD', deep, 'XX', now + lease, ARGV[i])
    redis.call('PEXPIRE', deep, lease * 2)
  end
end
return 1`;

/** KEYS: cap; ARGV: the probe's lease id. */
const ANSWERED = `${CAPACITY_LUA}
cap_probe_answered(KEYS[1], ARGV[1])
return 1`;

/**
 * KEYS: inflight, deep, cap, capall; ARGV: id, signal ('' for none), in flight (of its kind),
 * start, min, ceiling, deep (0/1). A deep lease's signal feeds cap, another's capall.
 */
const RELEASE = `${NOW}${CAPACITY_LUA}
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local liveAll = redis.call('ZCARD', KEYS[1])
local heldAll = redis.call('ZREM', KEYS[1], ARGV[1])
if ARGV[7] ~= '1' then
  if heldAll == 1 and ARGV[2] ~= '' then
    cap_feedback(KEYS[4], tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6]), ARGV[2], tonumber(ARGV[3]), now, liveAll)
  end
  return 1
end
cap_probe_end(KEYS[3], ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
local live = redis.call('ZCARD', KEYS[2])
local held = redis.call('ZREM', KEYS[2], ARGV[1])
if held == 1 and ARGV[2] ~= '' then
  cap_feedback(KEYS[3], tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6]), ARGV[2], tonumber(ARGV[3]), now, live)
end
return 1`;

/** KEYS: cap; ARGV: signal, deep in flight, start, min, ceiling. */
const FEEDBACK = `${NOW}${CAPACITY_LUA}
cap_feedback(KEYS[1], tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5]), ARGV[1], tonumber(ARGV[2]), now, 0)
return 1`;

/** KEYS: cool; ARGV: until ms. Keeps the later cooldown. */
const COOL = `${NOW}
local untilMs = tonumber(ARGV[1])
local cur = tonumber(redis.call('GET', KEYS[1]) or '0')
if untilMs > cur and untilMs > now then redis.call('SET', KEYS[1], untilMs, 'PX', untilMs - now) end
return 1`;

type Client = Redis | Cluster;

interface Scripts {
  syView(keys: number, ...args: (string | number)[]): Promise<number[]>;
  syAcquire(k1: string, k2: string, k3: string, k4: string, ...args: (string | number)[]): Promise<[number, string, number, number, number]>;
  syRenew(keys: number, ...args: (string | number)[]): Promise<number>;
  syRelease(k1: string, k2: string, k3: string, k4: string, ...args: (string | number)[]): Promise<number>;
  syAnswered(k1: string, id: string): Promise<number>;
  syFeedback(k1: string, ...args: (string | number)[]): Promise<number>;
  syCool(k1: string, until: number): Promise<number>;
}

/** A script's bounds arguments. */
const boundsArgs = (b: CapacityBounds): number[] => [b.start, b.min, b.ceiling];

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
    client.defineCommand('syAcquire', { lua: ACQUIRE, numberOfKeys: 4 });
    client.defineCommand('syRenew', { lua: RENEW });
    client.defineCommand('syRelease', { lua: RELEASE, numberOfKeys: 4 });
    client.defineCommand('syAnswered', { lua: ANSWERED, numberOfKeys: 1 });
    client.defineCommand('syFeedback', { lua: FEEDBACK, numberOfKeys: 1 });
    client.defineCommand('syCool', { lua: COOL, numberOfKeys: 1 });
    this.r = client as Client & Scripts;
    this.p = `{${o.prefix}}`;
  }

  private key(kind: string, id: string): string {
    return `${this.p}:${kind}:${id}`;
  }

  async view(targets: readonly TargetRef[]): Promise<TargetView[]> {
    if (targets.length === 0) return [];
    const keys = targets.flatMap((t) => [this.key('inflight', t.upstream), this.key('deep', t.upstream), this.key('cap', t.upstream), this.key('cool', t.key), this.key('capall', t.upstream)]);
    const out = await this.r.syView(keys.length, ...keys, ...targets.flatMap((t) => [...boundsArgs(t.capacity), ...boundsArgs(t.calls)]));
    const now = out[out.length - 1]!;
    return targets.map((_t, i) => {
      const until = Number(out[5 * i + 3]);
      return { inFlight: Number(out[5 * i]), deep: Number(out[5 * i + 1]), limit: Number(out[5 * i + 2]), callLimit: Number(out[5 * i + 4]), coolingUntil: until > now ? until : 0 };
    });
  }

  async acquire(req: SlotRequest): Promise<SlotResult> {
    const id = randomUUID();
    const [ok, reason, n, probe, all] = await this.r.syAcquire(
      this.key('inflight', req.upstream),
      this.key('deep', req.upstream),
      this.key('cap', req.upstream),
      this.key('capall', req.upstream),
      req.limit,
      this.o.leaseMs,
      id,
      req.deep ? '1' : '0',
      ...boundsArgs(req.capacity),
      ...boundsArgs(req.calls),
    );
    if (ok === 1) return { ok: true, lease: { id, upstream: req.upstream, deep: req.deep, from: 'redis', inFlight: Number(all), deepInFlight: Number(n), probe: Number(probe) === 1 } };
    return { ok: false, reason: reason === 'hot' ? 'hot' : 'full' };
  }

  async renew(leases: readonly Lease[]): Promise<void> {
    if (leases.length === 0) return;
    const keys = leases.flatMap((l) => [this.key('inflight', l.upstream), this.key('deep', l.upstream)]);
    await this.r.syRenew(keys.length, ...keys, this.o.leaseMs, ...leases.map((l) => l.id));
  }

  async answered(lease: Lease): Promise<void> {
    await this.r.syAnswered(this.key('cap', lease.upstream), lease.id);
  }

  async release(lease: Lease, feedback?: CapacityFeedback, bounds?: CapacityBounds): Promise<void> {
    const f = feedback && bounds ? [feedback.signal, feedback.inFlight, ...boundsArgs(bounds)] : ['', 0, 0, 0, 0];
    const keys = [this.key('inflight', lease.upstream), this.key('deep', lease.upstream), this.key('cap', lease.upstream), this.key('capall', lease.upstream)] as const;
    await this.r.syRelease(...keys, lease.id, ...f, lease.deep ? '1' : '0');
  }

  async feedback(upstream: string, feedback: CapacityFeedback, bounds: CapacityBounds): Promise<void> {
    await this.r.syFeedback(this.key('cap', upstream), feedback.signal, feedback.inFlight, ...boundsArgs(bounds));
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

  async getJournal(id: string): Promise<string | undefined> {
    return (await this.r.get(this.key('journal', id))) ?? undefined;
  }

  async putJournal(id: string, value: string, ttlMs: number): Promise<void> {
    await this.r.set(this.key('journal', id), value, 'PX', Math.max(1, Math.ceil(ttlMs)));
  }

  async close(): Promise<void> {
    this.r.disconnect();
  }
}
