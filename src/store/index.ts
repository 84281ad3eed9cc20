/**
 * The shared state of the gateway: Redis when configured and reachable, else the local
 * in-memory store, with an explicit degraded mode in between. It serves each consumer its own
 * interface (store/roles.ts): the router's slots (RouterSlots), the client keys' windows
 * (`keyWindows`: KeyWindows, store/key-windows.ts), spend counters (SpendStore) and the
 * Responses journal (ResponseJournal); the app hands each consumer only its part.
 *
 * - No Redis configured: `memory` mode, exact for one replica (start-up says so).
 * - Redis configured: `redis` mode while it answers. A failed or slow call (every call has
 *   `command_timeout_ms` and no offline queue) switches to `degraded`: requests keep
 *   flowing on the local store with limits divided by `replicas`, one warning is logged
 *   (without the URL or password), and the gauge and `/readyz` show it. ioredis reconnects
 *   in the background (every ≤ 1 s); on `ready` the store returns to Redis and re-sends
 *   releases that failed meanwhile, so no slot leaks.
 * No method of this class rejects: a Redis failure always falls back to the local answer.
 */
import type { StoreConfig } from '../config/schema.js';
import { replicaShare, type CapacityBounds, type CapacityFeedback } from './capacity.js';
import { Leases } from './leases.js';
import { MemoryStore } from './memory.js';
import { createRedisClient, RedisStore } from './redis.js';
import { TurnBatch } from './batch.js';
import { OnceClaims, type Claim } from './claims.js';
import type { ResponseJournal, RouterSlots, SpendStore } from './roles.js';
import { SpendCounters, type SpendAdd, type ViaStore } from './spend.js';
import type { AdmitResult, Candidate, KeyWindows, Lease, SharedStore, SlotRequest, SlotResult, TargetRef, TargetView } from './types.js';
import type { FirstCall, FirstResult } from './types.js';
import { StoreKeyWindows, type KeyWindowsHost } from './key-windows.js';
import { RedisKeyWindows } from './redis-windows.js';
import { ViewCache } from './view-cache.js';
import { RedisLink, type StoreLog, type StoreMode } from './link.js';
import { RedisFirst } from './redis-first.js';
import { firstCall, type FirstHost } from './first.js';

export type { StoreLog, StoreMode } from './link.js';

export class StateStore implements RouterSlots, SpendStore, ResponseJournal {
  private readonly link: RedisLink;
  private readonly local: MemoryStore;
  private readonly redis: RedisStore | null = null;
  /** The last views read from Redis (store/view-cache.ts). */
  private readonly views = new ViewCache();
  /** The leases of calls still running: renewed until released, failed releases re-sent (store/leases.ts). */
  private readonly leases: Leases;
  private readonly spendCounters: SpendCounters;
  private readonly claims: OnceClaims;
  /** The client keys' slots and rate windows (store/key-windows.ts). */
  readonly keyWindows: KeyWindows;
  /** A request's first call on Redis (store/redis-first.ts), null in memory mode. */
  private readonly redisFirst: RedisFirst | null = null;
  /** What store/first.ts needs of this store (made on the first request). */
  private firstHost: FirstHost | null = null;

  constructor(
    private readonly cfg: StoreConfig,
    log: StoreLog,
    env: NodeJS.ProcessEnv = process.env,
  ) {
    this.local = new MemoryStore(cfg.lease_ms);
    const online = (): RedisStore | null => (this.mode === 'redis' ? this.redis : null);
    this.leases = new Leases(cfg.lease_ms, this.local, this.views, { online, failed: (err) => this.degrade(err) });
    const via: ViaStore = (viaRedis, viaLocal) => this.attempt(() => viaRedis(), viaLocal);
    const link = { online: () => this.mode === 'redis', failed: (err: Error) => this.degrade(err) };
    const hooks = { changed: () => this.views.clear(), back: () => this.onBack() };
    const host: KeyWindowsHost = { via, replicas: cfg.replicas, held: (lease) => this.leases.hold(lease), release: (lease) => this.release(lease) };
    const url = cfg.redis_url ?? env['REDIS_URL'] ?? '';
    if (!url && cfg.cluster_nodes.length === 0) {
      this.link = new RedisLink(null, log, cfg.replicas, hooks);
      this.spendCounters = new SpendCounters(via, link, null, this.keyPrefix);
      this.claims = new OnceClaims(via, null, this.keyPrefix);
      this.keyWindows = new StoreKeyWindows(this.local, null, host);
      log.info({ store: 'memory' }, 'shared store: in-memory (single replica); set store.redis_url or REDIS_URL to share state across replicas');
      return;
    }
    const client = createRedisClient({
      ...(url ? { url } : {}),
      clusterNodes: cfg.cluster_nodes,
      options: cfg.redis_options,
      prefix: cfg.key_prefix,
      commandTimeoutMs: cfg.command_timeout_ms,
      leaseMs: cfg.lease_ms,
    });
    const batch = new TurnBatch(client);
    this.spendCounters = new SpendCounters(via, link, client, this.keyPrefix, batch);
    this.claims = new OnceClaims(via, client, this.keyPrefix);
    this.spendCounters.onFlushed = (counters) => log.info({ store: 'redis', counters }, 'shared store: counts made during the outage added to Redis');
    this.redis = new RedisStore(client, { prefix: cfg.key_prefix, leaseMs: cfg.lease_ms }, batch);
    const windows = new RedisKeyWindows(client, { prefix: cfg.key_prefix, leaseMs: cfg.lease_ms }, batch, this.redis, this.spendCounters);
    this.keyWindows = new StoreKeyWindows(this.local, windows, host);
    this.redisFirst = new RedisFirst(batch, cfg.lease_ms, cfg.command_timeout_ms, this.redis, windows, this.spendCounters);
    this.link = new RedisLink(client, log, cfg.replicas, hooks);
  }

