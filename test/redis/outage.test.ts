/**
 * Redis outages, end to end: real gateways on a real redis-server that is absent at start,
 * killed mid-run and restarted, frozen, or cut off from one replica by a TCP proxy. The
 * gateway must keep answering (degraded mode, limits divided by `replicas`), never hang on
 * Redis, come back to Redis by itself, and leave no in-flight or window entry behind.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import type { Redis } from 'ioredis';
import { RedisStore } from '../../src/store/redis.js';
import { Account } from '../helpers/accounts.js';
import { startGateway, waitFor, type TestGateway } from '../helpers/gateway.js';
import { metricSum } from '../helpers/metrics-text.js';
import { RedisServer, TcpProxy, freePort } from '../helpers/redis-server.js';
import { chat, readyz, storeConfigText, waitMode, type UpSpec } from '../helpers/shared-store.js';

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

// ---------------------------------------------------------------------------------------
// Each upstream is an `Account` (prompt `hold` waits for its gate, `wait:<ms>` answers after
// about that long, anything else at once). Config (JSON is YAML): upstream `up` (plain), `dacc` (deep, wide window), `lim`
// (max_concurrency 4), `hacc` (window threshold 4), `racc` (window 1.5 s, threshold 2,
// shed reject) and `lite` (the downgrade target).

const ALL = ['up', 'dacc', 'lim', 'hacc', 'racc', 'lite'];

function configText(store: Record<string, unknown>, acc: Record<string, Account>): string {
  const up = (id: string, extra: Partial<UpSpec> = {}): UpSpec => ({ id, url: acc[id]!.url, ...extra });
  const one = (upstream: string) => [{ upstream, model: `${upstream}-model` }];
  return storeConfigText(
    { command_timeout_ms: 250, ...store },
    [up('up'), up('dacc', { deepCap: 50 }), up('lim', { maxConcurrency: 4 }), up('hacc', { deepCap: 4 }), up('racc', { deepCap: 2 }), up('lite')],
    [
      { name: 'plain', targets: one('up') },
      { name: 'lite', targets: one('lite') },
      { name: 'reasoner', reasoning: true, shed: { policy: 'downgrade', fallback: 'lite' }, targets: one('dacc') },
      { name: 'limited', targets: one('lim') },
      { name: 'hot-reasoner', reasoning: true, shed: { policy: 'downgrade', fallback: 'lite' }, targets: one('hacc') },
      { name: 'strict-reasoner', reasoning: true, shed: { policy: 'reject' }, targets: one('racc') },
    ],
  );
}

async function accounts(): Promise<Record<string, Account>> {
  const acc: Record<string, Account> = {};
  for (const id of ALL) acc[id] = await new Account(id).start();
  return acc;
}

async function closeAll(gws: (TestGateway | undefined)[], acc: Record<string, Account>): Promise<void> {
  for (const a of Object.values(acc)) a.gate.resolve();
  await Promise.all(gws.map((g) => g?.close()));
  await Promise.all(Object.values(acc).map((a) => a.fake.close()));
}

async function storeModeGauge(gw: TestGateway): Promise<Record<string, number>> {
  const text = await gw.metricsText();
  return Object.fromEntries(['memory', 'redis', 'degraded'].map((m) => [m, metricSum(text, 'switchyard_store_mode', { mode: m })]));
}

/** Warning lines about the shared store / Redis. */
function storeWarnings(gw: TestGateway): Record<string, unknown>[] {
  return gw.logLines().filter((l) => l['level'] === 'warn' && /redis|store/i.test(JSON.stringify(l)));
}

/** In-flight and deep ZSET sizes of every upstream, read straight from Redis. */
async function zsets(r: Redis, prefix: string): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const id of ALL) {
    out[`inflight:${id}`] = await r.zcard(`{${prefix}}:inflight:${id}`);
    out[`deep:${id}`] = await r.zcard(`{${prefix}}:deep:${id}`);
  }
  return out;
}

const allZero = (z: Record<string, number>) => Object.values(z).every((n) => n === 0);

/**
 * Per-replica limits while degraded (replicas: 2): `lim` (max_concurrency 4) gets at most 2
 * of 5 concurrent calls through this replica, and `hacc` (threshold 4) takes 2 of 3 deep
 * calls, the third being downgraded.
 */
