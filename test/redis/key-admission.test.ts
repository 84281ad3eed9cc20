/**
 * A client key's limits on Redis (issues 16 and 33): its concurrency slot and its `rpm` /
 * `tpm` windows are taken all or nothing, in the request's first store call (the `first` op
 * of the turn's script call, with the upstream admission: store/redis-first.ts), and its slot
 * release and `tpm` settlement ride the settlement call after the answer. A limited request
 * so costs 2 top-level commands (MONITOR on a real redis-server), and a give-back made
 * before a key admission in one turn lands before it.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import type { Redis } from 'ioredis';
import { Account } from '../helpers/accounts.js';
import { CommandMonitor } from '../helpers/command-monitor.js';
import { RedisServer } from '../helpers/redis-server.js';
import { startGateway, waitFor } from '../helpers/gateway.js';
import { chat, storeConfigText, waitMode, withStoreOn } from '../helpers/shared-store.js';
import { keyWindow } from '../../src/limits/rate.js';
import type { StateStore } from '../../src/store/index.js';

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

let redis: RedisServer;
let base: Redis;
let monitor: CommandMonitor;
let acc: Account;
/** Top-level commands seen by MONITOR, each with its arguments (commands run by scripts left out). */
let seen: string[][] = [];
const names = (from: number): string[] => monitor.names(from);
const withStore = (prefix: string, fn: (s: StateStore) => Promise<void>) => withStoreOn(redis.url, prefix, fn);

before(async () => {
  redis = await RedisServer.start();
  acc = await new Account('solo').start();
  base = redis.client();
  monitor = await CommandMonitor.start(base);
  seen = monitor.seen;
});

after(async () => {
  acc?.gate.resolve();
  monitor?.stop();
  base?.disconnect();
  await acc?.fake.close();
  await redis?.stop();
});

/**
 * Starts a gateway whose key has `limits`, sends one warm-up request and then `n` more one at
 * a time (each checked by `check`), and returns the top-level commands those `n` made.
 */
async function commandsOf(limits: unknown, n: number, check: (r: Awaited<ReturnType<typeof chat>>) => void = () => {}): Promise<string[][]> {
  const cfg = JSON.parse(
    storeConfigText(
      { redis_url: redis.url, key_prefix: `rt-keys-${randomUUID()}`, lease_ms: 60_000 },
      [{ id: 'solo', url: acc.url }],
      [{ name: 'solo', targets: [{ upstream: 'solo', model: 'm' }] }],
    ),
  ) as { keys: { limits?: unknown }[] };
  cfg.keys[0]!.limits = limits;
  const c = await startGateway(JSON.stringify(cfg));
  try {
    await waitMode(c, 'redis');
    assert.equal((await chat(c, 'solo')).status, 200);
    await sleep(100);
    const m0 = seen.length;
    for (let i = 0; i < n; i++) {
      const r = await chat(c, 'solo');
      assert.equal(r.status, 200, r.text);
      check(r);
    }
    // The settlement leaves after the answer: wait for it to land.
    await sleep(300);
    assert.deepEqual(monitor.errors, [], 'MONITOR read every command');
    return seen.slice(m0);
  } finally {
    await c.close();
  }
}

describe('a key with limits: one command before the upstream for all its limits and the upstream admission, its settlement rides the call after', () => {
  test('rpm, tpm and max_concurrency: 2 commands per request (the first call with the key admission and the upstream admission, one settlement call carrying both releases, the tpm settlement and the spend add)', async () => {
    const n = 5;
    const calls = await commandsOf({ rpm: 10_000, tpm: 1_000_000, max_concurrency: 8 }, n, (r) => {
      assert.ok(Number(r.headers.get('x-ratelimit-remaining-requests')) < 10_000, 'the rpm window counted it');
    });
    assert.equal(calls.length, 2 * n, `2 commands per request: ${calls.map((a) => a[0]).join(', ')}`);
    // A TURN call's arguments name its ops (store/redis-scripts.ts TURN): count them per call.
    const ops = calls.map((args) => ['first', 'keyadmit', 'admit', 'release', 'add'].map((op) => args.filter((x) => x === op).length).join(' '));
    const summary = JSON.stringify(ops);
    assert.equal(ops.filter((o) => o === '1 0 0 0 0').length, n, `one first call (key and upstream admission) per request: ${summary}`);
    // Two releases (upstream and key slot), two adds (the tpm settlement and the spend).
    assert.equal(ops.filter((o) => o === '0 0 0 2 2').length, n, `one settlement call per request: ${summary}`);
  });
});

describe('a key whose limits are a budget only', () => {
  test('takes no key admission: its requests cost the first call (the budget read and the upstream admission) and the settlement call', async () => {
    const n = 5;
    const calls = await commandsOf({ budget_usd: { amount: 1000, period: 'day' } }, n);
    const summary = calls.map((a) => a[0]).join(', ');
    assert.equal(calls.filter((a) => a.includes('keyadmit')).length, 0, `no key admission: ${summary}`);
    assert.equal(calls.filter((a) => a[0]!.toLowerCase() === 'mget').length, 0, `no budget read of its own: ${summary}`);
    assert.equal(calls.length, 2 * n, `2 commands per request: ${summary}`);
  });
});