  get mode(): StoreMode {
    return this.link.mode;
  }

  /** The key prefix with its hash tag (`{switchyard}`), for the counters and claims. */
  private get keyPrefix(): string {
    return `{${this.cfg.key_prefix}}`;
  }

  /** Reads spend counters, USD each (0 when absent), in one round trip (store/spend.ts). */
  getSpend(keys: readonly string[]): Promise<number[]> {
    return this.spendCounters.getMany(keys);
  }

  /** Adds to spend counters in one round trip (each expires at its `expireAtMs`, epoch ms); returns each new total. */
  addSpend(adds: readonly SpendAdd[]): Promise<number[]> {
    return this.spendCounters.addMany(adds);
  }

  /** The claim `name` until `untilMs` if this caller is the one across replicas that gets it, else null (store/claims.ts). */
  claimOnce(name: string, untilMs: number): Promise<Claim | null> {
    return this.claims.claim(name, untilMs);
  }

  /** Counters with outage amounts not yet added to Redis (`/readyz`, metrics). */
  get counterBacklog(): number {
    return this.spendCounters.backlog;
  }

  /** Back on Redis: re-sends the releases that failed meanwhile, and adds the outage's counts. */
  private onBack(): void {
    this.leases.resend();
    void this.spendCounters.flush();
  }

  private degrade(err: NodeJS.ErrnoException | null): void {
    this.link.degrade(err);
  }

  /** See RouterSlots.peers. */
  get peers(): number {
    return this.mode === 'redis' ? this.cfg.replicas : 1;
  }

  /** Resolves once the store is on Redis, or after `ms` (store/link.ts). */
  ready(ms: number): Promise<void> {
    return this.link.ready(ms);
  }

  private async attempt<T>(viaRedis: (r: SharedStore) => Promise<T>, viaLocal: () => Promise<T>, degrades = true): Promise<T> {
    if (this.mode === 'redis' && this.redis) {
      try {
        return await viaRedis(this.redis);
      } catch (err) {
        if (degrades) this.degrade(err as NodeJS.ErrnoException);
      }
    }
    return viaLocal();
  }

  /** One view per target (see SharedStore.view), read now; kept for `cachedView`. */
  view(targets: readonly TargetRef[]): Promise<TargetView[]> {
    return this.attempt(
      (r) => r.view(targets).then((v) => (this.views.put(targets, v), v)),
      () => this.local.view(targets),
    );
  }

  /**
   * The views of `targets` as last read from Redis (by `view` or `admit`), when each is at most
   * `maxAgeMs` old, with this replica's own releases and cooldowns since; else null (and always
   * null off Redis: the local store answers `view` at once). For ordering targets only
   * (store/view-cache.ts): `admit` checks every limit again.
   */
  cachedView(targets: readonly TargetRef[], maxAgeMs: number): TargetView[] | null {
    return this.mode === 'redis' ? this.views.get(targets, maxAgeMs) : null;
  }