async function checkPerReplicaLimits(gw: TestGateway, acc: Record<string, Account>): Promise<void> {
  acc['lim']!.reset();
  const lim = await Promise.all(Array.from({ length: 5 }, () => chat(gw, 'limited', { prompt: 'wait:300' })));
  for (const r of lim) assert.equal(r.status, 200, r.text);
  assert.equal(acc['lim']!.max, 2, `lim (max_concurrency 4, replicas 2) saw ${acc['lim']!.max} concurrent requests from one degraded replica`);

  acc['hacc']!.reset();
  const n = acc['hacc']!.count;
  const held = [
    chat(gw, 'hot-reasoner', { effort: 'high', prompt: 'hold', stream: true }),
    chat(gw, 'hot-reasoner', { effort: 'high', prompt: 'hold', stream: true }),
  ];
  await waitFor(() => acc['hacc']!.count === n + 2, 3_000, 'two deep calls on hacc');
  const third = await chat(gw, 'hot-reasoner', { effort: 'high', stream: true });
  assert.equal(third.status, 200, third.text);
  assert.equal(third.headers.get('x-switchyard-shed'), 'hot-reasoner->lite', 'threshold 4 / replicas 2 = 2 deep calls per degraded replica');
  assert.equal(acc['hacc']!.count, n + 2);
  acc['hacc']!.reset();
  for (const r of await Promise.all(held)) assert.equal(r.status, 200);
}

// ---------------------------------------------------------------------------------------

describe('Redis down at start', () => {
  const PASSWORD = 's3cretPass';
  let port: number;
  let gw: TestGateway;
  let acc: Record<string, Account>;

  before(async () => {
    port = await freePort();
    acc = await accounts();
    gw = await startGateway(configText({ redis_url: `redis://:${PASSWORD}@127.0.0.1:${port}`, replicas: 2, key_prefix: 'down-at-start' }, acc));
  });
  after(() => closeAll([gw], acc));

  test('the gateway starts and serves; /readyz is 200 with store mode degraded; the gauge says degraded', async () => {
    for (const stream of [false, true, false]) {
      const r = await chat(gw, 'plain', { stream });
      assert.equal(r.status, 200, r.text);
      assert.match(r.text, /from up/);
    }
    const deep = await chat(gw, 'reasoner', { effort: 'high', stream: true });
    assert.equal(deep.status, 200, deep.text);
    const rz = await readyz(gw);
    assert.equal(rz.status, 200);
    assert.equal(rz.body.status, 'ready');
    assert.equal(rz.body.store.mode, 'degraded');
    assert.equal(rz.body.store.degraded, true);
    assert.deepEqual(await storeModeGauge(gw), { memory: 0, redis: 0, degraded: 1 });
  });

  test('limits are per replica while degraded (limit / replicas)', async () => {
    await checkPerReplicaLimits(gw, acc);
  });

  test('exactly one warning line about it, without the Redis host:port or the password', async () => {
    // Several reconnect attempts (every ≤ 1 s) happen meanwhile: still one line.
    await sleep(2_500);
    const warnings = storeWarnings(gw);
    assert.equal(warnings.length, 1, `store warnings: ${JSON.stringify(warnings)}`);
    for (const line of gw.logs) {
      assert.ok(!line.includes(PASSWORD), `the Redis password is in a log line: ${line}`);
      assert.ok(!line.includes(`127.0.0.1:${port}`), `the Redis host:port is in a log line: ${line}`);
      assert.ok(!line.includes('redis://'), `a Redis URL is in a log line: ${line}`);
    }
  });
});

