/**
 * Redis work per request (issue 16): a plain chat request, JSON or streamed, costs two
 * top-level Redis commands (its admission before the upstream; one call after the answer
 * carrying its release and its spend add) in at most two round trips, counted with `MONITOR`
 * on a real redis-server and with a TCP proxy that counts the gateway's writes. Calls made in
 * one event-loop turn, several requests' included, leave as one command. And the cached
 * views the router orders on never bend a limit: when another replica filled an account since
 * this replica last looked, the admission refuses it and the request goes to the next target,
 * or queues, or sheds, as it would have on a fresh view.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import type { Redis } from 'ioredis';
import { Account } from '../helpers/accounts.js';
import { startGateway, waitFor, type TestGateway } from '../helpers/gateway.js';
import { CommandMonitor } from '../helpers/command-monitor.js';
import { RedisServer, TcpProxy } from '../helpers/redis-server.js';
import { chat, storeConfigText, storeOn, waitMode, withStoreOn, type ModelSpec, type UpSpec } from '../helpers/shared-store.js';
import type { StateStore } from '../../src/store/index.js';
import type { Candidate, TargetRef } from '../../src/store/types.js';

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

let redis: RedisServer;
let proxy: TcpProxy;
let base: Redis;
let monitor: CommandMonitor;
/** Top-level commands seen by MONITOR, each with its arguments (commands run by scripts, source `lua`, left out). */
let seen: string[][] = [];
/** The names (lower case) of the commands seen from index `from` on. */
const names = (from: number): string[] => monitor.names(from);
const acc: Record<string, Account> = {};
/** Replica A talks to Redis through the counting proxy; B directly. */
let a: TestGateway;
let b: TestGateway;

const IDS = ['solo', 'p1', 'p2', 'd1'];

function ups(): UpSpec[] {
  return [
    { id: 'solo', url: acc['solo']!.url },
    { id: 'p1', url: acc['p1']!.url, maxConcurrency: 1 },
    { id: 'p2', url: acc['p2']!.url, maxConcurrency: 1 },
    { id: 'd1', url: acc['d1']!.url, deepCap: 1 },
  ];
}

function models(): ModelSpec[] {
  return [
    { name: 'solo', targets: [{ upstream: 'solo', model: 'm' }] },
    {
      name: 'pair',
      targets: [
        { upstream: 'p1', model: 'm' },
        { upstream: 'p2', model: 'm' },
      ],
    },
    { name: 'only-p1', targets: [{ upstream: 'p1', model: 'm' }] },
    { name: 'deep-one', reasoning: true, shed: { policy: 'reject' }, targets: [{ upstream: 'd1', model: 'r' }] },
  ];
}

before(async () => {
  redis = await RedisServer.start();
  proxy = await new TcpProxy(redis.port).start();
  for (const id of IDS) acc[id] = await new Account(id).start();
  // Long leases: no heartbeat renewal falls inside a counted window.
  const store = (url: string) => ({ redis_url: url, key_prefix: `rt-${prefix}`, lease_ms: 60_000 });
  const prefix = randomUUID();
  a = await startGateway(storeConfigText(store(proxy.url), ups(), models()));
  b = await startGateway(storeConfigText(store(redis.url), ups(), models()));
  await Promise.all([waitMode(a, 'redis'), waitMode(b, 'redis')]);
  base = redis.client();
  monitor = await CommandMonitor.start(base);
  seen = monitor.seen;
});

after(async () => {
  for (const x of Object.values(acc)) x.gate.resolve();
  monitor?.stop();
  base?.disconnect();
  await Promise.all([a, b].map((g) => g?.close()));
  await Promise.all(Object.values(acc).map((x) => x.fake.close()));
  await proxy?.close();
  await redis.stop();
});

