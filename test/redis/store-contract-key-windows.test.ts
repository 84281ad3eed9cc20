/**
 * The key-windows contract (KeyWindows, src/store/types.ts), run unchanged against the
 * MemoryStore, RedisKeyWindows (its op of the turn's script and its numbered adds on a real
 * redis-server) and StateStore's `keyWindows` over Redis: a client key's slot and fixed
 * `rpm` / `tpm` windows taken all or nothing, settlements that never take a window below 0,
 * windows that end after their length, and (on Redis) the counter keys rate-limiter-flexible
 * named, so replicas of an older version count in the same windows.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import type { Redis } from 'ioredis';
import { TurnBatch } from '../../src/store/batch.js';
import { StateStore } from '../../src/store/index.js';
import { MemoryStore } from '../../src/store/memory.js';
import { RedisStore } from '../../src/store/redis.js';
import { RedisKeyWindows } from '../../src/store/redis-windows.js';
import { SpendCounters } from '../../src/store/spend.js';
import type { KeyAdmission, KeyWindow, KeyWindows } from '../../src/store/types.js';
import { RedisServer } from '../helpers/redis-server.js';

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

interface Flavour {
  name: string;
  /** Whether the flavour keeps its windows on Redis (the key-format case runs only there). */
  onRedis: boolean;
  /** A store of this kind, and the key prefix its Redis counters live under (null in memory). */
  make(): Promise<{ store: KeyWindows; prefix: string | null; close(): Promise<void> }>;
}

let redis: RedisServer;
let reader: Redis;
const closers: (() => Promise<void>)[] = [];
const silentLog = { info: () => {}, warn: () => {} };

const FLAVOURS: Flavour[] = [
  { name: 'MemoryStore', onRedis: false, make: async () => ({ store: new MemoryStore(30_000), prefix: null, close: async () => {} }) },
  {
    name: 'RedisKeyWindows',
    onRedis: true,
    make: async () => {
      const prefix = `kw-redis-${randomUUID()}`;
      const client = await redis.storeClient(prefix, 500, 30_000);
      const batch = new TurnBatch(client);
      const slots = new RedisStore(client, { prefix, leaseMs: 30_000 }, batch);
      const counters = new SpendCounters((viaRedis) => viaRedis(), { online: () => true, failed: () => {} }, client, `{${prefix}}`, batch);
      const store = new RedisKeyWindows(client, { prefix, leaseMs: 30_000 }, batch, slots, counters);
      return { store, prefix, close: async () => (counters.stop(), client.disconnect()) };
    },
  },
  {
    name: 'StateStore over Redis',
    onRedis: true,
    make: async () => {
      const prefix = `kw-state-${randomUUID()}`;
      const s = new StateStore(
        {
          redis_url: redis.url,
          redis_options: {},
          cluster_nodes: [],
          key_prefix: prefix,
          command_timeout_ms: 500,
          replicas: 1,
          lease_ms: 30_000,
          journal_ttl_ms: 60_000,
        },
        silentLog,
        {},
      );
      await s.ready(3_000);
      assert.equal(s.mode, 'redis');
      return {
        store: s.keyWindows,
        prefix,
        close: async () => {
          assert.equal(s.mode, 'redis', 'the suite ran on Redis, not on the local fallback');
          await s.close();
        },
      };
    },
  },
];

before(async () => {
  redis = await RedisServer.start();
  reader = redis.client();
});

after(async () => {
  for (const c of closers) await c();
  reader.disconnect();
  await redis.stop();
});

/** A window of a test's own (unique id), `limit` points, `points` taken, `windowS` long (60 unless given). */
const win = (id: string, limit: number, points: number, windowS = 60): KeyWindow => ({ key: id, limit, points, windowS });
const noSlot = (...windows: KeyWindow[]): KeyAdmission => ({ slot: { upstream: `key:${randomUUID()}`, limit: 0 }, windows });
const uid = (tag: string) => `${tag}:${randomUUID().slice(0, 8)}`;

