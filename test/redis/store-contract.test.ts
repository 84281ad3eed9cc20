/**
 * The shared-store contract, run unchanged against the three stores the router can sit on:
 * MemoryStore, RedisStore (its Lua scripts on a real redis-server) and StateStore over Redis
 * (the wrapper the gateway uses). Every store under test gets a key prefix of its own and
 * every test its own upstream names, so nothing one test leaves behind is seen by another.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import type { Redis } from 'ioredis';
import { StateStore } from '../../src/store/index.js';
import { MemoryStore } from '../../src/store/memory.js';
import { RedisStore, createRedisClient } from '../../src/store/redis.js';
import type { Lease, SlotRequest, SlotResult, TargetRef, TargetView } from '../../src/store/types.js';
import { RedisServer } from '../helpers/redis-server.js';

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** What every store offers the router (SharedStore without `kind`, which StateStore lacks). */
interface StoreUnderTest {
  view(targets: readonly TargetRef[]): Promise<TargetView[]>;
  acquire(req: SlotRequest): Promise<SlotResult>;
  release(lease: Lease): Promise<void>;
  setCooldown(targetKey: string, untilMs: number): Promise<void>;
  getPin(session: string): Promise<string | undefined>;
  setPin(session: string, target: string, ttlMs: number): Promise<void>;
  close(): Promise<void>;
}

interface Flavour {
  name: string;
  /** A store whose in-flight leases live `leaseMs`. */
  make(leaseMs: number): Promise<StoreUnderTest>;
  /** Checks after the suite (e.g. that it really ran on Redis). */
  check?(): Promise<void>;
}

let redis: RedisServer;
let reader: Redis;
const opened: StoreUnderTest[] = [];
const stateStores: StateStore[] = [];

before(async () => {
  redis = await RedisServer.start();
  reader = redis.client();
});