describe('Redis commands and round trips per request', () => {
  for (const stream of [false, true]) {
    test(`a ${stream ? 'streamed' : 'JSON'} chat request: 2 commands (admission, then one script call with release and spend add) in at most 2 round trips`, async () => {
      const n = 10;
      // Warm: scripts loaded, the views cached.
      for (let i = 0; i < 2; i++) assert.equal((await chat(a, 'solo', { stream })).status, 200);
      await sleep(100);
      const [c0, w0] = [seen.length, proxy.writes];
      for (let i = 0; i < n; i++) {
        const r = await chat(a, 'solo', { stream });
        assert.equal(r.status, 200, r.text);
      }
      // The settlement leaves after the answer: wait for it to land.
      await sleep(300);
      const cmds = names(c0);
      const writes = proxy.writes - w0;
      const summary = `${cmds.length} commands for ${n} requests (${[...new Set(cmds)].map((c) => `${c} x${cmds.filter((x) => x === c).length}`).join(', ')}), ${writes} writes`;
      assert.ok(cmds.length <= 2 * n, summary);
      assert.deepEqual(monitor.errors, [], 'MONITOR read every command');
      assert.ok(cmds.length >= 2 * n, `the count missed commands: ${summary}`);
      assert.equal(cmds.filter((c) => c === 'evalsha' || c === 'eval').length, 2 * n, `every command is a script call: ${summary}`);
      assert.ok(writes <= 2 * n, summary);
    });
  }
});

describe('a stale cached view never bends a limit', () => {
  test('another replica filled the first account since this one looked: the admission refuses it and the request goes to the next target', async () => {
    for (const id of ['p1', 'p2']) acc[id]!.reset(0);
    // A orders on views it just read (fresh for VIEW_FRESH_MS).
    assert.equal((await chat(a, 'pair')).status, 200);
    const held = chat(b, 'only-p1', { prompt: 'hold' });
    await waitFor(() => acc['p1']!.open() === 1, 2_000, 'B holding p1');
    for (let i = 0; i < 3; i++) {
      const r = await chat(a, 'pair');
      assert.equal(r.status, 200, r.text);
      assert.equal(r.headers.get('x-switchyard-upstream'), 'p2', 'p1 is full (max_concurrency 1, held by replica B)');
    }
    assert.equal(acc['p1']!.max, 1, 'p1 never took more than its max_concurrency');
    acc['p1']!.reset(0);
    assert.equal((await held).status, 200);
  });

  test('another replica filled every account: the request queues (not refused on the cached view) and is served once a place frees', async () => {
    for (const id of ['p1', 'p2']) acc[id]!.reset(0);
    assert.equal((await chat(a, 'pair')).status, 200);
    const held = [chat(b, 'pair', { prompt: 'hold' }), chat(b, 'pair', { prompt: 'hold' })];
    await waitFor(() => acc['p1']!.open() === 1 && acc['p2']!.open() === 1, 2_000, 'B holding p1 and p2');
    const queued = chat(a, 'pair');
    await sleep(150);
    assert.ok(acc['p1']!.max <= 1 && acc['p2']!.max <= 1, 'a full account took another call');
    for (const id of ['p1', 'p2']) acc[id]!.reset(0);
    const r = await queued;
    assert.equal(r.status, 200, r.text);
    assert.ok(r.ms >= 100, `served after the held calls ended (${r.ms} ms)`);
    for (const h of held) assert.equal((await h).status, 200);
  });

  test('another replica took the last deep place: the deep call sheds by its policy (reject: 503 reasoning_burst_shed), as on a fresh view', async () => {
    acc['d1']!.reset(0);
    assert.equal((await chat(a, 'deep-one', { effort: 'high' })).status, 200);
    const held = chat(b, 'deep-one', { effort: 'high', prompt: 'hold' });
    await waitFor(() => acc['d1']!.open() === 1, 2_000, 'B holding the deep place of d1');
    const r = await chat(a, 'deep-one', { effort: 'high' });
    assert.equal(r.status, 503, r.text);
    assert.equal(r.headers.get('x-switchyard-shed'), 'rejected');
    assert.equal(acc['d1']!.max, 1);
    acc['d1']!.reset(0);
    assert.equal((await held).status, 200);
  });
});

/** A StateStore of the test's own on its redis-server under `prefix` (closed after, with withStore). */
const withStore = (prefix: string, fn: (s: StateStore) => Promise<void>) => withStoreOn(redis.url, prefix, fn);
const storeOnRedis = (prefix: string) => storeOn(redis.url, prefix);

const bounds = { start: 100, min: 1, ceiling: 1000 };

