/**
 * The Redis store, through ioredis. Every multi-step operation is one Lua script
 * (store/redis-scripts.ts), so the check and the update are atomic across replicas, and every
 * script reads the clock from Redis (`TIME`), so replicas with skewed clocks still agree on
 * expiries.
 *
 * Every request costs two top-level commands in two round trips: before the upstream, its
 * first call (store/redis-first.ts: its budgets read, its key's admission, its session pin
 * read and its admission, `admit`: tries the candidate targets in the strategy's order, takes
 * a slot on the first that admits, reads every target's view); after the answer, its release,
 * its spend add (store/spend.ts), its key's release and `tpm` settlement and its session pin.
 * Each is an op of one script call that carries every such call made in its event-loop turn,
 * other requests' too (store/batch.ts), so under load a command serves several requests. The
 * first attempt is ordered on the views the last admission read, of any age
 * (store/view-cache.ts; router/first.ts); later passes read them when older than
 * VIEW_FRESH_MS (`view`: one more round trip).
 *
 * Keys (all under one hash tag, `{prefix}`, so a Redis Cluster keeps each script on one slot):
 *   {prefix}:inflight:<upstream>  ZSET lease id -> expiry ms   (every call: global max_concurrency)
 *   {prefix}:deep:<upstream>      ZSET lease id -> expiry ms   (deep calls: the learned capacity)
 *   {prefix}:cap:<upstream>       HASH the learned capacity     (store/capacity.ts, store/redis-capacity.ts)
 *   {prefix}:capall:<upstream>    HASH the learned capacity for calls of every kind (the same law)
 *   {prefix}:cool:<target>        STRING epoch ms              (cooldown, PX-expiring)
 *   {prefix}:pin:<session>        STRING target key            (sticky pin, PX-expiring)
 *   {prefix}:journal:<id>         STRING JSON text             (a relayed response's conversation, PX-expiring)
 *   {prefix}:spend:<counter>      STRING USD or points         (spend and rate-window counters: store/spend.ts)
 *   {prefix}:applied:<replica>    HASH counter -> last seq     (exactly-once adds: store/outage-counts.ts)
 *   {prefix}:once:<name>          STRING                       (claims: store/claims.ts)
 *   {prefix}:rl:<kind>:<name>:<name> STRING points, EX window (rpm / tpm windows, named as rate-limiter-flexible did: store/redis-windows.ts)
 * Leases expire by score unless renewed, so a replica that dies mid-request leaks nothing:
 * its places lapse within `lease_ms`.
 *
 * Calls fail fast (no offline queue, `command_timeout_ms`); the caller (store/index.ts)
 * falls back to its local store when one fails.
 */
import { randomUUID } from 'node:crypto';
import { createRequire } from 'node:module';
import type { Redis, Cluster, RedisOptions } from 'ioredis';
import type { CapacityBounds, CapacityFeedback } from './capacity.js';
import { TurnBatch } from './batch.js';
import { ANSWERED, COOL, FEEDBACK, RENEW } from './redis-scripts.js';
import type { AdmitResult, Candidate, Lease, Refusal, SharedStore, SlotRequest, SlotResult, TargetRef, TargetView } from './types.js';

type Client = Redis | Cluster;

interface Scripts {
  syRenew(keys: number, ...args: (string | number)[]): Promise<number>;
  syAnswered(k1: string, id: string): Promise<number>;
  syFeedback(k1: string, ...args: (string | number)[]): Promise<number>;
  syCool(k1: string, until: number): Promise<number>;
}

/** A script's bounds arguments. */
const boundsArgs = (b: CapacityBounds): number[] => [b.start, b.min, b.ceiling];
/** How long the fleet's learned timings outlive their last write, ms: a day, as the learned capacity (store/redis-capacity.ts). */
const TIMINGS_TTL_MS = 86_400_000;

export interface RedisStoreOptions {
  readonly url?: string;
  readonly clusterNodes: readonly string[];
  readonly options: Record<string, unknown>;
  readonly prefix: string;
  readonly commandTimeoutMs: number;
  readonly leaseMs: number;
}

/**
 * ioredis, loaded by the first Redis client: a gateway without Redis never loads it (~2 MB
 * of heap and its startup time; memory mode is the sidecar's default).
 */
const loadIoredis = (): typeof import('ioredis') => createRequire(import.meta.url)('ioredis') as typeof import('ioredis');