after(async () => {
  await Promise.all(opened.map((s) => s.close()));
  reader.disconnect();
  await redis.stop();
});

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
      const client = createRedisClient({ url: redis.url, clusterNodes: [], options: {}, prefix, commandTimeoutMs: 250, leaseMs });
      await new Promise<void>((resolve, reject) => {
        client.once('ready', () => resolve());
        setTimeout(() => reject(new Error('ioredis client not ready within 3 s')), 3_000);
      });
      return new RedisStore(client, { prefix, leaseMs });
    },
  },
  {
    name: 'StateStore over Redis',
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

/** A slot request with defaults: limit 100, not deep, 10 s window, threshold 100. */
function req(upstream: string, o: Partial<SlotRequest> = {}): SlotRequest {
  return { upstream, limit: 100, deep: false, windowMs: 10_000, threshold: 100, ...o };
}

function ref(upstream: string, o: Partial<TargetRef> = {}): TargetRef {
  return { key: `${upstream}/model`, upstream, windowMs: 10_000, ...o };
}

function leaseOf(r: SlotResult): Lease {
  assert.ok(r.ok, `expected a lease, got ${JSON.stringify(r)}`);
  return r.lease;
}

/** Unique upstream name per test (so Redis keys never overlap). */
const up = (tag: string) => `${tag}-${randomUUID().slice(0, 8)}`;

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

    test('view counts in-flight slots and window entries per upstream, one view per target in order', async () => {
      const s = await store();
      const [a, b, c] = [up('a'), up('b'), up('c')];
      leaseOf(await s.acquire(req(a)));
      leaseOf(await s.acquire(req(a)));
      leaseOf(await s.acquire(req(a, { deep: true })));
      leaseOf(await s.acquire(req(b, { deep: true })));
      const v = await s.view([ref(a), ref(b), ref(c), ref(a, { key: `${a}/other-model` })]);
      assert.deepEqual(v, [
        { inFlight: 3, window: 1, coolingUntil: 0 },
        { inFlight: 1, window: 1, coolingUntil: 0 },
        { inFlight: 0, window: 0, coolingUntil: 0 },
        // Another target on the same upstream account sees the same account counts.
        { inFlight: 3, window: 1, coolingUntil: 0 },
      ]);
      assert.deepEqual(await s.view([]), []);
    });

    test("acquire refuses with 'full' at the upstream's limit, and a refused acquire takes nothing", async () => {
      const s = await store();
      const a = up('full');
      leaseOf(await s.acquire(req(a, { limit: 2 })));
      leaseOf(await s.acquire(req(a, { limit: 2, deep: true })));
      assert.deepEqual(await s.acquire(req(a, { limit: 2 })), { ok: false, reason: 'full' });
      assert.deepEqual(await s.acquire(req(a, { limit: 2, deep: true })), { ok: false, reason: 'full' });
      const [v] = await s.view([ref(a)]);
      assert.equal(v!.inFlight, 2);
      assert.equal(v!.window, 1);
      // A higher limit (another config) lets the next one in.
      leaseOf(await s.acquire(req(a, { limit: 3 })));
    });

    test("a deep acquire refuses with 'hot' at the window threshold; a non-deep one still gets in", async () => {
      const s = await store();
      const a = up('hot');
      const deep = req(a, { deep: true, threshold: 2, limit: 10 });
      const l1 = leaseOf(await s.acquire(deep));
      leaseOf(await s.acquire(deep));
      assert.deepEqual(await s.acquire(deep), { ok: false, reason: 'hot' });
      const plain = leaseOf(await s.acquire(req(a, { threshold: 2, limit: 10 })));
      assert.equal(plain.deep, false);
      assert.equal(l1.deep, true);
      assert.equal(l1.upstream, a);
      let [v] = await s.view([ref(a)]);
      assert.deepEqual(v, { inFlight: 3, window: 2, coolingUntil: 0 });
      // Releasing a deep lease frees its window place.
      await s.release(l1);
      leaseOf(await s.acquire(deep));
      [v] = await s.view([ref(a)]);
      assert.deepEqual(v, { inFlight: 3, window: 2, coolingUntil: 0 });
    });

    test('non-deep calls never enter the window', async () => {
      const s = await store();
      const a = up('plain');
      for (let i = 0; i < 5; i++) leaseOf(await s.acquire(req(a, { threshold: 1 })));
      const [v] = await s.view([ref(a)]);
      assert.deepEqual(v, { inFlight: 5, window: 0, coolingUntil: 0 });
      // The window is still empty for a deep call, threshold 1.
      leaseOf(await s.acquire(req(a, { deep: true, threshold: 1 })));
      assert.deepEqual(await s.acquire(req(a, { deep: true, threshold: 1 })), { ok: false, reason: 'hot' });
    });

    test('release is idempotent and counts never go negative', async () => {
      const s = await store();
      const a = up('rel');
      const r = req(a, { limit: 2, deep: true, threshold: 2 });
      const l1 = leaseOf(await s.acquire(r));
      const l2 = leaseOf(await s.acquire(r));
      await s.release(l1);
      await s.release(l1);
      await s.release(l1);
      let [v] = await s.view([ref(a)]);
      assert.deepEqual(v, { inFlight: 1, window: 1, coolingUntil: 0 });
      // Releasing l1 three times freed one slot, not three.
      const l3 = leaseOf(await s.acquire(r));
      assert.deepEqual(await s.acquire(r), { ok: false, reason: 'full' });
      // A lease this store never issued changes nothing.
      await s.release({ id: randomUUID(), upstream: a, deep: true, from: l1.from });
      [v] = await s.view([ref(a)]);
      assert.deepEqual(v, { inFlight: 2, window: 2, coolingUntil: 0 });
      for (const l of [l2, l3, l2, l3, l1]) await s.release(l);
      [v] = await s.view([ref(a)]);
      assert.deepEqual(v, { inFlight: 0, window: 0, coolingUntil: 0 });
      // Zero, not below: exactly `limit` new slots are granted.
      leaseOf(await s.acquire(r));
      leaseOf(await s.acquire(r));
      assert.deepEqual(await s.acquire(r), { ok: false, reason: 'full' });
    });

    test('a window entry stops counting after windowMs even if never released (its in-flight slot stays)', async () => {
      const s = await store(30_000);
      const a = up('win');
      const r = req(a, { deep: true, threshold: 1, windowMs: 300 });
      leaseOf(await s.acquire(r));
      assert.deepEqual(await s.acquire(r), { ok: false, reason: 'hot' });
      let [v] = await s.view([ref(a, { windowMs: 300 })]);
      assert.deepEqual(v, { inFlight: 1, window: 1, coolingUntil: 0 });
      await sleep(400);
      [v] = await s.view([ref(a, { windowMs: 300 })]);
      assert.deepEqual(v, { inFlight: 1, window: 0, coolingUntil: 0 });
      // The window place is free again.
      leaseOf(await s.acquire(r));
    });

    test('an in-flight slot stops counting after lease_ms even if never released', async () => {
      const s = await store(600);
      const a = up('lease');
      const r = req(a, { limit: 1 });
      leaseOf(await s.acquire(r));
      assert.deepEqual(await s.acquire(r), { ok: false, reason: 'full' });
      let [v] = await s.view([ref(a)]);
      assert.equal(v!.inFlight, 1);
      await sleep(250);
      [v] = await s.view([ref(a)]);
      assert.equal(v!.inFlight, 1, 'the lease lapsed before lease_ms');
      await sleep(450);
      [v] = await s.view([ref(a)]);
      assert.equal(v!.inFlight, 0, 'the lease outlived lease_ms');
      leaseOf(await s.acquire(r));
    });

    test('setCooldown keeps the later value and shows in view until it passes', async () => {
      const s = await store();
      const a = up('cool');
      const key = `${a}/m1`;
      const other = `${a}/m2`;
      const now = Date.now();
      await s.setCooldown(key, now + 5_000);
      await s.setCooldown(key, now + 400);
      let [v, w] = await s.view([ref(a, { key }), ref(a, { key: other })]);
      assert.equal(v!.coolingUntil, now + 5_000, 'an earlier cooldown replaced a later one');
      assert.equal(w!.coolingUntil, 0, 'the cooldown is per target key');

      await s.setCooldown(other, now + 300);
      await s.setCooldown(other, now + 350);
      [, w] = await s.view([ref(a, { key }), ref(a, { key: other })]);
      assert.equal(w!.coolingUntil, now + 350, 'a later cooldown did not replace an earlier one');
      await sleep(Math.max(0, now + 450 - Date.now()));
      [v, w] = await s.view([ref(a, { key }), ref(a, { key: other })]);
      assert.equal(w!.coolingUntil, 0, 'a past cooldown still shows');
      assert.equal(v!.coolingUntil, now + 5_000);

      // A cooldown already in the past never shows.
      await s.setCooldown(`${a}/m3`, Date.now() - 1_000);
      const [p] = await s.view([ref(a, { key: `${a}/m3` })]);
      assert.equal(p!.coolingUntil, 0);
    });

    test('pins: set, replace, and expire after their TTL', async () => {
      const s = await store();
      const session = `sess-${randomUUID()}`;
      assert.equal(await s.getPin(session), undefined);
      await s.setPin(session, 'up1/model', 800);
      assert.equal(await s.getPin(session), 'up1/model');
      await s.setPin(session, 'up2/model', 800);
      assert.equal(await s.getPin(session), 'up2/model');
      assert.equal(await s.getPin(`${session}-other`), undefined);
      await sleep(400);
      assert.equal(await s.getPin(session), 'up2/model', 'the pin expired before its TTL');
      // Setting again refreshes the TTL.
      await s.setPin(session, 'up2/model', 800);
      await sleep(550);
      assert.equal(await s.getPin(session), 'up2/model', 'setPin did not refresh the TTL');
      await sleep(400);
      assert.equal(await s.getPin(session), undefined, 'the pin outlived its TTL');
    });

    test('50 concurrent acquires with limit 10 grant exactly 10; 50 deep ones with threshold 7 grant exactly 7', async () => {
      const s = await store();
      const a = up('race');
      const results = await Promise.all(Array.from({ length: 50 }, () => s.acquire(req(a, { limit: 10 }))));
      assert.equal(results.filter((r) => r.ok).length, 10);
      assert.ok(results.filter((r) => !r.ok).every((r) => !r.ok && r.reason === 'full'));
      const ids = new Set(results.flatMap((r) => (r.ok ? [r.lease.id] : [])));
      assert.equal(ids.size, 10, 'lease ids are unique');
      let [v] = await s.view([ref(a)]);
      assert.equal(v!.inFlight, 10);

      const b = up('race-deep');
      const deep = await Promise.all(Array.from({ length: 50 }, () => s.acquire(req(b, { limit: 100, deep: true, threshold: 7 }))));
      assert.equal(deep.filter((r) => r.ok).length, 7);
      assert.ok(deep.filter((r) => !r.ok).every((r) => !r.ok && r.reason === 'hot'));
      [v] = await s.view([ref(b)]);
      assert.deepEqual(v, { inFlight: 7, window: 7, coolingUntil: 0 });

      // And releasing them all concurrently brings both back to zero.
      await Promise.all([...results, ...deep].flatMap((r) => (r.ok ? [s.release(r.lease), s.release(r.lease)] : [])));
      const [va, vb] = await s.view([ref(a), ref(b)]);
      assert.deepEqual(va, { inFlight: 0, window: 0, coolingUntil: 0 });
      assert.deepEqual(vb, { inFlight: 0, window: 0, coolingUntil: 0 });
    });

    if (flavour.name !== 'MemoryStore') {
      test('the state lives in Redis under the documented keys', async () => {
        const s = await store();
        const a = up('keys');
        const l = leaseOf(await s.acquire(req(a, { deep: true })));
        assert.equal(l.from, 'redis');
        const inflight = await reader.keys(`{contract-*}:inflight:${a}`);
        const window = await reader.keys(`{contract-*}:window:${a}`);
        assert.equal(inflight.length, 1, `inflight key for ${a}`);
        assert.equal(window.length, 1, `window key for ${a}`);
        assert.deepEqual(await reader.zrange(inflight[0]!, 0, -1), [l.id]);
        assert.deepEqual(await reader.zrange(window[0]!, 0, -1), [l.id]);
        await s.release(l);
        assert.equal(await reader.zcard(inflight[0]!), 0);
        assert.equal(await reader.zcard(window[0]!), 0);
      });
    }
  });
}