describe('StateStore: the cached views', () => {
  test('an admission caches every view it read; own releases and cooldowns show at once; stale after the freshness bound; another replica is only seen by the next admission', async () => {
    const prefix = `cache-${randomUUID()}`;
    const [x, y] = [await storeOnRedis(prefix), await storeOnRedis(prefix)];
    try {
      const ref: TargetRef = { key: 'u/m', upstream: 'u', capacity: bounds, calls: { start: 1, min: 1, ceiling: 1 } };
      const cand: Candidate = { ...ref, limit: 1, deep: false, coolingOk: false };
      assert.equal(x.cachedView([ref], 250), null, 'nothing read yet');
      const got = await x.admit([cand]);
      assert.ok(got.taken);
      assert.deepEqual(x.cachedView([ref], 250), got.views);
      assert.equal(x.cachedView([ref], 250)![0]!.inFlight, 1);
      await x.release(got.taken.lease);
      assert.equal(x.cachedView([ref], 250)![0]!.inFlight, 0, 'an own release shows at once');
      const until = Date.now() + 5_000;
      await x.setCooldown('u/m', until);
      assert.equal(x.cachedView([ref], 250)![0]!.coolingUntil, until, 'an own cooldown shows at once');
      await y.admit([{ ...cand, coolingOk: true }]);
      // Stale: X's cache does not know Y filled the account; the admission does.
      assert.equal(x.cachedView([ref], 250)![0]!.inFlight, 0);
      const refused = await x.admit([{ ...cand, coolingOk: true }]);
      assert.equal(refused.taken, null);
      assert.deepEqual(refused.refused, ['full']);
      assert.equal(refused.views[0]!.inFlight, 1);
      assert.equal(x.cachedView([ref], 250)![0]!.inFlight, 1, 'the refusal refreshed the cache');
      await sleep(300);
      assert.equal(x.cachedView([ref], 250), null, 'older than the freshness bound');
    } finally {
      await Promise.all([x.close(), y.close()]);
    }
  });
});

describe('StateStore: one script call per turn', () => {
  test('admissions made in one turn (requests that reached theirs together) leave as one command, each with its own answer', async () => {
    const prefix = `turn-${randomUUID()}`;
    await withStore(prefix, async (s) => {
      const ref: TargetRef = { key: 'u/m', upstream: 'u', capacity: bounds, calls: { start: 10, min: 1, ceiling: 10 } };
      const cand: Candidate = { ...ref, limit: 3, deep: false, coolingOk: true };
      const c0 = seen.length;
      const got = await Promise.all([1, 2, 3, 4, 5].map(() => s.admit([cand])));
      await sleep(100);
      assert.equal(seen.length - c0, 1, `one command for five admissions: ${names(c0).join(', ')}`);
      // Run in order inside the one script: the first three take the account's three places.
      assert.deepEqual(
        got.map((g) => (g.taken ? g.taken.lease.inFlight : g.refused[0])),
        [1, 2, 3, 'full', 'full'],
      );
      await Promise.all(got.map((g) => (g.taken ? s.release(g.taken.lease) : null)));
      assert.equal(await base.zcard(`{${prefix}}:inflight:u`), 0, 'all three released');
    });
  });

  test('a release and a spend add made in one turn leave as one script call; a release that fails there does not stop the add', async () => {
    const prefix = `settle-${randomUUID()}`;
    await withStore(prefix, async (s) => {
      const ref: TargetRef = { key: 'u/m', upstream: 'u', capacity: bounds, calls: { start: 1, min: 1, ceiling: 10 } };
      const got = await s.admit([{ ...ref, limit: 5, deep: false, coolingOk: true }]);
      assert.ok(got.taken);
      // The release's set now holds the wrong type: its ZREMRANGEBYSCORE fails inside the script.
      await base.set(`{${prefix}}:inflight:u`, 'not a zset');
      const c0 = seen.length;
      const expireAtMs = Date.now() + 60_000;
      const [, totals] = await Promise.all([s.release(got.taken.lease), s.addSpend([{ key: 'k1', amount: 0.25, expireAtMs }])]);
      assert.deepEqual(totals, [0.25]);
      await sleep(100);
      const cmds = names(c0);
      // The first call of a client sends the script itself (EVAL), later ones its hash (EVALSHA).
      assert.equal(cmds.length, 1, `one script call for both: ${cmds.join(', ')}`);
      assert.match(cmds[0]!, /^eval(sha)?$/);
      assert.equal(Number(await base.get(`{${prefix}}:spend:k1`)), 0.25, 'the add landed in Redis');
      assert.equal(await base.get(`{${prefix}}:inflight:u`), 'not a zset', 'the failed release wrote nothing');
    });
  });
});
