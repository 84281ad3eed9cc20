/**
 * What one replica learned about its calls' timing reaches the others through Redis
 * (router/fleet-timings.ts): two routers on two StateStores over one real redis-server, one
 * learns a model's typical deep-call time and an account's first-event baseline from its own
 * calls; the other, which served nothing, uses both after one sync, until it has measured its
 * own. Off Redis the same sync goes through the replica's memory (a reload's new router).
 * Values that are no timing (written by anything else) are not taken.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Redis } from 'ioredis';
import { DeepTimes } from '../../src/router/deep.js';
import { FleetTimings, POLL_MS, SYNC_MS } from '../../src/router/fleet-timings.js';
import { StallDetector } from '../../src/router/stalls.js';
import { MemoryStore } from '../../src/store/memory.js';
import { RedisServer } from '../helpers/redis-server.js';
import { storeOn } from '../helpers/shared-store.js';

let redis: RedisServer;
before(async () => {
  redis = await RedisServer.start();
});
after(() => redis?.stop());

/** One replica's learned timing and its sync. */
function replica(store: ConstructorParameters<typeof FleetTimings>[0], now: () => number = Date.now) {
  const deep = new DeepTimes();
  const stalls = new StallDetector();
  return { deep, stalls, fleet: new FleetTimings(store, deep, stalls, now) };
}

test('a replica that served nothing uses the typical deep time and stall threshold another replica learned, until it has its own', async () => {
  const prefix = `fleet-${randomUUID()}`;
  const [sa, sb] = [await storeOn(redis.url, prefix), await storeOn(redis.url, prefix)];
  const base: Redis = redis.client();
  try {
    const a = replica(sa);
    const b = replica(sb);
    for (let i = 0; i < 5; i++) a.deep.observe('deep', 2_000);
    for (let i = 0; i < 3; i++) a.stalls.observe('acct', 500);
    assert.equal(a.stalls.thresholdMs('acct'), 1_500, "the first replica's own threshold: 3 × its 500 ms baseline");
    await a.fleet.sync();
    assert.deepEqual(await base.hgetall(`{${prefix}}:timings:fleet`), { 'deep:deep': '2000', 'first:acct': '500' });
    assert.ok((await base.pttl(`{${prefix}}:timings:fleet`)) > 86_000_000, 'kept a day after the last write');

    assert.deepEqual([b.deep.typicalMs('deep'), b.stalls.thresholdMs('acct')], [null, null], 'nothing known before a sync');
    let heard = 0;
    b.deep.onKnown('deep', () => heard++);
    await b.fleet.sync();
    assert.equal(b.deep.typicalMs('deep'), 2_000);
    assert.equal(b.stalls.thresholdMs('acct'), 1_500);
    assert.equal(heard, 1, 'a wait for the typical time hears it when the fleet tells it');
    // Its own calls, once it has enough of them, win over the fleet's.
    for (let i = 0; i < 5; i++) b.deep.observe('deep', 400);
    for (let i = 0; i < 3; i++) b.stalls.observe('acct', 100);
    assert.equal(b.deep.typicalMs('deep'), 400);
    assert.equal(b.stalls.thresholdMs('acct'), 1_000, 'its own: 3 × 100 ms, at least the 1 s floor');
    await b.fleet.sync();
    // Hostile or broken values in the hash are not taken.
    await base.hset(`{${prefix}}:timings:fleet`, 'deep:other', 'NaN', 'first:x', '-5', 'deep:huge', String(1e12), 'deep:tiny', '0.4', 'nonsense', '7');
    const c = replica(sb);
    await c.fleet.sync();
    assert.deepEqual([c.deep.typicalMs('other'), c.stalls.thresholdMs('x'), c.deep.typicalMs('huge'), c.deep.typicalMs('tiny')], [null, null, null, null]);
    assert.equal(c.deep.typicalMs('deep'), 400, "the last writer's value (b's own)");
  } finally {
    base.disconnect();
    await sa.close();
    await sb.close();
  }
});

