/**
 * A request's first store call (StateStore.first, store/types.ts FirstCall) on a real
 * redis-server: a spent budget or a refused key admission ends it with nothing taken; the
 * session's pin goes first (sticky: the others after it; cache affinity: it alone, and none
 * when the pin names a target that is not a candidate); candidates on spent accounts are not
 * tried. Off Redis (memory mode) it makes the gate and reads the pin, and leaves the admission
 * to the route.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import type { Redis } from 'ioredis';
import { TurnBatch } from '../../src/store/batch.js';
import { StateStore } from '../../src/store/index.js';
import { RedisFirst } from '../../src/store/redis-first.js';
import { RedisStore } from '../../src/store/redis.js';
import { RedisKeyWindows } from '../../src/store/redis-windows.js';
import { SpendCounters } from '../../src/store/spend.js';
import type { Candidate, FirstCall, FirstGate, KeyAdmission } from '../../src/store/types.js';
import { RedisServer } from '../helpers/redis-server.js';
import { withStoreOn } from '../helpers/shared-store.js';

let redis: RedisServer;
let base: Redis;

before(async () => {
  redis = await RedisServer.start();
  base = redis.client();
});

after(async () => {
  base?.disconnect();
  await redis?.stop();
});

const bounds = { start: 100, min: 1, ceiling: 1000 };
/** A candidate on account `u` (target `u/m`) that takes one call at a time. */
const cand = (u: string): Candidate => ({ key: `${u}/m`, upstream: u, limit: 1, deep: false, capacity: bounds, calls: bounds, coolingOk: false });
const call = (o: Partial<FirstCall>): FirstCall => ({ gate: null, pin: null, candidates: [], extra: [], ...o });
/** A key admission of one `rpm` point in a window of `limit`. */
const rpm = (limit: number): KeyAdmission => ({ slot: { upstream: 'key:k', limit: 0 }, windows: [{ key: 'rpm:k:k', limit, points: 1, windowS: 60 }] });

/** Runs `fn` on a StateStore of its own on Redis, with the prefix its keys live under (`{prefix}`). */
async function onRedis(fn: (s: StateStore, p: string) => Promise<void>): Promise<void> {
  const prefix = `first-${randomUUID()}`;
  await withStoreOn(redis.url, prefix, (s) => fn(s, `{${prefix}}`));
}

describe('StateStore.first on Redis: the gate', () => {
  test('a spent key or tag budget ends it: no key admission, no slot; the spend read is returned', async () => {
    await onRedis(async (s, p) => {
      await base.set(`${p}:spend:key-line`, '5');
      const gate: FirstGate = { budgets: [{ counter: 'key-line', amountUsd: 5, upstream: null }], key: rpm(10) };
      const got = await s.first(call({ gate, candidates: [cand('a')] }));
      assert.deepEqual(got.gate.spent, [5]);
      assert.equal(got.gate.key, null);
      assert.equal(got.admit, null);
      assert.equal(await base.zcard(`${p}:inflight:a`), 0, 'no upstream slot taken');
      assert.equal(await base.get(`${p}:rl:rpm:k:k`), null, 'no rpm point taken');
    });
  });

  test('a refused key admission ends it with nothing taken; an admitted one takes its points and the slot', async () => {
    await onRedis(async (s, p) => {
      const ok = await s.first(call({ gate: { budgets: [], key: rpm(1) }, candidates: [cand('a')] }));
      assert.equal(ok.gate.key?.refused, null);
      assert.equal(ok.admit?.taken?.index, 0);
      const refused = await s.first(call({ gate: { budgets: [], key: rpm(1) }, candidates: [cand('b')] }));
      assert.equal(refused.gate.key?.refused, 0, 'the rpm window is full');
      assert.equal(refused.admit, null);
      assert.equal(await base.zcard(`${p}:inflight:b`), 0, 'no upstream slot taken');
      assert.equal(Number(await base.get(`${p}:rl:rpm:k:k`)), 1);
    });
  });

  test('an account whose budget is spent is not tried: the next candidate takes the slot; with none left nothing is taken (redo)', async () => {
    await onRedis(async (s, p) => {
      await base.set(`${p}:spend:acct-a`, '9');
      const gate: FirstGate = { budgets: [{ counter: 'acct-a', amountUsd: 5, upstream: 'a' }], key: null };
      const got = await s.first(call({ gate, candidates: [cand('a'), cand('b')] }));
      assert.equal(got.admit?.taken?.index, 1);
      assert.equal(await base.zcard(`${p}:inflight:a`), 0);
      const none = await s.first(call({ gate, candidates: [cand('a')] }));
      assert.equal(none.admit?.taken, null);
      assert.equal(none.redo, true);
    });
  });
});