  /** Takes a slot on the first candidate that admits (see SharedStore.admit); renewed by the heartbeat until released. */
  async admit(candidates: readonly Candidate[], extra: readonly TargetRef[] = []): Promise<AdmitResult> {
    const got = await this.attempt(
      (r) => r.admit(candidates, extra).then((a) => (this.views.put([...candidates, ...extra], a.views), a)),
      () => this.local.admit(this.mode === 'degraded' ? candidates.map((c) => replicaShare(c, this.cfg.replicas)) : candidates, extra),
    );
    if (got.taken) this.leases.hold(got.taken.lease);
    return got;
  }

  /**
   * A request's first call (store/types.ts FirstCall): its gate, its session pin and its first
   * admission, one op on Redis (store/first.ts); never rejects.
   */
  first(call: FirstCall): Promise<FirstResult> {
    // Made once: this is on every request's path.
    this.firstHost ??= {
      online: () => (this.mode === 'redis' ? this.redisFirst : null),
      failed: (err) => this.degrade(err),
      hold: (lease) => this.leases.hold(lease),
      views: this.views,
      keyWindows: this.keyWindows,
      getSpend: (keys) => this.getSpend(keys),
      getPin: (session) => this.getPin(session),
    };
    return firstCall(this.firstHost, call);
  }

  /** Takes a slot (see SharedStore.acquire); renewed by the heartbeat until released. */
  async acquire(req: SlotRequest): Promise<SlotResult> {
    const got = await this.attempt(
      (r) => r.acquire(req),
      () => this.local.acquire(this.mode === 'degraded' ? replicaShare(req, this.cfg.replicas) : req),
    );
    if (got.ok) this.leases.hold(got.lease);
    return got;
  }

  /**
   * Returns a slot to the store that issued it, with its capacity feedback; a Redis release
   * that fails is re-sent (without the feedback) on reconnect (store/leases.ts).
   */
  release(lease: Lease, feedback?: CapacityFeedback, bounds?: CapacityBounds, endedMs = 0): Promise<void> {
    return this.leases.release(lease, feedback, bounds, endedMs);
  }

  /** A probe answered on time (see SharedStore.answered), in the store that issued its lease. */
  answered(lease: Lease): Promise<boolean> {
    return lease.from === 'memory'
      ? this.local.answered(lease)
      : this.attempt(
          (r) => r.answered(lease),
          async () => false,
        );
  }

  /** Renews leases now (the heartbeat does it on its own; see SharedStore.renew). */
  renew(leases: readonly Lease[]): Promise<void> {
    return this.leases.renew(leases);
  }

  /** An account's capacity feedback now (see SharedStore.feedback). */
  feedback(upstream: string, feedback: CapacityFeedback, bounds: CapacityBounds): Promise<void> {
    return this.either((s) => s.feedback(upstream, feedback, bounds));
  }

  setCooldown(targetKey: string, untilMs: number): Promise<void> {
    this.views.cooled(targetKey, untilMs);
    return this.either((s) => s.setCooldown(targetKey, untilMs));
  }

  getPin(session: string): Promise<string | undefined> {
    return this.either((s) => s.getPin(session));
  }

  setPin(session: string, target: string, ttlMs: number): Promise<void> {
    return this.attempt(
      async (r) => {
        await r.setPin(session, target, ttlMs);
        // Also kept locally, so a pin survives a Redis outage on this replica.
        await this.local.setPin(session, target, ttlMs);
      },
      () => this.local.setPin(session, target, ttlMs),
    );
  }

  /** A journal entry (see SharedStore.getJournal): Redis, else this replica's own. */
  getJournal(id: string): Promise<string | undefined> {
    return this.either((s) => s.getJournal(id));
  }

  putJournal(id: string, value: string, ttlMs: number): Promise<void> {
    return this.either((s) => s.putJournal(id, value, ttlMs));
  }

  /**
   * The fleet's learned timings (SharedStore.readTimings): Redis, else this replica's own.
   * Best effort: a failed call (a slow read, the key written as another type by something
   * else) goes to the local store and leaves the store on Redis: the timings are no sign
   * that Redis is down, and the limits and places must not go local for them.
   */
  readTimings(): Promise<Record<string, number>> {
    return this.either((s) => s.readTimings(), false);
  }

  writeTimings(timings: Readonly<Record<string, number>>): Promise<void> {
    return this.either((s) => s.writeTimings(timings), false);
  }

  /** `call` on Redis while it answers, else on the local store; a failure on Redis takes the store off it unless `degrades` is false. */
  private either<T>(call: (s: SharedStore) => Promise<T>, degrades = true): Promise<T> {
    return this.attempt(call, () => call(this.local), degrades);
  }

  async close(): Promise<void> {
    this.link.close();
    this.leases.stop();
    this.spendCounters.stop();
    await this.redis?.close();
  }
}