/**
 * Creates the ioredis client: no offline queue and no per-command retries (a call either
 * answers within the timeout or fails at once), reconnecting every ≤ 1 s in the background.
 */
export function createRedisClient(o: RedisStoreOptions): Client {
  const { Redis, Cluster } = loadIoredis();
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
    return new Cluster(
      o.clusterNodes.map((u) => ({ host: new URL(u).hostname, port: Number(new URL(u).port || 6379) })),
      {
        enableOfflineQueue: false,
        redisOptions: base,
        clusterRetryStrategy: (times: number) => Math.min(100 + times * 100, 1_000),
      },
    );
  }
  return o.url ? new Redis(o.url, base) : new Redis(base);
}

const REFUSALS: Record<string, Refusal> = { full: 'full', hot: 'hot', cooling: 'cooling' };

/**
 * ADMIT_BODY's reply (store/redis-scripts.ts) as an AdmitResult: `candidates` in the order
 * tried, `targets` views in all (the candidates', then the read-only targets'), lease `id`.
 */
export function decodeAdmit(out: readonly (number | string)[], candidates: readonly Candidate[], targets: number, id: string): AdmitResult {
  const now = Number(out[out.length - 1]);
  const views: TargetView[] = [];
  for (let i = 0; i < targets; i++) {
    const o = 4 + 6 * i;
    const until = Number(out[o + 4]);
    views.push({
      inFlight: Number(out[o + 1]),
      deep: Number(out[o + 2]),
      limit: Number(out[o + 3]),
      callLimit: Number(out[o + 5]),
      coolingUntil: until > now ? until : 0,
    });
  }
  const refused = candidates.map((_c, i) => REFUSALS[String(out[4 + 6 * i])] ?? null);
  const index = Number(out[0]) - 1;
  if (index < 0) return { taken: null, refused, views };
  const c = candidates[index]!;
  const lease: Lease = {
    id,
    upstream: c.upstream,
    deep: c.deep,
    from: 'redis',
    inFlight: Number(out[3]),
    deepInFlight: Number(out[1]),
    probe: Number(out[2]) === 1,
  };
  return { taken: { index, lease }, refused, views };
}

/** ADMIT_BODY's flags argument of a candidate (store/redis-scripts.ts): cooling allowed, then `only`; no string built per call. */
const FLAGS = { coolingOk: { any: '1', trusted: '1t', probe: '1p' }, notCoolingOk: { any: '0', trusted: '0t', probe: '0p' } } as const;
const flagsOf = (c: Candidate): string => FLAGS[c.coolingOk ? 'coolingOk' : 'notCoolingOk'][c.only ?? 'any'];

export class RedisStore implements SharedStore {
  readonly kind = 'redis' as const;
  private readonly r: Client & Scripts;
  private readonly p: string;

  /** @param batch sends view reads, admissions and releases with the other calls of their turn (store/batch.ts). */
  constructor(
    client: Client,
    private readonly o: Pick<RedisStoreOptions, 'prefix' | 'leaseMs'>,
    private readonly batch: TurnBatch = new TurnBatch(client),
  ) {
    client.defineCommand('syRenew', { lua: RENEW });
    client.defineCommand('syAnswered', { lua: ANSWERED, numberOfKeys: 1 });
    client.defineCommand('syFeedback', { lua: FEEDBACK, numberOfKeys: 1 });
    client.defineCommand('syCool', { lua: COOL, numberOfKeys: 1 });
    this.r = client as Client & Scripts;
    this.p = `{${o.prefix}}`;
  }

  /** The Redis key of `kind`'s entry `id` (`pin` and `session`: a session's pin). */
  key(kind: string, id: string): string {
    return `${this.p}:${kind}:${id}`;
  }

  async view(targets: readonly TargetRef[]): Promise<TargetView[]> {
    if (targets.length === 0) return [];
    const keys = targets.flatMap((t) => [
      this.key('inflight', t.upstream),
      this.key('deep', t.upstream),
      this.key('cap', t.upstream),
      this.key('cool', t.key),
      this.key('capall', t.upstream),
    ]);
    const out = await this.batch.send<number[]>(
      'view',
      keys,
      targets.flatMap((t) => [...boundsArgs(t.capacity), ...boundsArgs(t.calls)]),
    );
    const now = out[out.length - 1]!;
    return targets.map((_t, i) => {
      const until = Number(out[5 * i + 3]);
      return {
        inFlight: Number(out[5 * i]),
        deep: Number(out[5 * i + 1]),
        limit: Number(out[5 * i + 2]),
        callLimit: Number(out[5 * i + 4]),
        coolingUntil: until > now ? until : 0,
      };
    });
  }

