/**
 * The shared-store contract, run unchanged against the three stores the router can sit on:
 * MemoryStore, RedisStore (its Lua scripts on a real redis-server) and StateStore over Redis
 * (the wrapper the gateway uses). Every store under test gets a key prefix of its own and
 * every test its own upstream names, so nothing one test leaves behind is seen by another.
 * The learned-capacity law runs in TypeScript (memory) and in Lua (Redis): the same table of
 * feedback steps must give the same limits on every store.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import type { Redis } from 'ioredis';
import { StateStore } from '../../src/store/index.js';
import { MemoryStore } from '../../src/store/memory.js';
import { RedisStore, createRedisClient } from '../../src/store/redis.js';
import { PROBE_BASE_MS, type CapacityBounds, type CapacityFeedback } from '../../src/store/capacity.js';
import type { AdmitResult, Candidate, Lease, SlotRequest, SlotResult, TargetRef, TargetView } from '../../src/store/types.js';
import { RedisServer } from '../helpers/redis-server.js';

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** What every store offers the router (SharedStore without `kind`, which StateStore lacks). */
interface StoreUnderTest {
  view(targets: readonly TargetRef[]): Promise<TargetView[]>;
  acquire(req: SlotRequest): Promise<SlotResult>;
  admit(candidates: readonly Candidate[], extra?: readonly TargetRef[]): Promise<AdmitResult>;
  renew(leases: readonly Lease[]): Promise<void>;
  release(lease: Lease, feedback?: CapacityFeedback, bounds?: CapacityBounds): Promise<void>;
  answered(lease: Lease): Promise<void>;
  feedback(upstream: string, feedback: CapacityFeedback, bounds: CapacityBounds): Promise<void>;
  setCooldown(targetKey: string, untilMs: number): Promise<void>;
  getPin(session: string): Promise<string | undefined>;
  setPin(session: string, target: string, ttlMs: number): Promise<void>;
  getJournal(id: string): Promise<string | undefined>;
  putJournal(id: string, value: string, ttlMs: number): Promise<void>;
  close(): Promise<void>;
}