describe('Redis killed mid-run, then restarted on the same port', () => {
  let redis: RedisServer;
  let reader: Redis;
  let acc: Record<string, Account>;
  let a: TestGateway;
  let b: TestGateway;
  const prefix = `kill-${randomUUID()}`;

  before(async () => {
    redis = await RedisServer.start();
    acc = await accounts();
    const store = { redis_url: redis.url, replicas: 2, key_prefix: prefix, lease_ms: 60_000 };
    a = await startGateway(configText(store, acc));
    b = await startGateway(configText(store, acc));
    await Promise.all([waitMode(a, 'redis', 5_000), waitMode(b, 'redis', 5_000)]);
  });
  after(async () => {
    reader?.disconnect();
    await closeAll([a, b], acc);
    await redis.stop();
  });

  test('no request fails or hangs; degraded limits are per replica; back on Redis within 10 s; no leaked counts', async () => {
    interface Done {
      kind: string;
      status: number;
      ms: number;
      normalMs: number;
      text: string;
    }
    const done: Done[] = [];
    let stop = false;
    const kinds = [
      { kind: 'stream', model: 'plain', o: { stream: true, prompt: 'wait:600' }, normalMs: 600 },
      { kind: 'json', model: 'plain', o: { prompt: 'wait:50' }, normalMs: 50 },
      { kind: 'deep-stream', model: 'reasoner', o: { stream: true, effort: 'high', prompt: 'wait:400' }, normalMs: 400 },
      { kind: 'json-now', model: 'plain', o: {}, normalMs: 0 },
    ];
    const worker = async (gw: TestGateway, k: number) => {
      for (let i = k; !stop; i++) {
        const c = kinds[i % kinds.length]!;
        const r = await chat(gw, c.model, c.o);
        done.push({ kind: c.kind, status: r.status, ms: r.ms, normalMs: c.normalMs, text: r.text });
      }
    };
    const flows = Promise.all([a, b].flatMap((gw) => [0, 1, 2, 3].map((k) => worker(gw, k))));
    try {
      // Streams in flight on both kinds of account, then Redis dies.
      await waitFor(() => acc['up']!.open() >= 2 && acc['dacc']!.open() >= 1, 3_000, 'streams in flight');
      await sleep(100);
      const warnedBefore = storeWarnings(a).length;
      await redis.kill();
      await Promise.all([waitMode(a, 'degraded', 2_000), waitMode(b, 'degraded', 2_000)]);
      assert.deepEqual(await storeModeGauge(a), { memory: 0, redis: 0, degraded: 1 });
      const rz = await readyz(b);
      assert.equal(rz.status, 200);
      assert.equal(rz.body.store.degraded, true);

      await checkPerReplicaLimits(a, acc);
      await sleep(300);

      // Redis comes back (empty: nothing was persisted).
      await redis.restart();
      await Promise.all([waitMode(a, 'redis', 10_000), waitMode(b, 'redis', 10_000)]);
      assert.deepEqual(await storeModeGauge(a), { memory: 0, redis: 1, degraded: 0 });
      // One warning per outage on each replica, and it names no address.
      assert.equal(storeWarnings(a).length - warnedBefore, 1, JSON.stringify(storeWarnings(a)));
      for (const line of [...a.logs, ...b.logs]) assert.ok(!line.includes(`127.0.0.1:${redis.port}`), `the Redis address is in a log line: ${line}`);

      // New calls take their slots in Redis again.
      reader = redis.client();
      let inRedis = 0;
      await waitFor(
        () => {
          void reader.zcard(`{${prefix}}:inflight:up`).then((n) => (inRedis = Math.max(inRedis, n)));
          return inRedis > 0;
        },
        3_000,
        'in-flight entries in Redis after the restart',
      );
      await sleep(300);
    } finally {
      stop = true;
      await flows;
    }

    const summary = done.map((d) => `${d.kind}:${d.status}:${d.ms}`).join(' ');
    assert.ok(done.length >= 20, `only ${done.length} requests ran: ${summary}`);
    for (const d of done) {
      assert.equal(d.status, 200, `${d.kind} failed: ${d.text}`);
      // Every Redis call is bounded (≤ 250 ms) and a dead Redis fails at once: a small margin.
      assert.ok(d.ms <= d.normalMs + 750, `${d.kind} took ${d.ms} ms (normal ${d.normalMs} ms)`);
    }

    // Every lease was given back: nothing left in Redis, and the stores' views agree.
    let z: Record<string, number> = {};
    const t0 = Date.now();
    while (!allZero((z = await zsets(reader, prefix))) && Date.now() - t0 < 2_000) await sleep(50);
    assert.ok(allZero(z), `entries left in Redis: ${JSON.stringify(z)}`);
    for (const gw of [a, b]) {
      const text = await gw.metricsText();
      for (const id of ALL) assert.equal(metricSum(text, 'switchyard_deep_in_flight', { upstream: id }), 0, `window occupancy of ${id}`);
    }
  });
});