for (const flavour of FLAVOURS) {
  describe(`key-windows contract: ${flavour.name}`, () => {
    async function open(): Promise<{ store: KeyWindows; prefix: string | null }> {
      const made = await flavour.make();
      closers.push(made.close);
      return made;
    }

    test('a take counts its points and reports the window: points counted and ms until it ends', async () => {
      const { store } = await open();
      const id = uid('rpm');
      const first = await store.admitKey(noSlot(win(id, 5, 1)));
      assert.equal(first.refused, null);
      assert.equal(first.lease, null, 'a key without max_concurrency takes no slot');
      assert.equal(first.windows[0]!.consumedPoints, 1);
      assert.ok(first.windows[0]!.msBeforeNext > 55_000 && first.windows[0]!.msBeforeNext <= 60_000, JSON.stringify(first.windows));
      const second = await store.admitKey(noSlot(win(id, 5, 3)));
      assert.equal(second.windows[0]!.consumedPoints, 4);
      assert.equal(await store.readWindow({ key: id, windowS: 60 }), 4);
      assert.equal(await store.readWindow({ key: uid('none'), windowS: 60 }), 0, 'no window: 0');
    });

    test('a take that does not fit is refused with the index of its window, and counts nothing anywhere', async () => {
      const { store } = await open();
      const [rpm, tpm] = [uid('rpm'), uid('tpm')];
      assert.equal((await store.admitKey(noSlot(win(rpm, 5, 1), win(tpm, 100, 60)))).refused, null);
      const refused = await store.admitKey(noSlot(win(rpm, 5, 1), win(tpm, 100, 50)));
      assert.equal(refused.refused, 1, 'the tpm window (index 1) is full');
      assert.deepEqual(
        refused.windows.map((w) => w.consumedPoints),
        [1, 60],
        'what each window holds, nothing of the refused take',
      );
      assert.equal(await store.readWindow({ key: rpm, windowS: 60 }), 1, 'the rpm point of the refused take was not counted');
      assert.equal((await store.admitKey(noSlot(win(rpm, 5, 1), win(tpm, 100, 40)))).refused, null, 'exactly up to the limit fits');
      assert.equal((await store.admitKey(noSlot(win(uid('big'), 10, 11)))).refused, 0, 'a take larger than the limit never fits');
    });

    test("the slot: refused 'concurrency' when full (windows untouched), freed by release, which is idempotent", async () => {
      const { store } = await open();
      const upstream = `key:${uid('k')}`;
      const rpm = uid('rpm');
      const req: KeyAdmission = { slot: { upstream, limit: 2 }, windows: [win(rpm, 100, 1)] };
      const a = await store.admitKey(req);
      const b = await store.admitKey(req);
      assert.equal(a.lease?.inFlight, 1);
      assert.equal(b.lease?.inFlight, 2);
      assert.equal(a.lease?.upstream, upstream);
      const full = await store.admitKey(req);
      assert.equal(full.refused, 'concurrency');
      assert.equal(full.lease, null);
      assert.equal(full.windows[0]!.consumedPoints, 2, 'the windows as they were');
      await store.release(a.lease!);
      await store.release(a.lease!);
      const c = await store.admitKey(req);
      assert.equal(c.refused, null);
      assert.equal(c.lease?.inFlight, 2, 'one place freed, once');
      assert.equal(await store.readWindow({ key: rpm, windowS: 60 }), 3);
      await Promise.all([b.lease!, c.lease!].map((l) => store.release(l)));
    });

    test('concurrent takes on one window admit exactly up to its limit', async () => {
      const { store } = await open();
      const id = uid('rpm');
      const all = await Promise.all(Array.from({ length: 25 }, () => store.admitKey(noSlot(win(id, 10, 1)))));
      assert.equal(all.filter((r) => r.refused === null).length, 10);
      assert.deepEqual(
        all
          .filter((r) => r.refused === null)
          .map((r) => r.windows[0]!.consumedPoints)
          .sort((x, y) => x - y),
        [1, 2, 3, 4, 5, 6, 7, 8, 9, 10],
      );
      assert.equal(await store.readWindow({ key: id, windowS: 60 }), 10);
    });

    test('a settlement charges or gives back points; a give-back never takes a window below 0', async () => {
      const { store } = await open();
      const id = uid('tpm');
      const got = await store.admitKey(noSlot(win(id, 100, 100)));
      await store.settleWindow(got.from, { key: id, windowS: 60 }, -80);
      assert.equal(await store.readWindow({ key: id, windowS: 60 }), 20);
      assert.equal((await store.admitKey(noSlot(win(id, 100, 80)))).refused, null, 'what was given back is room again');
      await store.settleWindow(got.from, { key: id, windowS: 60 }, 5);
      assert.equal(await store.readWindow({ key: id, windowS: 60 }), 105, 'a charge may take a window over its limit');
      await store.settleWindow(got.from, { key: id, windowS: 60 }, -500);
      assert.equal(await store.readWindow({ key: id, windowS: 60 }), 0);
      await store.settleWindow(got.from, { key: id, windowS: 60 }, 0);
      assert.equal(await store.readWindow({ key: id, windowS: 60 }), 0);
    });

    test('a settlement with no window running starts one (a give-back leaves it at 0)', async () => {
      const { store } = await open();
      const [up, down] = [uid('tpm'), uid('tpm')];
      await store.settleWindow('memory', { key: up, windowS: 60 }, 7);
      assert.equal(await store.readWindow({ key: up, windowS: 60 }), 7);
      await store.settleWindow('memory', { key: down, windowS: 60 }, -7);
      assert.equal(await store.readWindow({ key: down, windowS: 60 }), 0);
      assert.equal((await store.admitKey(noSlot(win(down, 5, 5)))).refused, null, 'no credit carried into the window');
      assert.equal((await store.admitKey(noSlot(win(down, 5, 1)))).refused, 0);
    });

    test('a window ends after its length: its points lapse and the next take starts a new one', async () => {
      const { store } = await open();
      const id = uid('rpm');
      const got = await store.admitKey(noSlot(win(id, 2, 2, 1)));
      assert.ok(got.windows[0]!.msBeforeNext <= 1_000);
      assert.equal((await store.admitKey(noSlot(win(id, 2, 1, 1)))).refused, 0);
      await sleep(1_100);
      assert.equal(await store.readWindow({ key: id, windowS: 1 }), 0);
      const next = await store.admitKey(noSlot(win(id, 2, 1, 1)));
      assert.equal(next.refused, null);
      assert.equal(next.windows[0]!.consumedPoints, 1);
    });

    // Only where windows live on Redis (registered for those flavours only, not skipped for memory).
    if (flavour.onRedis)
      test('on Redis: a window is the string counter `{prefix}:rl:<id>`, expiring with it; a counter left without expiry gets one', async () => {
        const { store, prefix } = await open();
        assert.ok(prefix !== null, 'a Redis flavour has a key prefix');
        const id = `rpm:${uid('k')}`;
        await store.admitKey(noSlot(win(id, 5, 2)));
        const key = `{${prefix}}:rl:${id}`;
        assert.equal(await reader.get(key), '2');
        const ttl = await reader.pttl(key);
        assert.ok(ttl > 55_000 && ttl <= 60_000, `PTTL ${ttl}`);
        const stuck = `tpm:${uid('k')}`;
        await reader.set(`{${prefix}}:rl:${stuck}`, '5');
        assert.equal((await store.admitKey(noSlot(win(stuck, 5, 1)))).refused, 0);
        const repaired = await reader.pttl(`{${prefix}}:rl:${stuck}`);
        assert.ok(repaired > 55_000 && repaired <= 60_000, `PTTL ${repaired}`);
      });
  });
}