describe('StateStore.first on Redis: the session pin', () => {
  test('sticky: the pinned candidate goes first; full, the others are tried in order', async () => {
    await onRedis(async (s, p) => {
      await base.set(`${p}:pin:s1`, 'b/m');
      const pin = { session: 's1', mode: 'sticky' as const };
      const got = await s.first(call({ pin, candidates: [cand('a'), cand('b')] }));
      assert.equal(got.pin, 'b/m');
      assert.equal(got.admit?.taken?.index, 1, 'b, the pinned one, first');
      const next = await s.first(call({ pin, candidates: [cand('a'), cand('b')] }));
      assert.deepEqual(next.admit?.refused, [null, 'full']);
      assert.equal(next.admit?.taken?.index, 0, 'b is full: a');
      assert.equal(next.admit?.views[1]?.inFlight, 1, 'views in the call order');
    });
  });

  test('cache affinity: the pinned candidate alone is tried (full: nothing taken, redo); a pin on a target that is not a candidate stops it', async () => {
    await onRedis(async (s, p) => {
      await base.set(`${p}:pin:s2`, 'b/m');
      const pin = { session: 's2', mode: 'affinity' as const };
      assert.equal((await s.first(call({ pin, candidates: [cand('a'), cand('b')] }))).admit?.taken?.index, 1);
      const full = await s.first(call({ pin, candidates: [cand('a'), cand('b')] }));
      assert.equal(full.admit?.taken, null);
      assert.deepEqual(full.admit?.refused, [null, 'full']);
      assert.equal(full.redo, true);
      assert.equal(await base.zcard(`${p}:inflight:a`), 0, 'a was not tried');
      const { limit: _l, deep: _d, coolingOk: _c, ...refB } = cand('b');
      const elsewhere = await s.first(call({ pin, candidates: [cand('a')], extra: [refB] }));
      assert.equal(elsewhere.admit?.taken, null);
      assert.equal(elsewhere.redo, true);
      assert.equal(await base.zcard(`${p}:inflight:a`), 0);
      assert.equal((await s.first(call({ pin: { session: 'none', mode: 'affinity' }, candidates: [cand('a')] }))).admit?.taken?.index, 0, 'no pin: the order');
    });
  });
});

describe('StateStore.first on Redis: spread', () => {
  test('candidates with a spread weight are tried least loaded first as the call runs; the pinned one stays first', async () => {
    await onRedis(async (s, p) => {
      const wide = (u: string): Candidate => ({ ...cand(u), limit: 4, spread: 1 });
      // a holds 2 calls another replica took: b, the least loaded, is tried first.
      await base.zadd(`${p}:inflight:a`, Date.now() + 60_000, 'x1', Date.now() + 60_000, 'x2');
      assert.equal((await s.first(call({ candidates: [wide('a'), wide('b')] }))).admit?.taken?.index, 1);
      // Pinned on a (sticky: it goes first, not spread), a is taken though b is less loaded.
      await base.set(`${p}:pin:s3`, 'a/m');
      const pinned = await s.first(call({ pin: { session: 's3', mode: 'sticky' }, candidates: [wide('b'), wide('a')] }));
      assert.equal(pinned.admit?.taken?.index, 1);
      assert.equal(await base.zcard(`${p}:inflight:a`), 3);
    });
  });
});

describe('RedisFirst: a call that runs past its deadline', () => {
  test('takes nothing (its caller, which gave up on it, counts the request elsewhere): no key point, no slot', async () => {
    const prefix = `late-${randomUUID()}`;
    const p = `{${prefix}}`;
    const client = await redis.storeClient(prefix, 500, 30_000);
    const batch = new TurnBatch(client);
    const slots = new RedisStore(client, { prefix, leaseMs: 30_000 }, batch);
    const counters = new SpendCounters((viaRedis) => viaRedis(), { online: () => true, failed: () => {} }, client, p, batch);
    const windows = new RedisKeyWindows(client, { prefix, leaseMs: 30_000 }, batch, slots, counters);
    try {
      const onTime = new RedisFirst(batch, 30_000, 500, slots, windows, counters);
      // A deadline half a (negative) timeout from now: already past when the op runs.
      const late = new RedisFirst(batch, 30_000, -10_000, slots, windows, counters);
      const first = { gate: { budgets: [], key: rpm(10) }, pin: null, candidates: [cand('a')], extra: [] };
      assert.equal((await onTime.first(first))?.admit?.taken?.index, 0, 'on time: taken (and Redis clock learned)');
      assert.equal(await late.first(first), null);
      assert.equal(await base.zcard(`${p}:inflight:a`), 1, 'the late call took no slot');
      assert.equal(Number(await base.get(`${p}:rl:rpm:k:k`)), 1, 'nor an rpm point');
    } finally {
      counters.stop();
      client.disconnect();
    }
  });
});

describe('StateStore.first in memory mode', () => {
  test('makes the gate and reads the pin; the admission is left to the route (redo)', async () => {
    const s = new StateStore(
      { redis_url: '', redis_options: {}, cluster_nodes: [], key_prefix: 'm', command_timeout_ms: 250, replicas: 1, lease_ms: 30_000, journal_ttl_ms: 60_000 },
      { info: () => {}, warn: () => {} },
      {},
    );
    try {
      await s.setPin('s3', 'a/m', 60_000);
      const got = await s.first(call({ gate: { budgets: [], key: rpm(1) }, pin: { session: 's3', mode: 'affinity' }, candidates: [cand('a')] }));
      assert.equal(got.gate.key?.refused, null);
      assert.equal(got.pin, 'a/m');
      assert.equal(got.admit, null);
      assert.equal(got.redo, true);
      const refused = await s.first(call({ gate: { budgets: [], key: rpm(1) } }));
      assert.equal(refused.gate.key?.refused, 0);
    } finally {
      await s.close();
    }
  });
});