describe('Redis cut off from a replica with its data kept', () => {
  let redis: RedisServer;
  let reader: Redis;
  let proxy: TcpProxy;
  let acc: Record<string, Account>;
  let gw: TestGateway;
  const prefix = `cut-${randomUUID()}`;

  before(async () => {
    redis = await RedisServer.start();
    reader = redis.client();
    proxy = await new TcpProxy(redis.port).start();
    acc = await accounts();
    // Leases and windows far longer than the test: only a release can clear an entry.
    gw = await startGateway(configText({ redis_url: proxy.url, replicas: 2, key_prefix: prefix, lease_ms: 600_000 }, acc));
    await waitMode(gw, 'redis', 5_000);
  });
  after(async () => {
    reader.disconnect();
    await closeAll([gw], acc);
    await proxy.close();
    await redis.stop();
  });

  test('slots taken in Redis and finished during the outage are given back once Redis is reachable again', async () => {
    acc['up']!.reset();
    acc['dacc']!.reset();
    const calls = [
      chat(gw, 'plain', { stream: true, prompt: 'hold' }),
      chat(gw, 'plain', { prompt: 'hold' }),
      chat(gw, 'reasoner', { stream: true, effort: 'high', prompt: 'hold' }),
      chat(gw, 'reasoner', { effort: 'high', prompt: 'hold' }),
    ];
    await waitFor(() => acc['up']!.count === 2 && acc['dacc']!.count === 2, 3_000, 'held calls');
    assert.deepEqual(
      await Promise.all([reader.zcard(`{${prefix}}:inflight:up`), reader.zcard(`{${prefix}}:inflight:dacc`), reader.zcard(`{${prefix}}:deep:dacc`)]),
      [2, 2, 2],
    );

    proxy.cut();
    await waitMode(gw, 'degraded', 2_000);
    acc['up']!.gate.resolve();
    acc['dacc']!.gate.resolve();
    const t0 = Date.now();
    for (const r of await Promise.all(calls)) assert.equal(r.status, 200, r.text);
    assert.ok(Date.now() - t0 < 1_000, `the held calls took ${Date.now() - t0} ms to finish after their upstream answered`);
    await sleep(200);
    // The releases could not reach Redis: the entries are still there.
    assert.equal(await reader.zcard(`{${prefix}}:inflight:up`), 2);
    assert.equal(await reader.zcard(`{${prefix}}:deep:dacc`), 2);

    proxy.restore();
    await waitMode(gw, 'redis', 10_000);
    let z: Record<string, number> = {};
    const t1 = Date.now();
    while (!allZero((z = await zsets(reader, prefix))) && Date.now() - t1 < 3_000) await sleep(50);
    assert.ok(allZero(z), `releases made during the outage were not re-sent: ${JSON.stringify(z)}`);
  });
});