interface Flavour {
  name: string;
  /** A store whose in-flight leases live `leaseMs`. */
  make(leaseMs: number): Promise<StoreUnderTest>;
  /** Checks after the suite (e.g. that it really ran on Redis). */
  check?(): Promise<void>;
  /** Renews its own held leases (StateStore's heartbeat): a lease lapses only when its holder stops. */
  autoRenews?: boolean;
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
const WIDE: CapacityBounds = { start: 100, min: 1, ceiling: 1000 };

/** The bounds of the learned capacity for every call at max_concurrency `n` (start and ceiling n, min 1). */
const callsOf = (n: number): CapacityBounds => ({ start: n, min: 1, ceiling: n });

/** A slot request with defaults: limit 100, not deep, capacity WIDE, calls callsOf(limit). */
function req(upstream: string, o: Partial<SlotRequest> = {}): SlotRequest {
  return { upstream, limit: 100, deep: false, capacity: WIDE, calls: callsOf(o.limit ?? 100), ...o };
}

function ref(upstream: string, o: Partial<TargetRef> = {}): TargetRef {
  return { key: `${upstream}/model`, upstream, capacity: WIDE, calls: callsOf(100), ...o };
}

const cap = (start: number, ceiling = 1000, min = 1): CapacityBounds => ({ start, min, ceiling });

/** An admission candidate: the slot request `req` gives, for target `<upstream>/model`, its cooldown checked unless `coolingOk`. */
function cand(upstream: string, o: Partial<Candidate> = {}): Candidate {
  return { ...req(upstream, o), key: `${upstream}/model`, coolingOk: false, ...o };
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

    test('view counts in-flight and deep leases per account, with its learned limit, one view per target in order', async () => {
      const s = await store();
      const [a, b, c] = [up('a'), up('b'), up('c')];
      leaseOf(await s.acquire(req(a)));
      leaseOf(await s.acquire(req(a)));
      leaseOf(await s.acquire(req(a, { deep: true })));
      leaseOf(await s.acquire(req(b, { deep: true })));
      const v = await s.view([ref(a), ref(b), ref(c, { capacity: cap(7) }), ref(a, { key: `${a}/other-model` })]);
      assert.deepEqual(v, [
        { inFlight: 3, deep: 1, limit: 100, callLimit: 100, coolingUntil: 0 },
        { inFlight: 1, deep: 1, limit: 100, callLimit: 100, coolingUntil: 0 },
        // Nothing learned yet: the starting guess.
        { inFlight: 0, deep: 0, limit: 7, callLimit: 100, coolingUntil: 0 },
        // Another target on the same upstream account sees the same account counts.
        { inFlight: 3, deep: 1, limit: 100, callLimit: 100, coolingUntil: 0 },
      ]);
      assert.deepEqual(await s.view([]), []);
    });

    test("acquire refuses with 'full' at the upstream's max_concurrency, and a refused acquire takes nothing", async () => {
      const s = await store();
      const a = up('full');
      leaseOf(await s.acquire(req(a, { limit: 2 })));
      leaseOf(await s.acquire(req(a, { limit: 2, deep: true })));
      assert.deepEqual(await s.acquire(req(a, { limit: 2 })), { ok: false, reason: 'full' });
      assert.deepEqual(await s.acquire(req(a, { limit: 2, deep: true })), { ok: false, reason: 'full' });
      const [v] = await s.view([ref(a)]);
      assert.equal(v!.inFlight, 2);
      assert.equal(v!.deep, 1);
      // A higher limit (another config) lets the next one in.
      leaseOf(await s.acquire(req(a, { limit: 3 })));
    });

    test("a deep acquire refuses with 'hot' at the learned limit, before 'full'; a non-deep one still gets in; the lease says how many deep calls it found", async () => {
      const s = await store();
      const a = up('hot');
      const deep = req(a, { deep: true, capacity: cap(2), limit: 10 });
      const l1 = leaseOf(await s.acquire(deep));
      const l2 = leaseOf(await s.acquire(deep));
      assert.deepEqual([l1.deepInFlight, l2.deepInFlight], [1, 2]);
      assert.deepEqual(await s.acquire(deep), { ok: false, reason: 'hot' });
      const plain = leaseOf(await s.acquire(req(a, { capacity: cap(2), limit: 10 })));
      assert.equal(plain.deep, false);
      assert.equal(plain.deepInFlight, 0);
      // Hot is decided before full: an account at both limits is hot (the call sheds, not queues).
      assert.deepEqual(await s.acquire(req(a, { deep: true, capacity: cap(2), limit: 3 })), { ok: false, reason: 'hot' });
      let [v] = await s.view([ref(a, { capacity: cap(2) })]);
      assert.deepEqual(v, { inFlight: 3, deep: 2, limit: 2, callLimit: 100, coolingUntil: 0 });
      // Releasing a deep lease frees its place.
      await s.release(l1);
      leaseOf(await s.acquire(deep));
      [v] = await s.view([ref(a, { capacity: cap(2) })]);
      assert.deepEqual(v, { inFlight: 3, deep: 2, limit: 2, callLimit: 100, coolingUntil: 0 });
    });

    test('non-deep calls never count against the learned limit', async () => {
      const s = await store();
      const a = up('plain');
      for (let i = 0; i < 5; i++) leaseOf(await s.acquire(req(a, { capacity: cap(1) })));
      const [v] = await s.view([ref(a, { capacity: cap(1) })]);
      assert.deepEqual(v, { inFlight: 5, deep: 0, limit: 1, callLimit: 100, coolingUntil: 0 });
      leaseOf(await s.acquire(req(a, { deep: true, capacity: cap(1) })));
      assert.deepEqual(await s.acquire(req(a, { deep: true, capacity: cap(1) })), { ok: false, reason: 'hot' });
    });

    test('the learned limit for every call: a non-deep refusal cuts it, a call at it is refused (full, or hot for a deep one), a served call at it raises it after the probe wait', async () => {
      const s = await store();
      const a = up('calls');
      const calls = callsOf(10);
      const plain = req(a, { limit: 10, calls });
      const deep = req(a, { limit: 10, calls, deep: true });
      const view = async () => (await s.view([ref(a, { calls })]))[0]!;
      const held: Lease[] = [];
      for (let i = 0; i < 6; i++) held.push(leaseOf(await s.acquire(plain)));
      assert.deepEqual(
        held.map((l) => l.inFlight),
        [1, 2, 3, 4, 5, 6],
        'each lease says how many calls it found, itself included',
      );
      assert.equal((await view()).callLimit, 10, 'the limit starts at max_concurrency');
      // A deep lease's refusal is the deep capacity's: the limit for every call stays.
      const d = leaseOf(await s.acquire(deep));
      await s.release(d, { signal: 'throttled', inFlight: 3 }, WIDE);
      assert.equal((await view()).callLimit, 10, "a deep call's feedback does not touch the limit for every call");
      assert.equal((await view()).limit, 2, 'it cuts the deep limit');
      // The second call is refused while six hold places: the account takes 5.
      await s.release(held[1]!, { signal: 'throttled', inFlight: held[1]!.inFlight }, calls);
      let v = await view();
      assert.equal(v.callLimit, 5, 'six in flight at the refusal: the account takes 5');
      assert.equal(v.limit, 2, 'a non-deep refusal does not touch the deep limit');
      assert.equal(v.inFlight, 5);
      assert.deepEqual(await s.acquire(plain), { ok: false, reason: 'full' }, 'a call at the learned limit is refused full (it may queue)');
      assert.deepEqual(await s.acquire(deep), { ok: false, reason: 'hot' }, 'a deep call at it is refused hot (it sheds)');
      // The same refusal again changes nothing (once per lease).
      await s.release(held[1]!, { signal: 'throttled', inFlight: 6 }, calls);
      assert.equal((await view()).callLimit, 5);
      // Served at the limit after the probe wait: one more place.
      await s.release(held[2]!, { signal: 'ok', inFlight: 5 }, calls); // the first word after the cut starts no raise
      assert.equal((await view()).callLimit, 5, 'no raise before the probe wait');
      await sleep(PROBE_BASE_MS + 100);
      await s.release(held[3]!, { signal: 'ok', inFlight: held[3]!.inFlight }, calls);
      assert.equal((await view()).callLimit, 5, 'a call served below the limit says nothing');
      await s.release(held[4]!, { signal: 'ok', inFlight: 5 }, calls);
      v = await view();
      assert.equal(v.callLimit, 6, 'served at the limit after the probe wait: additive raise');
      assert.equal(v.inFlight, 2);
      // max_concurrency holds above the learned limit, and a reload that lowers it applies at once.
      assert.equal((await s.view([ref(a, { calls: callsOf(4) })]))[0]!.callLimit, 4);
    });

    test('release is idempotent and counts never go negative', async () => {
      const s = await store();
      const a = up('rel');
      const r = req(a, { limit: 2, deep: true, capacity: cap(2) });
      const l1 = leaseOf(await s.acquire(r));
      const l2 = leaseOf(await s.acquire(r));
      await s.release(l1);
      await s.release(l1);
      await s.release(l1);
      let [v] = await s.view([ref(a, { capacity: cap(2) })]);
      assert.deepEqual(v, { inFlight: 1, deep: 1, limit: 2, callLimit: 100, coolingUntil: 0 });
      // Releasing l1 three times freed one slot, not three.
      const l3 = leaseOf(await s.acquire(r));
      assert.deepEqual(await s.acquire(r), { ok: false, reason: 'hot' });
      // A lease this store never issued changes nothing.
      await s.release({ id: randomUUID(), upstream: a, deep: true, from: l1.from, inFlight: 1, deepInFlight: 1, probe: false });
      [v] = await s.view([ref(a, { capacity: cap(2) })]);
      assert.deepEqual(v, { inFlight: 2, deep: 2, limit: 2, callLimit: 100, coolingUntil: 0 });
      for (const l of [l2, l3, l2, l3, l1]) await s.release(l);
      [v] = await s.view([ref(a, { capacity: cap(2) })]);
      assert.deepEqual(v, { inFlight: 0, deep: 0, limit: 2, callLimit: 100, coolingUntil: 0 });
      // Zero, not below: exactly `limit` new places are granted.
      leaseOf(await s.acquire(r));
      leaseOf(await s.acquire(r));
      assert.deepEqual(await s.acquire(r), { ok: false, reason: 'hot' });
    });

    test('a lease lapses after lease_ms unless renewed; renewing keeps it (in flight and deep)', async (t) => {
      const s = await store(600);
      const a = up('lease');
      const r = req(a, { limit: 2, deep: true, capacity: cap(2) });
      const kept = leaseOf(await s.acquire(r));
      const other = leaseOf(await s.acquire(r));
      assert.deepEqual(await s.acquire(r), { ok: false, reason: 'hot' });
      const counts = async () => {
        const [v] = await s.view([ref(a, { capacity: cap(2) })]);
        return [v!.inFlight, v!.deep];
      };
      if (flavour.autoRenews) {
        t.diagnostic('this store renews the leases it holds itself (its heartbeat): they outlive lease_ms until released');
        await sleep(1_300);
        assert.deepEqual(await counts(), [2, 2], 'a held lease lapsed although the heartbeat should renew it');
        await s.release(other);
        await s.release(kept);
        assert.deepEqual(await counts(), [0, 0]);
        return;
      }
      await sleep(350);
      await s.renew([kept]);
      assert.deepEqual(await counts(), [2, 2], 'a lease lapsed before lease_ms');
      await sleep(400);
      assert.deepEqual(await counts(), [1, 1], 'the unrenewed lease outlived lease_ms, or the renewed one lapsed');
      await sleep(400);
      assert.deepEqual(await counts(), [0, 0], 'the renewed lease outlived its renewal');
      // Renewing a lapsed or released lease brings nothing back.
      await s.renew([kept]);
      assert.deepEqual(await counts(), [0, 0]);
      leaseOf(await s.acquire(r));
    });

    test('the learned limit follows one table of feedback steps (the same in TypeScript and Lua)', async () => {
      const s = await store();
      const a = up('law');
      const b = cap(8, 12);
      const limit = async () => (await s.view([ref(a, { capacity: b })]))[0]!.limit;
      const steps: [CapacityFeedback, number, string][] = [
        [{ signal: 'ok', inFlight: 2 }, 8, 'a call below the limit says nothing (its word starts the calm)'],
        [{ signal: 'ok', inFlight: 8 }, 8, 'served at the limit within the first calm: no raise yet'],
        [{ signal: 'throttled', inFlight: 6 }, 8, 'it served 8 at once a moment ago: a refusal below that is not about concurrency'],
        [{ signal: 'throttled', inFlight: 8 }, 8, 'a refusal at the level served uses that evidence up'],
        [{ signal: 'throttled', inFlight: 8 }, 7, 'a second there, nothing served there between: the account takes 7'],
        [{ signal: 'throttled', inFlight: 8 }, 7, 'the same refusal again changes nothing'],
        [{ signal: 'throttled', inFlight: 9 }, 7, 'a refusal above the limit changes nothing'],
        [{ signal: 'ok', inFlight: 7 }, 7, 'no raise before the probe wait'],
      ];
      for (const [f, want, why] of steps) {
        await s.feedback(a, f, b);
        assert.equal(await limit(), want, `${JSON.stringify(f)}: ${why}`);
      }
      // An account that has served nothing yet: every refusal cuts.
      const cold = up('law-cold');
      const coldSteps: [CapacityFeedback, number, string][] = [
        [{ signal: 'throttled', inFlight: 3 }, 2, 'nothing served yet: the account takes 2'],
        [{ signal: 'throttled', inFlight: 1 }, 1, 'never below min'],
        [{ signal: 'ok', inFlight: 1 }, 1, 'no raise before the probe wait'],
      ];
      for (const [f, want, why] of coldSteps) {
        await s.feedback(cold, f, b);
        assert.equal((await s.view([ref(cold, { capacity: b })]))[0]!.limit, want, `${JSON.stringify(f)}: ${why}`);
      }
      // Feedback given with a release applies too, once per lease.
      const c = up('law-release');
      const lease = leaseOf(await s.acquire(req(c, { deep: true, capacity: cap(3) })));
      leaseOf(await s.acquire(req(c, { deep: true, capacity: cap(3) })));
      await s.release(lease, { signal: 'throttled', inFlight: 2 }, cap(3));
      await s.release(lease, { signal: 'throttled', inFlight: 2 }, cap(3));
      assert.equal((await s.view([ref(c, { capacity: cap(3) })]))[0]!.limit, 1);

      // A refusal reported while more deep calls hold places than when it took its own (they
      // may have reached the provider first) cuts to the count at the refusal, not to 1.
      const d = up('law-late');
      const early = leaseOf(await s.acquire(req(d, { deep: true, capacity: cap(8) })));
      assert.equal(early.deepInFlight, 1);
      for (let i = 0; i < 4; i++) leaseOf(await s.acquire(req(d, { deep: true, capacity: cap(8) })));
      await s.release(early, { signal: 'throttled', inFlight: early.deepInFlight }, cap(8));
      assert.equal((await s.view([ref(d, { capacity: cap(8) })]))[0]!.limit, 4, 'five in flight at the refusal: the account takes 4');
      // A stall reported while the call runs reads the count at its start alone.
      const e = up('law-late-stall');
      for (let i = 0; i < 2; i++) leaseOf(await s.acquire(req(e, { deep: true, capacity: cap(8) })));
      const third = leaseOf(await s.acquire(req(e, { deep: true, capacity: cap(8) })));
      for (let i = 0; i < 3; i++) leaseOf(await s.acquire(req(e, { deep: true, capacity: cap(8) })));
      await s.feedback(e, { signal: 'throttled', inFlight: third.deepInFlight }, cap(8));
      assert.equal((await s.view([ref(e, { capacity: cap(8) })]))[0]!.limit, 2, 'stalled as the third in flight: the account takes 2 (the three admitted since say nothing)');
    });

    test(`after ${PROBE_BASE_MS} ms calm, a call served at the limit raises it by one; the ceiling holds`, async () => {
      const s = await store();
      const a = up('probe');
      const b = cap(4, 4);
      await s.feedback(a, { signal: 'throttled', inFlight: 3 }, b);
      const limit = async () => (await s.view([ref(a, { capacity: b })]))[0]!.limit;
      assert.equal(await limit(), 2);
      await sleep(PROBE_BASE_MS + 100);
      await s.feedback(a, { signal: 'ok', inFlight: 2 }, b);
      assert.equal(await limit(), 3, 'additive raise after the first throttle');
      await s.feedback(a, { signal: 'ok', inFlight: 3 }, b);
      assert.equal(await limit(), 3, 'one raise per probe wait');
      // Slow start: an account that never throttled grows by half, after its first calm.
      const c = up('slow-start');
      const wide = cap(4, 40);
      const deep = req(c, { deep: true, capacity: wide });
      const held: Lease[] = [];
      for (let i = 0; i < 4; i++) held.push(leaseOf(await s.acquire(deep)));
      assert.ok(held.every((l) => !l.probe), 'places within the first limit seen are trusted: no probe');
      await s.feedback(c, { signal: 'ok', inFlight: 4 }, wide);
      assert.equal((await s.view([ref(c, { capacity: wide })]))[0]!.limit, 4, 'the first word starts the calm');
      await sleep(PROBE_BASE_MS + 100);
      await s.feedback(c, { signal: 'ok', inFlight: 4 }, wide);
      assert.equal((await s.view([ref(c, { capacity: wide })]))[0]!.limit, 6, 'slow start: 4 + 2');

      // The probe gate: one call at a time above the trusted count (4), on every store.
      const p1 = leaseOf(await s.acquire(deep));
      assert.equal(p1.probe, true, 'the fifth place is a probe of the raised limit');
      assert.deepEqual(await s.acquire(deep), { ok: false, reason: 'hot' }, 'a second call above the trusted count waits for the probe');
      await s.answered(p1);
      const p2 = leaseOf(await s.acquire(deep));
      assert.equal(p2.probe, true, 'the answer trusted one place (5): the sixth is the next probe');
      await s.release(p2);
      const p3 = leaseOf(await s.acquire(deep));
      assert.equal(p3.probe, true, 'a probe that ended without an answer opens the gate for the next');
      await s.release(p3);
      await s.release(held[0]!);
      const ok = leaseOf(await s.acquire(deep));
      assert.equal(ok.probe, false, 'within the trusted count (the fifth of 5): no probe');
      // A bound moved by a reload applies at once.
      assert.equal((await s.view([ref(a, { capacity: cap(4, 2) })]))[0]!.limit, 2);
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

    test('journal: put, read back unchanged, replaced, gone after its TTL', async () => {
      const s = await store();
      const id = `resp_${randomUUID()}`;
      assert.equal(await s.getJournal(id), undefined);
      const text = JSON.stringify({ v: 1, input: [{ role: 'user', content: 'héllo 🙂' }], output: [] });
      await s.putJournal(id, text, 60_000);
      assert.equal(await s.getJournal(id), text);
      await s.putJournal(id, '{"v":1}', 150);
      assert.equal(await s.getJournal(id), '{"v":1}');
      await sleep(250);
      assert.equal(await s.getJournal(id), undefined);
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

    test('50 concurrent acquires with limit 10 grant exactly 10; 50 deep ones with a learned limit of 7 grant exactly 7', async () => {
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
      const deep = await Promise.all(Array.from({ length: 50 }, () => s.acquire(req(b, { limit: 100, deep: true, capacity: cap(7) }))));
      assert.equal(deep.filter((r) => r.ok).length, 7);
      assert.ok(deep.filter((r) => !r.ok).every((r) => !r.ok && r.reason === 'hot'));
      [v] = await s.view([ref(b, { capacity: cap(7) })]);
      assert.deepEqual(v, { inFlight: 7, deep: 7, limit: 7, callLimit: 100, coolingUntil: 0 });

      // And releasing them all concurrently brings both back to zero.
      await Promise.all([...results, ...deep].flatMap((r) => (r.ok ? [s.release(r.lease), s.release(r.lease)] : [])));
      const [va, vb] = await s.view([ref(a), ref(b, { capacity: cap(7) })]);
      assert.deepEqual(va, { inFlight: 0, deep: 0, limit: 100, callLimit: 100, coolingUntil: 0 });
      assert.deepEqual(vb, { inFlight: 0, deep: 0, limit: 7, callLimit: 100, coolingUntil: 0 });
    });

    test('admit tries the candidates in order, takes the first that admits, says why the ones before refused, and reads every view after it', async () => {
      const s = await store();
      const [a, b, c, d] = [up('adm-a'), up('adm-b'), up('adm-c'), up('adm-d')];
      leaseOf(await s.acquire(req(a, { limit: 1 })));
      const hotDeep = { deep: true, capacity: cap(1), limit: 10 };
      leaseOf(await s.acquire(req(b, hotDeep)));
      const got = await s.admit([cand(a, { limit: 1, deep: true }), cand(b, hotDeep), cand(c, { deep: true }), cand(d)], [ref(a, { key: `${a}/other` })]);
      assert.ok(got.taken, 'the third candidate had room');
      assert.equal(got.taken.index, 2);
      assert.equal(got.taken.lease.upstream, c);
      assert.equal(got.taken.lease.deep, true);
      assert.deepEqual([got.taken.lease.inFlight, got.taken.lease.deepInFlight], [1, 1]);
      // Full (max_concurrency 1), hot (learned limit 1), taken, not tried.
      assert.deepEqual(got.refused, ['full', 'hot', null, null]);
      assert.deepEqual(got.views, [
        { inFlight: 1, deep: 0, limit: 100, callLimit: 1, coolingUntil: 0 },
        { inFlight: 1, deep: 1, limit: 1, callLimit: 10, coolingUntil: 0 },
        { inFlight: 1, deep: 1, limit: 100, callLimit: 100, coolingUntil: 0 },
        { inFlight: 0, deep: 0, limit: 100, callLimit: 100, coolingUntil: 0 },
        // The extra target (read only): the same account as the first candidate.
        { inFlight: 1, deep: 0, limit: 100, callLimit: 100, coolingUntil: 0 },
      ]);
      // The slot is a lease like acquire's: released, the account is empty again.
      await s.release(got.taken.lease);
      const [v] = await s.view([ref(c)]);
      assert.deepEqual([v!.inFlight, v!.deep], [0, 0]);
      assert.deepEqual(await s.admit([]), { taken: null, refused: [], views: [] });
    });

    test('admit refuses a cooling candidate unless it was chosen knowing it cools; every refusal takes nothing', async () => {
      const s = await store();
      const [a, b] = [up('cool-a'), up('cool-b')];
      const until = Date.now() + 5_000;
      await s.setCooldown(`${a}/model`, until);
      leaseOf(await s.acquire(req(b, { limit: 1 })));
      const none = await s.admit([cand(a), cand(b, { limit: 1 })]);
      assert.equal(none.taken, null);
      assert.deepEqual(none.refused, ['cooling', 'full']);
      assert.equal(none.views[0]!.coolingUntil, until);
      assert.deepEqual([none.views[0]!.inFlight, none.views[1]!.inFlight], [0, 1], 'a refusal took a place');
      // The soonest cooling target, forced by the router: its cooldown does not refuse it.
      const forced = await s.admit([cand(a, { coolingOk: true })]);
      assert.equal(forced.taken?.index, 0);
      assert.deepEqual(forced.refused, [null]);
      assert.equal(forced.views[0]!.inFlight, 1);
    });

    test('20 concurrent admissions over two accounts of 5 places each grant exactly 10, the first account filled first', async () => {
      const s = await store();
      const [a, b] = [up('adm-race-a'), up('adm-race-b')];
      const tries = [cand(a, { limit: 5 }), cand(b, { limit: 5 })];
      const results = await Promise.all(Array.from({ length: 20 }, () => s.admit(tries)));
      const taken = results.flatMap((r) => (r.taken ? [r.taken.index] : []));
      assert.equal(taken.length, 10);
      assert.deepEqual([taken.filter((i) => i === 0).length, taken.filter((i) => i === 1).length], [5, 5]);
      assert.ok(results.filter((r) => !r.taken).every((r) => r.refused.join() === 'full,full'));
      const [va, vb] = await s.view([ref(a), ref(b)]);
      assert.deepEqual([va!.inFlight, vb!.inFlight], [5, 5]);
    });

    if (flavour.name !== 'MemoryStore') {
      test('the state lives in Redis under the documented keys', async () => {
        const s = await store();
        const a = up('keys');
        const l = leaseOf(await s.acquire(req(a, { deep: true })));
        assert.equal(l.from, 'redis');
        const inflight = await reader.keys(`{contract-*}:inflight:${a}`);
        const deep = await reader.keys(`{contract-*}:deep:${a}`);
        assert.equal(inflight.length, 1, `inflight key for ${a}`);
        assert.equal(deep.length, 1, `deep key for ${a}`);
        assert.deepEqual(await reader.zrange(inflight[0]!, 0, -1), [l.id]);
        assert.deepEqual(await reader.zrange(deep[0]!, 0, -1), [l.id]);
        await s.release(l, { signal: 'throttled', inFlight: 40 }, WIDE);
        assert.equal(await reader.zcard(inflight[0]!), 0);
        assert.equal(await reader.zcard(deep[0]!), 0);
        const capKey = await reader.keys(`{contract-*}:cap:${a}`);
        assert.equal(capKey.length, 1, `cap key for ${a}`);
        assert.equal(await reader.hget(capKey[0]!, 'limit'), '39');
      });
    }
  });
}
