/**
 * The store the router uses: Redis when configured and reachable, else the local
 * in-memory store, with an explicit degraded mode in between.
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
import { LeaseHeartbeat } from './heartbeat.js';
import { MemoryStore } from './memory.js';
import { createRedisClient, RedisStore } from './redis.js';
import { OnceClaims, type Claim } from './claims.js';
import { SpendCounters, type SpendAdd, type ViaStore } from './spend.js';
import type { Lease, SharedStore, SlotRequest, SlotResult, TargetRef, TargetView } from './types.js';

export type StoreMode = 'memory' | 'redis' | 'degraded';

export interface StoreLog {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
}

const MAX_PENDING_RELEASES = 10_000;

export class StateStore {
  private mode_: StoreMode;
  private readonly local: MemoryStore;
  private readonly redis: RedisStore | null = null;
  private readonly client: ReturnType<typeof createRedisClient> | null = null;
  private readonly pending: Lease[] = [];
  private closed = false;
  /** Whether the current outage was logged (one warning per outage). */
  private outageLogged = false;
  /** While degraded over a live connection (a timed-out call), a periodic PING brings Redis back. */
  private probe: NodeJS.Timeout | null = null;
  /** Called on every mode change (metrics). */
  onMode?: (mode: StoreMode) => void;
  /** Renews the leases of calls still running (short leases: a dead replica frees its places fast). */
  private readonly heartbeat: LeaseHeartbeat;
  private readonly spendCounters: SpendCounters;
  private readonly claims: OnceClaims;

  constructor(
    private readonly cfg: StoreConfig,
    private readonly log: StoreLog,
    env: NodeJS.ProcessEnv = process.env,
  ) {
    this.local = new MemoryStore(cfg.lease_ms);
    this.heartbeat = new LeaseHeartbeat(cfg.lease_ms, (from, leases) => this.renewFrom(from, leases));
    const via: ViaStore = (viaRedis, viaLocal) => this.attempt(() => viaRedis(), viaLocal);
    const link = { online: () => this.mode_ === 'redis', failed: (err: Error) => this.degrade(err) };
    const url = cfg.redis_url ?? env['REDIS_URL'] ?? '';
    if (!url && cfg.cluster_nodes.length === 0) {
      this.mode_ = 'memory';
      this.spendCounters = new SpendCounters(via, link, null, this.keyPrefix);
      this.claims = new OnceClaims(via, null, this.keyPrefix);
      log.info({ store: 'memory' }, 'shared store: in-memory (single replica); set store.redis_url or REDIS_URL to share state across replicas');
      return;
    }
    this.mode_ = 'degraded';
    const client = createRedisClient({
      ...(url ? { url } : {}),
      clusterNodes: cfg.cluster_nodes,
      options: cfg.redis_options,
      prefix: cfg.key_prefix,
      commandTimeoutMs: cfg.command_timeout_ms,
      leaseMs: cfg.lease_ms,
    });
    this.client = client;
    this.spendCounters = new SpendCounters(via, link, client, this.keyPrefix);
    this.claims = new OnceClaims(via, client, this.keyPrefix);
    this.spendCounters.onFlushed = (counters) => log.info({ store: 'redis', counters }, 'shared store: counts made during the outage added to Redis');
    this.redis = new RedisStore(client, { prefix: cfg.key_prefix, leaseMs: cfg.lease_ms });
    client.on('ready', () => this.onReady());
    client.on('error', (err: NodeJS.ErrnoException) => this.degrade(err));
    client.on('close', () => this.degrade(null));
  }

  get mode(): StoreMode {
    return this.mode_;
  }

  /** The ioredis client (null in memory mode), for limiters that keep their own keys in Redis. */
  get redisClient(): ReturnType<typeof createRedisClient> | null {
    return this.client;
  }

  /** Replicas sharing the limits (each enforces limit / replicas while degraded). */
  get replicas(): number {
    return this.cfg.replicas;
  }

  /** The key prefix (with its hash tag) for keys kept by other modules. */
  get keyPrefix(): string {
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

  /**
   * Records points a rate window took (negative: gave back) on its local insurance limiter
   * while Redis was away, added to the shared window `counter` once back (store/spend.ts);
   * a call made while the store thought it was on Redis also degrades it.
   */
  outagePoints(counter: string, points: number, windowS: number): void {
    if (this.mode_ === 'redis') this.degrade(null);
    this.spendCounters.outagePoints(counter, points, windowS);
  }

  /** A rate window's settlement on Redis, exactly once (store/spend.ts); false when not on Redis. */
  windowAdd(counter: string, points: number, windowS: number): Promise<boolean> {
    return this.spendCounters.windowAdd(counter, points, windowS);
  }

  /** Counters with outage amounts not yet added to Redis (`/readyz`, metrics). */
  get counterBacklog(): number {
    return this.spendCounters.backlog;
  }

  private set(mode: StoreMode): void {
    if (this.mode_ === mode) return;
    this.mode_ = mode;
    this.onMode?.(mode);
  }

  private onReady(): void {
    if (this.closed || this.mode_ === 'redis') return;
    this.set('redis');
    this.log.info({ store: 'redis' }, this.outageLogged ? 'shared store: back on Redis' : 'shared store: connected to Redis');
    this.outageLogged = false;
    if (this.probe) clearInterval(this.probe);
    this.probe = null;
    const again = this.pending.splice(0);
    for (const lease of again) void this.release(lease);
    void this.spendCounters.flush();
  }

  /**
   * Switches to the local store; logs once per outage (also a Redis that is down at
   * start-up), with the error's code only: no URL, no password.
   */
  private degrade(err: NodeJS.ErrnoException | null): void {
    if (this.closed) return;
    this.set('degraded');
    if (!this.outageLogged) {
      this.outageLogged = true;
      this.log.warn(
        { store: 'degraded', reason: err?.code ?? err?.name ?? 'connection closed', replicas: this.cfg.replicas },
        'shared store: Redis unreachable, running on the local store with limits divided by replicas',
      );
    }
    // A call that timed out leaves the connection up, so no new `ready` will come: probe.
    this.probe ??= setInterval(() => {
      if (this.client?.status !== 'ready') return;
      this.client.ping().then(
        () => this.onReady(),
        () => {},
      );
    }, 1_000).unref();
  }

  /**
   * Resolves once the store is on Redis, or after `ms` (Redis down at start-up is not a
   * failure: the store runs degraded and keeps reconnecting).
   */
  async ready(ms: number): Promise<void> {
    const end = Date.now() + ms;
    while (this.mode_ === 'degraded' && !this.closed && Date.now() < end) await new Promise((r) => setTimeout(r, 10));
  }

  private async attempt<T>(viaRedis: (r: SharedStore) => Promise<T>, viaLocal: () => Promise<T>): Promise<T> {
    if (this.mode_ === 'redis' && this.redis) {
      try {
        return await viaRedis(this.redis);
      } catch (err) {
        this.degrade(err as NodeJS.ErrnoException);
      }
    }
    return viaLocal();
  }

  /** One view per target (see SharedStore.view). */
  view(targets: readonly TargetRef[]): Promise<TargetView[]> {
    return this.attempt((r) => r.view(targets), () => this.local.view(targets));
  }

  /** Takes a slot (see SharedStore.acquire); renewed by the heartbeat until released. */
  async acquire(req: SlotRequest): Promise<SlotResult> {
    const got = await this.attempt(
      (r) => r.acquire(req),
      () => this.local.acquire(this.mode_ === 'degraded' ? replicaShare(req, this.cfg.replicas) : req),
    );
    if (got.ok) this.heartbeat.add(got.lease);
    return got;
  }

  /**
   * Returns a slot to the store that issued it, with its capacity feedback; a Redis release
   * that fails is re-sent (without the feedback) on reconnect.
   */
  async release(lease: Lease, feedback?: CapacityFeedback, bounds?: CapacityBounds): Promise<void> {
    this.heartbeat.delete(lease);
    if (lease.from === 'memory') return this.local.release(lease, feedback, bounds);
    if (this.mode_ === 'redis' && this.redis) {
      try {
        return await this.redis.release(lease, feedback, bounds);
      } catch (err) {
        this.degrade(err as NodeJS.ErrnoException);
      }
    }
    if (this.pending.length < MAX_PENDING_RELEASES) this.pending.push(lease);
  }

  /** A probe answered on time (see SharedStore.answered), in the store that issued its lease. */
  answered(lease: Lease): Promise<void> {
    return lease.from === 'memory' ? this.local.answered(lease) : this.attempt((r) => r.answered(lease), async () => {});
  }

  /** Renews leases now (the heartbeat does it on its own; see SharedStore.renew). */
  async renew(leases: readonly Lease[]): Promise<void> {
    await this.renewFrom('memory', leases.filter((l) => l.from === 'memory'));
    await this.renewFrom('redis', leases.filter((l) => l.from === 'redis'));
  }

  private async renewFrom(from: Lease['from'], leases: Lease[]): Promise<void> {
    if (leases.length === 0) return;
    if (from === 'memory') return this.local.renew(leases);
    if (this.mode_ === 'redis' && this.redis) {
      try {
        await this.redis.renew(leases);
      } catch (err) {
        this.degrade(err as NodeJS.ErrnoException);
      }
    }
  }

  /** An account's capacity feedback now (see SharedStore.feedback). */
  feedback(upstream: string, feedback: CapacityFeedback, bounds: CapacityBounds): Promise<void> {
    return this.attempt(
      (r) => r.feedback(upstream, feedback, bounds),
      () => this.local.feedback(upstream, feedback, bounds),
    );
  }

  setCooldown(targetKey: string, untilMs: number): Promise<void> {
    return this.attempt((r) => r.setCooldown(targetKey, untilMs), () => this.local.setCooldown(targetKey, untilMs));
  }

  getPin(session: string): Promise<string | undefined> {
    return this.attempt((r) => r.getPin(session), () => this.local.getPin(session));
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
    return this.attempt((r) => r.getJournal(id), () => this.local.getJournal(id));
  }

  putJournal(id: string, value: string, ttlMs: number): Promise<void> {
    return this.attempt((r) => r.putJournal(id, value, ttlMs), () => this.local.putJournal(id, value, ttlMs));
  }

  async close(): Promise<void> {
    this.closed = true;
    this.heartbeat.stop();
    this.spendCounters.stop();
    if (this.probe) clearInterval(this.probe);
    await this.redis?.close();
  }
}
