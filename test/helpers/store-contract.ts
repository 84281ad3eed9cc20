/**
 * The shared-store contract's stores and request builders, for the contract's test files
 * (test/redis/store-contract-*.test.ts). The contract runs unchanged against the three
 * stores the router can sit on: MemoryStore, RedisStore (its Lua scripts on a real
 * redis-server) and StateStore over Redis (the wrapper the gateway uses). Every store under
 * test gets a key prefix of its own and every test its own upstream names, so nothing one
 * test leaves behind is seen by another.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe } from 'node:test';
import type { Redis } from 'ioredis';
import { StateStore } from '../../src/store/index.js';
import { MemoryStore } from '../../src/store/memory.js';
import { RedisStore } from '../../src/store/redis.js';
import type { Target } from '../../src/config/types.js';
import type { CapacityBounds, CapacityFeedback } from '../../src/store/capacity.js';
import type { AdmitResult, Candidate, Lease, SlotRequest, SlotResult, TargetRef, TargetView } from '../../src/store/types.js';
import { RedisServer } from './redis-server.js';

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** What every store offers the router (SharedStore without `kind`, which StateStore lacks). */
export interface StoreUnderTest {
  view(targets: readonly TargetRef[]): Promise<TargetView[]>;
  acquire(req: SlotRequest): Promise<SlotResult>;
  admit(candidates: readonly Candidate[], extra?: readonly TargetRef[]): Promise<AdmitResult>;
  renew(leases: readonly Lease[]): Promise<void>;
  release(lease: Lease, feedback?: CapacityFeedback, bounds?: CapacityBounds, endedMs?: number): Promise<void>;
  answered(lease: Lease): Promise<boolean>;
  feedback(upstream: string, feedback: CapacityFeedback, bounds: CapacityBounds): Promise<void>;
  setCooldown(targetKey: string, untilMs: number): Promise<void>;
  getPin(session: string): Promise<string | undefined>;
  setPin(session: string, target: string, ttlMs: number): Promise<void>;
  getJournal(id: string): Promise<string | undefined>;
  putJournal(id: string, value: string, ttlMs: number): Promise<void>;
  close(): Promise<void>;
}

export interface Flavour {
  name: string;
  /** A store whose in-flight leases live `leaseMs`. */
  make(leaseMs: number): Promise<StoreUnderTest>;
  /** Checks after the suite (e.g. that it really ran on Redis). */
  check?(): Promise<void>;
  /** Renews its own held leases (StateStore's heartbeat): a lease lapses only when its holder stops. */
  autoRenews?: boolean;
}

let redis: RedisServer;
/** A client of the redis-server under the Redis stores, to read their keys (set when a file's tests start). */
export let reader: Redis;
const opened: StoreUnderTest[] = [];
const stateStores: StateStore[] = [];

const silentLog = { info: () => {}, warn: () => {} };

const FLAVOURS: Flavour[] = [
  {
    name: 'MemoryStore',
    make: async (leaseMs) => new MemoryStore(leaseMs),
  },
  {
    name: 'RedisStore',
    make: async (leaseMs) => {
      const prefix = `contract-redis-${randomUUID()}`;
      const client = await redis.storeClient(prefix, 250, leaseMs);
      return new RedisStore(client, { prefix, leaseMs });
    },
  },
  {
    name: 'StateStore over Redis',
    autoRenews: true,
    make: async (leaseMs) => {
      const store = new StateStore(
        {
          redis_url: redis.url,
          redis_options: {},
          cluster_nodes: [],
          key_prefix: `contract-state-${randomUUID()}`,
          command_timeout_ms: 250,
          replicas: 1,
          lease_ms: leaseMs,
          journal_ttl_ms: 60_000,
        },
        silentLog,
        {},
      );
      const end = Date.now() + 3_000;
      while (store.mode !== 'redis') {
        if (Date.now() > end) throw new Error(`StateStore did not reach redis mode (mode ${store.mode})`);
        await sleep(10);
      }
      stateStores.push(store);
      return store;
    },
    check: async () => {
      // The suite ran on Redis, not on the local fallback.
      assert.ok(stateStores.length > 0);
      for (const s of stateStores) assert.equal(s.mode, 'redis', 'a StateStore fell back to its local store during the contract suite');
    },
  },
];

/** Capacity bounds of the tests: start 100 (not in the way), min 1, ceiling 1000. */
export const WIDE: CapacityBounds = { start: 100, min: 1, ceiling: 1000 };

/** The bounds of the learned capacity for every call at max_concurrency `n` (start and ceiling n, min 1). */
export const callsOf = (n: number): CapacityBounds => ({ start: n, min: 1, ceiling: n });

/** A slot request with defaults: limit 100, not deep, capacity WIDE, calls callsOf(limit). */
export function req(upstream: string, o: Partial<SlotRequest> = {}): SlotRequest {
  return { upstream, limit: 100, deep: false, capacity: WIDE, calls: callsOf(o.limit ?? 100), ...o };
}

/** The slot request of a configured target: its upstream's cap and learned-capacity bounds, `deep` or not. */
export function slotOf(t: Target, deep: boolean): SlotRequest {
  return req(t.upstream.id, { limit: t.upstream.max_concurrency, deep, capacity: t.upstream.bounds, calls: t.upstream.callBounds });
}

export function ref(upstream: string, o: Partial<TargetRef> = {}): TargetRef {
  return { key: `${upstream}/model`, upstream, capacity: WIDE, calls: callsOf(100), ...o };
}

export const cap = (start: number, ceiling = 1000, min = 1): CapacityBounds => ({ start, min, ceiling });

/** An admission candidate: the slot request `req` gives, for target `<upstream>/model`, its cooldown checked unless `coolingOk`. */
export function cand(upstream: string, o: Partial<Candidate> = {}): Candidate {
  return { ...req(upstream, o), key: `${upstream}/model`, coolingOk: false, ...o };
}

export function leaseOf(r: SlotResult): Lease {
  assert.ok(r.ok, `expected a lease, got ${JSON.stringify(r)}`);
  return r.lease;
}

/** Unique upstream name per test (so Redis keys never overlap). */
export const up = (tag: string) => `${tag}-${randomUUID().slice(0, 8)}`;

/**
 * Runs `body` (the tests of one part of the contract) once per store, each run in a suite
 * `store contract: <store>`, with `store()` opening a store of that kind. Starts the
 * redis-server before the file's tests and closes every store opened, then the server,
 * after them. Call once, at the top level of a test file.
 */
export function forEachStore(body: (flavour: Flavour, store: (leaseMs?: number) => Promise<StoreUnderTest>) => void): void {
  before(async () => {
    redis = await RedisServer.start();
    reader = redis.client();
  });

  after(async () => {
    await Promise.all(opened.map((s) => s.close()));
    reader.disconnect();
    await redis.stop();
  });

  for (const flavour of FLAVOURS) {
    describe(`store contract: ${flavour.name}`, () => {
      async function store(leaseMs = 30_000): Promise<StoreUnderTest> {
        const s = await flavour.make(leaseMs);
        opened.push(s);
        return s;
      }

      after(async () => {
        await flavour.check?.();
      });
      body(flavour, store);
    });
  }
}