describe('a replica that dies mid-request', () => {
  let redis: RedisServer;
  let proxy: TcpProxy;
  let acc: Record<string, Account>;
  let dying: TestGateway | undefined;
  let survivor: TestGateway;
  let view: RedisStore;
  const prefix = `dies-${randomUUID()}`;

  before(async () => {
    redis = await RedisServer.start();
    proxy = await new TcpProxy(redis.port).start();
    acc = await accounts();
    // lease_ms 1000 (the smallest allowed) and racc's window of 1.5 s.
    const store = { replicas: 2, key_prefix: prefix, lease_ms: 1_000 };
    dying = await startGateway(configText({ ...store, redis_url: proxy.url }, acc));
    survivor = await startGateway(configText({ ...store, redis_url: redis.url }, acc));
    await Promise.all([waitMode(dying, 'redis', 5_000), waitMode(survivor, 'redis', 5_000)]);
    const client = await redis.storeClient(prefix, 250, 1_000);
    view = new RedisStore(client, { prefix, leaseMs: 1_000 });
  });
  after(async () => {
    await view.close();
    await closeAll([dying, survivor], acc);
    await proxy.close();
    await redis.stop();
  });

  const racc = () =>
    view
      .view([{ key: 'racc/racc-model', upstream: 'racc', capacity: { start: 2, min: 1, ceiling: 64 }, calls: { start: 64, min: 1, ceiling: 64 } }])
      .then((v) => v[0]!);

  test('its slots and window places lapse on their own (lease_ms, window seconds)', async () => {
    acc['racc']!.reset();
    const aborts = [new AbortController(), new AbortController()];
    const calls = aborts.map((c) =>
      chat(dying!, 'strict-reasoner', { effort: 'high', stream: true, prompt: 'hold', signal: c.signal }).catch((e: unknown) => e),
    );
    await waitFor(() => acc['racc']!.count === 2, 3_000, 'two deep calls on racc');
    assert.deepEqual(await racc(), { inFlight: 2, deep: 2, limit: 2, callLimit: 64, coolingUntil: 0 });
    // The other replica counts them: racc is hot for it.
    const shed = await chat(survivor, 'strict-reasoner', { effort: 'high' });
    assert.equal(shed.status, 503, shed.text);

    // The replica dies: its path to Redis goes first, then its requests and itself.
    const diedAt = Date.now();
    proxy.cut();
    for (const c of aborts) c.abort();
    await Promise.all(calls);
    const right = await racc();
    assert.ok(right.inFlight === 2 && right.deep === 2, `the dead replica's entries should still be counted right after it died: ${JSON.stringify(right)}`);
    await dying!.close();
    dying = undefined;

    // lease_ms (1 s) and the window (1.5 s) after the calls started, they are gone. The
    // clock starts once the dead replica is closed (closing can be slow on a loaded machine),
    // and the store is read at least once after that.
    const closedAt = Date.now();
    let v = await racc();
    while ((v.inFlight > 0 || v.deep > 0) && Date.now() - closedAt < 4_000) {
      await sleep(100);
      v = await racc();
    }
    assert.deepEqual(v, { inFlight: 0, deep: 0, limit: 2, callLimit: 64, coolingUntil: 0 }, `still counted ${Date.now() - diedAt} ms after the replica died`);

    // The survivor serves deep calls on racc again.
    const n = acc['racc']!.count;
    const ok = await chat(survivor, 'strict-reasoner', { effort: 'high' });
    assert.equal(ok.status, 200, ok.text);
    assert.equal(acc['racc']!.count, n + 1);
    let after = await racc();
    for (let i = 0; i < 20 && after.inFlight > 0; i++) {
      await sleep(25);
      after = await racc();
    }
    assert.deepEqual(after, { inFlight: 0, deep: 0, limit: 2, callLimit: 64, coolingUntil: 0 });
  });
});

describe('Redis frozen (SIGSTOP): calls time out instead of hanging', () => {
  let redis: RedisServer;
  let acc: Record<string, Account>;
  let gw: TestGateway;

  before(async () => {
    redis = await RedisServer.start();
    acc = await accounts();
    gw = await startGateway(configText({ redis_url: redis.url, replicas: 1, key_prefix: `freeze-${randomUUID()}` }, acc));
    await waitMode(gw, 'redis', 5_000);
  });
  after(async () => {
    redis.thaw();
    await closeAll([gw], acc);
    await redis.stop();
  });

  test('requests finish in their normal time plus the Redis timeout; degraded while frozen; back on Redis once it answers', async () => {
    redis.freeze();
    const res = await Promise.all([
      chat(gw, 'plain'),
      chat(gw, 'plain', { stream: true, prompt: 'wait:300' }),
      chat(gw, 'reasoner', { effort: 'high', stream: true }),
    ]);
    for (const r of res) {
      assert.equal(r.status, 200, r.text);
      assert.ok(r.ms < 300 + 1_000, `took ${r.ms} ms with Redis frozen`);
    }
    const rz = await readyz(gw);
    assert.equal(rz.body.store.mode, 'degraded');
    for (let i = 0; i < 3; i++) {
      const r = await chat(gw, 'plain');
      assert.equal(r.status, 200);
      assert.ok(r.ms < 500, `a request in degraded mode took ${r.ms} ms`);
    }

    redis.thaw();
    const back = await waitMode(gw, 'redis', 10_000).catch((e: Error) => e);
    assert.ok(typeof back === 'number', `after Redis answers again: ${String(back)}`);
  });
});