describe('StateStore: key admissions', () => {
  test('a rate window give-back and a key admission made after it in the same turn ride one call, in order: the admission sees the points returned', async () => {
    const prefix = `give-${randomUUID()}`;
    await withStore(prefix, async (s) => {
      const tpm = keyWindow('tpm', 'k');
      const key = `{${prefix}}:rl:tpm:k:k`;
      const take = () => s.keyWindows.admitKey({ slot: { upstream: 'key:k', limit: 0 }, windows: [{ ...tpm, limit: 100, points: 100 }] });
      assert.equal((await take()).refused, null, 'the window is full');
      await sleep(100); // MONITOR reports on its own connection: let it catch up
      // Request A gives its 100 back, then request B reserves 100, in one turn.
      const c0 = seen.length;
      const [, b] = await Promise.all([s.keyWindows.settleWindow('redis', tpm, -100), take()]);
      assert.equal(b.refused, null, 'B fits in what A gave back');
      await sleep(100);
      assert.deepEqual(monitor.errors, [], 'MONITOR read every command');
      assert.equal(seen.length - c0, 1, `one command for both: ${names(c0).join(', ')}`);
      assert.equal(Number(await base.get(key)), 100);
    });
  });

  test('a tpm settlement made while Redis is away is added to the shared window once it is back, not to the local insurance; a give-back never takes a window below 0', async () => {
    const own = await RedisServer.start();
    try {
      const prefix = `away-${randomUUID()}`;
      await withStoreOn(own.url, prefix, async (s) => {
        const tpm = keyWindow('tpm', 'k');
        const key = `{${prefix}}:rl:tpm:k:k`;
        const got = await s.keyWindows.admitKey({ slot: { upstream: 'key:k', limit: 0 }, windows: [{ ...tpm, limit: 100, points: 100 }] });
        assert.equal(got.refused, null);
        assert.equal(got.from, 'redis');
        own.freeze();
        try {
          // A read that times out degrades the store (and does nothing when it lands after the thaw).
          await s.getPin('nobody');
          assert.equal(s.mode, 'degraded');
          // The request used 20 of its 100 reserved tokens.
          await s.keyWindows.settleWindow(got.from, tpm, -80);
          assert.equal(await s.keyWindows.readWindow(tpm), 0, 'the local window, which never held the 100, is not credited 80');
        } finally {
          own.thaw();
        }
        await waitFor(() => s.mode === 'redis' && s.counterBacklog === 0, 5_000, 'back on Redis with the settlement added');
        const c = own.client();
        try {
          assert.equal(Number(await c.get(key)), 20, 'the shared window holds what the request used');
          await s.keyWindows.settleWindow(got.from, tpm, -50);
          assert.equal(Number(await c.get(key)), 0, 'a give-back larger than the window leaves it at 0, not -30');
        } finally {
          c.disconnect();
        }
      });
    } finally {
      await own.stop();
    }
  });

  test('a key admission is all or nothing: a full window refuses it with the slot and the other window left as they were', async () => {
    const prefix = `keyadmit-${randomUUID()}`;
    await withStore(prefix, async (s) => {
      const rpm = `{${prefix}}:rl:rpm:k:k`;
      const req = (tokens: number) => ({
        slot: { upstream: 'key:k', limit: 2 },
        windows: [
          { ...keyWindow('rpm', 'k'), limit: 5, points: 1 },
          { ...keyWindow('tpm', 'k'), limit: 100, points: tokens },
        ],
      });
      const first = await s.keyWindows.admitKey(req(60));
      assert.equal(first.refused, null);
      assert.deepEqual(
        first.windows.map((w) => w.consumedPoints),
        [1, 60],
      );
      assert.ok(
        first.windows.every((w) => w.msBeforeNext > 55_000 && w.msBeforeNext <= 60_000),
        JSON.stringify(first.windows),
      );
      assert.equal(first.lease?.inFlight, 1);
      const refused = await s.keyWindows.admitKey(req(50));
      assert.equal(refused.refused, 1, 'the tpm window (index 1) is full');
      assert.equal(refused.lease, null);
      assert.deepEqual(
        refused.windows.map((w) => w.consumedPoints),
        [1, 60],
        'nothing counted',
      );
      assert.equal(await base.zcard(`{${prefix}}:inflight:key:k`), 1, 'no slot taken');
      const second = await s.keyWindows.admitKey(req(40));
      assert.equal(second.refused, null);
      assert.equal(second.lease?.inFlight, 2);
      assert.equal((await s.keyWindows.admitKey(req(0))).refused, 'concurrency', 'both slots held');
      assert.equal(Number(await base.get(rpm)), 2, 'the refusals took no rpm point');
      await Promise.all([first.lease!, second.lease!].map((l) => s.release(l)));
      assert.equal(await base.zcard(`{${prefix}}:inflight:key:k`), 0, 'both released');
    });
  });

  test('a full window counter left without expiry is given the window length, so it refuses for one window, not for ever', async () => {
    const prefix = `nottl-${randomUUID()}`;
    await withStore(prefix, async (s) => {
      const rpm = `{${prefix}}:rl:rpm:k:k`;
      await base.set(rpm, '5');
      const got = await s.keyWindows.admitKey({ slot: { upstream: 'key:k', limit: 0 }, windows: [{ ...keyWindow('rpm', 'k'), limit: 5, points: 1 }] });
      assert.equal(got.refused, 0);
      const ttl = await base.pttl(rpm);
      assert.ok(ttl > 55_000 && ttl <= 60_000, `PTTL ${ttl}`);
    });
  });
});