  async acquire(req: SlotRequest): Promise<SlotResult> {
    // No target: a key nothing cools under (`cool:` with an empty target key).
    const got = await this.admit([{ ...req, key: '', coolingOk: true }]);
    if (got.taken) return { ok: true, lease: got.taken.lease };
    return { ok: false, reason: got.refused[0] === 'hot' ? 'hot' : 'full' };
  }

  async admit(candidates: readonly Candidate[], extra: readonly TargetRef[] = []): Promise<AdmitResult> {
    if (candidates.length + extra.length === 0) return { taken: null, refused: [], views: [] };
    const id = randomUUID();
    const plan = this.admitPlan(candidates, extra);
    // With the other calls of this turn (other requests' admissions, settlements): one command.
    const out = await this.batch.send<(number | string)[]>('admit', plan.keys, [this.o.leaseMs, id, candidates.length, ...plan.args]);
    return decodeAdmit(out, candidates, candidates.length + extra.length, id);
  }

  /** ADMIT_BODY's keys and per-target arguments (store/redis-scripts.ts) for `candidates`, then `extra` (read only). */
  admitPlan(candidates: readonly Candidate[], extra: readonly TargetRef[]): { keys: string[]; args: (string | number)[] } {
    const all: Candidate[] = [...candidates, ...extra.map((t) => ({ ...t, limit: 0, deep: false, coolingOk: true }))];
    const keys = all.flatMap((c) => [
      this.key('inflight', c.upstream),
      this.key('deep', c.upstream),
      this.key('cap', c.upstream),
      this.key('capall', c.upstream),
      this.key('cool', c.key),
    ]);
    const args = all.flatMap((c) => [c.limit, c.deep ? 1 : 0, ...boundsArgs(c.capacity), ...boundsArgs(c.calls), flagsOf(c), c.spread ?? 0]);
    return { keys, args };
  }

  async renew(leases: readonly Lease[]): Promise<void> {
    if (leases.length === 0) return;
    const keys = leases.flatMap((l) => [this.key('inflight', l.upstream), this.key('deep', l.upstream)]);
    await this.r.syRenew(keys.length, ...keys, this.o.leaseMs, ...leases.map((l) => l.id));
  }

  async answered(lease: Lease): Promise<boolean> {
    return (await this.r.syAnswered(this.key('cap', lease.upstream), lease.id)) === 1;
  }

  async release(lease: Lease, feedback?: CapacityFeedback, bounds?: CapacityBounds, endedMs = 0): Promise<void> {
    const f = feedback && bounds ? [feedback.signal, feedback.inFlight, ...boundsArgs(bounds)] : ['', 0, 0, 0, 0];
    const keys = [this.key('inflight', lease.upstream), this.key('deep', lease.upstream), this.key('cap', lease.upstream), this.key('capall', lease.upstream)];
    // Sent with the other settlement calls of this turn (the request's spend add): one command.
    await this.batch.send('release', keys, [lease.id, ...f, lease.deep ? '1' : '0', Math.max(0, Math.round(endedMs))]);
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

  /** Sent with the other calls of its turn (a served call's pin rides its slot's release). */
  async setPin(session: string, target: string, ttlMs: number): Promise<void> {
    await this.batch.send('pin', [this.key('pin', session)], [target, Math.max(1, Math.ceil(ttlMs))]);
  }

  async getJournal(id: string): Promise<string | undefined> {
    return (await this.r.get(this.key('journal', id))) ?? undefined;
  }

  async readTimings(): Promise<Record<string, number>> {
    const raw = await this.r.hgetall(this.key('timings', 'fleet'));
    return Object.fromEntries(Object.entries(raw).map(([name, v]) => [name, Number(v)]));
  }

  async writeTimings(timings: Readonly<Record<string, number>>): Promise<void> {
    if (Object.keys(timings).length === 0) return;
    const key = this.key('timings', 'fleet');
    await this.r.multi().hset(key, timings).pexpire(key, TIMINGS_TTL_MS).exec();
  }

  async putJournal(id: string, value: string, ttlMs: number): Promise<void> {
    await this.r.set(this.key('journal', id), value, 'PX', Math.max(1, Math.ceil(ttlMs)));
  }

  async close(): Promise<void> {
    this.r.disconnect();
  }
}