test('a fleet starting cold: a replica shares what it first learns at once, and one with a call waiting for the typical time hears it within a poll', async () => {
  const prefix = `fleet-${randomUUID()}`;
  const [sa, sb] = [await storeOn(redis.url, prefix), await storeOn(redis.url, prefix)];
  let reads = 0;
  const counted = { readTimings: () => (reads++, sb.readTimings()), writeTimings: (t: Record<string, number>) => sb.writeTimings(t) };
  try {
    const a = replica(sa);
    const b = replica(counted);
    // Both synced as their first deep calls began: SYNC_MS alone would hold the next for 5 s.
    a.fleet.maybeSync();
    b.fleet.maybeSync();
    await sleep(50);
    const t0 = Date.now();
    const heard = new Promise<number>((resolve) => b.deep.onKnown('deep', () => resolve(Date.now() - t0)));
    for (let i = 0; i < 3; i++) a.stalls.observe('acct', 400);
    for (let i = 0; i < 5; i++) a.deep.observe('deep', 1_100);
    const ms = await Promise.race([heard, sleep(3_000).then(() => -1)]);
    assert.ok(ms >= 0 && ms <= 3 * POLL_MS, `heard within a poll or two, not after SYNC_MS: ${ms} ms`);
    assert.deepEqual(await sa.readTimings(), { 'deep:deep': 1_100, 'first:acct': 400 }, 'both written as each became known');
    assert.equal(b.deep.typicalMs('deep'), 1_100);
    assert.equal(b.stalls.thresholdMs('acct'), 1_200);
    const before = reads;
    await sleep(4 * POLL_MS);
    assert.ok(reads - before <= 1, `no more polls once no call waits (${reads - before} reads)`);
  } finally {
    await sa.close();
    await sb.close();
  }
});

test('the timings key written as another type by something else: the sync fails alone, the store stays on Redis', async () => {
  const prefix = `fleet-${randomUUID()}`;
  const store = await storeOn(redis.url, prefix);
  const base: Redis = redis.client();
  try {
    await base.set(`{${prefix}}:timings:fleet`, 'not a hash');
    const a = replica(store);
    for (let i = 0; i < 5; i++) a.deep.observe('deep', 900);
    await a.fleet.sync();
    assert.equal(store.mode, 'redis', 'a WRONGTYPE reply on the timings is no outage: limits and places stay shared');
    assert.deepEqual(await store.readTimings(), {}, 'read on Redis again, it fails again and answers from the local store');
    assert.equal(store.mode, 'redis');
    assert.equal(await base.get(`{${prefix}}:timings:fleet`), 'not a hash', 'nothing of ours overwrote it');
  } finally {
    base.disconnect();
    await store.close();
  }
});

test('a sync starts at most every SYNC_MS from requests, never two at once; off Redis it goes through the memory store', async () => {
  const store = new MemoryStore(30_000);
  let t = 1_000_000;
  const a = replica(store, () => t);
  for (let i = 0; i < 5; i++) a.deep.observe('m', 900);
  a.fleet.maybeSync();
  a.fleet.maybeSync();
  await new Promise((r) => setImmediate(r));
  assert.deepEqual(await store.readTimings(), { 'deep:m': 900 });
  a.deep.observe('m', 1_900);
  a.fleet.maybeSync();
  await new Promise((r) => setImmediate(r));
  assert.deepEqual(await store.readTimings(), { 'deep:m': 900 }, 'not again within SYNC_MS');
  t += SYNC_MS;
  a.fleet.maybeSync();
  await new Promise((r) => setImmediate(r));
  assert.deepEqual(await store.readTimings(), { 'deep:m': 1_000 }, 'after SYNC_MS: the EWMA now (900 + 0.1 × 1,000)');
  // A new router on the same memory store (a config reload): known at its first sync.
  const next = replica(store, () => t);
  next.fleet.maybeSync();
  await new Promise((r) => setImmediate(r));
  assert.equal(next.deep.typicalMs('m'), 1_000);
});
