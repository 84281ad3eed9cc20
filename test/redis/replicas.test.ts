/**
 * Several replicas, one shared state: two real gateways (two buildApp instances, each on
 * its own port) on one real redis-server, against scripted fake upstreams on loopback.
 * What must be global with Redis (the reasoning-burst window, max_concurrency, sticky
 * pins) is checked across both replicas, and contrasted with the same config without
 * Redis, where each replica only knows its own traffic. The shed policies and
 * spread-before-shed are checked through one replica.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { APIError } from 'openai';
import { Account } from '../helpers/accounts.js';
import { startGateway, waitFor, type RawReply as Raw, type TestGateway } from '../helpers/gateway.js';
import { metricSum } from '../helpers/metrics-text.js';
import { RedisServer } from '../helpers/redis-server.js';
import { chat as chatCall, readyz, storeConfigText, waitMode, type CallOpts, type ModelSpec, type UpSpec } from '../helpers/shared-store.js';

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

// ---------------------------------------------------------------------------------------
// Each upstream is an `Account` (it counts its open requests; prompt `hold` waits for its
// gate). Calls stream unless told otherwise.

const chat = (gw: TestGateway, model: string, o: CallOpts = {}) => chatCall(gw, model, { stream: true, ...o });

const deep = (gw: TestGateway, model: string, o: CallOpts = {}) => chat(gw, model, { effort: 'high', ...o });

const shedOf = (r: Raw) => r.headers.get('x-switchyard-shed');

// ---------------------------------------------------------------------------------------

let redis: RedisServer;
const acc: Record<string, Account> = {};
let redisA: TestGateway;
let redisB: TestGateway;
let memC: TestGateway;
let memD: TestGateway;

const BURST = ['acc1', 'acc2', 'acc3'];
const SPREAD = ['sp1', 'sp2', 'sp3'];
const STICKY = ['st1', 'st2', 'st3'];

function ups(): UpSpec[] {
  const w3 = 3;
  const w1 = 1;
  return [
    ...BURST.map((id) => ({ id, url: acc[id]!.url, deepCap: w3 })),
    ...SPREAD.map((id) => ({ id, url: acc[id]!.url, deepCap: w3 })),
    ...STICKY.map((id) => ({ id, url: acc[id]!.url })),
    { id: 'lite', url: acc['lite']!.url },
    { id: 'accD', url: acc['accD']!.url, deepCap: w1 },
    { id: 'accQ', url: acc['accQ']!.url, deepCap: w1 },
    { id: 'accQS', url: acc['accQS']!.url, deepCap: w1 },
    { id: 'accR', url: acc['accR']!.url, deepCap: w1 },
    { id: 'lim', url: acc['lim']!.url, maxConcurrency: 2 },
  ];
}

function models(): ModelSpec[] {
  const one = (upstream: string) => [{ upstream, model: `${upstream}-model` }];
  return [
    { name: 'lite', targets: one('lite') },
    // Deep at `high` (the default deep_effort), medium assumed when no effort is sent.
    { name: 'reasoner', reasoning: true, shed: { policy: 'downgrade', fallback: 'lite' }, targets: BURST.map((u) => ({ upstream: u, model: 'r-up' })) },
    {
      name: 'spread',
      reasoning: true,
      strategy: 'cheap',
      shed: { policy: 'downgrade', fallback: 'lite' },
      // Priced 1, 2, 3: `cheap` alone would put every call on sp1.
      targets: SPREAD.map((u, i) => ({ upstream: u, model: 'r-up', price: { input: i + 1, output: i + 1 } })),
    },
    { name: 'r-down', reasoning: true, shed: { policy: 'downgrade', fallback: 'lite' }, targets: one('accD') },
    { name: 'r-queue', reasoning: true, shed: { policy: 'queue', queue_timeout_ms: 5_000 }, targets: one('accQ') },
    { name: 'r-queue-short', reasoning: true, shed: { policy: 'queue', queue_timeout_ms: 300 }, targets: one('accQS') },
    { name: 'r-reject', reasoning: true, shed: { policy: 'reject' }, targets: one('accR') },
    { name: 'plain-on-r', reasoning: false, targets: one('accR') },
    { name: 'chat', strategy: 'sticky', targets: STICKY.map((u) => ({ upstream: u, model: 'chat-up' })) },
    { name: 'limited', targets: one('lim') },
  ];
}

before(async () => {
  redis = await RedisServer.start();
  for (const id of [...BURST, ...SPREAD, ...STICKY, 'lite', 'accD', 'accQ', 'accQS', 'accR', 'lim']) acc[id] = await new Account(id).start();
  // A 2 s command timeout (default 250 ms): these tests are about the shared counts, and on a
  // loaded CI machine one slow reply would otherwise drop a replica to its local counts for
  // up to a second (store/link.ts). Outages and timeouts have their own tests (test/redis/outage*.test.ts).
  const store = { redis_url: redis.url, replicas: 2, key_prefix: `replicas-${randomUUID()}`, command_timeout_ms: 2_000 };
  redisA = await startGateway(storeConfigText(store, ups(), models()));
  redisB = await startGateway(storeConfigText(store, ups(), models()));
  memC = await startGateway(storeConfigText(null, ups(), models()));
  memD = await startGateway(storeConfigText(null, ups(), models()));
  await Promise.all([waitMode(redisA, 'redis'), waitMode(redisB, 'redis')]);
});

after(async () => {
  for (const a of Object.values(acc)) a.gate.resolve();
  await Promise.all([redisA, redisB, memC, memD].map((g) => g?.close()));
  await Promise.all(Object.values(acc).map((a) => a.fake.close()));
  await redis.stop();
});

/** 16 concurrent deep calls to `reasoner`, 8 through each of two replicas. */
async function burst(x: TestGateway, y: TestGateway): Promise<Raw[]> {
  for (const id of BURST) acc[id]!.reset(800);
  acc['lite']!.reset(0);
  return Promise.all(Array.from({ length: 16 }, (_v, i) => deep(i % 2 === 0 ? x : y, 'reasoner')));
}

describe('the reasoning-burst window is one global count with Redis', () => {
  test('16 concurrent deep calls over two replicas and 3 accounts (threshold 3): never more than 3 per account, the 7 beyond 9 downgraded', async () => {
    const m0 = [await redisA.metricsText(), await redisB.metricsText()];
    const pending = burst(redisA, redisB);
    // While the 9 admitted calls are running, either replica sees every account's window full.
    await waitFor(() => BURST.every((id) => acc[id]!.open() === 3), 3_000, 'three open calls on every account');
    // (Read again for up to 2 s: on a loaded machine a scrape right after the calls opened read 0 now and then.)
    let mid = await redisB.metricsText();
    for (let end = Date.now() + 2_000; BURST.some((id) => metricSum(mid, 'switchyard_deep_in_flight', { upstream: id }) !== 3) && Date.now() < end;)
      mid = await redisB.metricsText();
    for (const id of BURST)
      assert.equal(
        metricSum(mid, 'switchyard_deep_in_flight', { upstream: id }),
        3,
        `window occupancy of ${id} seen by replica B (store ${(await readyz(redisB)).body.store.mode})`,
      );
    const res = await pending;

    for (const r of res) assert.equal(r.status, 200, r.text);
    for (const id of BURST) assert.ok(acc[id]!.max <= 3, `${id} saw ${acc[id]!.max} concurrent deep calls`);
    const onAccounts = BURST.reduce((n, id) => n + acc[id]!.count, 0);
    const shed = res.filter((r) => shedOf(r) !== null);
    const summary = `per account max ${BURST.map((id) => acc[id]!.max).join('/')}, shed ${shed.length}, on accounts ${onAccounts}`;
    assert.equal(shed.length, 7, summary);
    for (const r of shed) {
      assert.equal(shedOf(r), 'reasoner->lite');
      assert.equal(r.headers.get('x-switchyard-upstream'), 'lite');
      assert.match(r.text, /from lite/);
    }
    for (const r of res.filter((x) => shedOf(x) === null))
      assert.ok(BURST.includes(r.headers.get('x-switchyard-upstream') ?? ''), 'served by a reasoning account');
    assert.equal(onAccounts, 9, summary);
    assert.equal(acc['lite']!.count, 7);
    // Both replicas shed: the count each one saw included the other's calls.
    const m1 = [await redisA.metricsText(), await redisB.metricsText()];
    const sheds = [0, 1].map(
      (i) =>
        metricSum(m1[i]!, 'switchyard_sheds_total', { model: 'reasoner', policy: 'downgrade' }) -
        metricSum(m0[i]!, 'switchyard_sheds_total', { model: 'reasoner', policy: 'downgrade' }),
    );
    assert.equal(sheds[0]! + sheds[1]!, 7);
  });

  test('the same config without Redis (each replica in memory mode) lets more than 3 per account through', async () => {
    assert.equal((await readyz(memC)).body.store.mode, 'memory');
    assert.equal((await readyz(memD)).body.store.mode, 'memory');
    const before = BURST.reduce((n, id) => n + acc[id]!.count, 0);
    const res = await burst(memC, memD);
    for (const r of res) assert.equal(r.status, 200, r.text);
    const maxes = BURST.map((id) => acc[id]!.max);
    assert.ok(Math.max(...maxes) > 3, `per-account maxima ${maxes.join('/')}: expected some account above 3 with two independent windows`);
    const onAccounts = BURST.reduce((n, id) => n + acc[id]!.count, 0) - before;
    assert.ok(onAccounts > 9, `${onAccounts} calls reached the accounts`);
  });
});

describe('spread before shed (one replica)', () => {
  test('deep calls fill every account of the model (cheapest first) before any is shed', async () => {
    for (const id of SPREAD) acc[id]!.reset(0);
    const nLite = acc['lite']!.count;
    const calls: Promise<Raw>[] = [];
    const order: string[] = [];
    for (let i = 0; i < 9; i++) {
      const counts = SPREAD.map((id) => acc[id]!.count);
      calls.push(deep(redisA, 'spread', { prompt: 'hold' }));
      const reached = await waitFor(() => SPREAD.find((id, k) => acc[id]!.count > counts[k]!), 3_000, `deep call ${i + 1} to reach an account`);
      order.push(reached);
    }
    assert.deepEqual(order, ['sp1', 'sp1', 'sp1', 'sp2', 'sp2', 'sp2', 'sp3', 'sp3', 'sp3']);
    assert.equal(acc['lite']!.count, nLite, 'nothing was shed while an account was cool');

    // Every account hot: the 10th is shed.
    const tenth = await deep(redisA, 'spread');
    assert.equal(tenth.status, 200, tenth.text);
    assert.equal(shedOf(tenth), 'spread->lite');
    assert.equal(tenth.headers.get('x-switchyard-upstream'), 'lite');

    for (const id of SPREAD) acc[id]!.gate.resolve();
    const res = await Promise.all(calls);
    for (const r of res) {
      assert.equal(r.status, 200, r.text);
      assert.equal(shedOf(r), null, 'one of the first 9 was shed');
    }
    assert.deepEqual(
      res.map((r) => r.headers.get('x-switchyard-upstream')),
      order,
    );
  });
});

describe('shed policies (one replica)', () => {
  /** Starts a deep call that the account holds open (until its gate opens); resolves once it arrived. */
  async function holdOne(id: string, model: string): Promise<{ held: Promise<Raw> }> {
    acc[id]!.reset(0);
    const n = acc[id]!.count;
    const held = deep(redisA, model, { prompt: 'hold' });
    await waitFor(() => acc[id]!.count === n + 1, 3_000, `the held call on ${id}`);
    return { held };
  }

  test('downgrade: served by the fallback model, header a->b, counted as policy="downgrade"', async () => {
    const { held } = await holdOne('accD', 'r-down');
    const m0 = await redisA.metricsText();
    const nLite = acc['lite']!.count;
    const r = await deep(redisA, 'r-down', { stream: false });
    assert.equal(r.status, 200, r.text);
    assert.equal(shedOf(r), 'r-down->lite');
    assert.equal(r.headers.get('x-switchyard-upstream'), 'lite');
    assert.equal(r.headers.get('x-switchyard-model'), 'lite-model');
    assert.equal((JSON.parse(r.text) as { choices: { message: { content: string } }[] }).choices[0]!.message.content, 'from lite');
    assert.equal(acc['lite']!.count, nLite + 1);
    assert.equal(acc['accD']!.count, 1, 'the hot account got no second call');
    const m1 = await redisA.metricsText();
    assert.equal(
      metricSum(m1, 'switchyard_sheds_total', { model: 'r-down', policy: 'downgrade' }) -
        metricSum(m0, 'switchyard_sheds_total', { model: 'r-down', policy: 'downgrade' }),
      1,
    );
    assert.equal(metricSum(m1, 'switchyard_sheds_total', { model: 'r-down', policy: 'reject' }), 0);

    acc['accD']!.gate.resolve();
    const h = await held;
    assert.equal(h.status, 200);
    assert.equal(shedOf(h), null);
    // The window place is free again: the next deep call goes to the reasoning account.
    const again = await deep(redisA, 'r-down');
    assert.equal(again.status, 200);
    assert.equal(shedOf(again), null);
    assert.equal(again.headers.get('x-switchyard-upstream'), 'accD');
  });

  test('queue: the call waits until a window place frees, then the reasoning model serves it (header queued:<ms>)', async () => {
    const { held } = await holdOne('accQ', 'r-queue');
    const m0 = await redisA.metricsText();
    const t0 = Date.now();
    const queued = deep(redisA, 'r-queue');
    await sleep(500);
    assert.equal(acc['accQ']!.count, 1, 'the queued call reached the hot account before its window place freed');
    const freedAt = Date.now();
    acc['accQ']!.gate.resolve();
    const r = await queued;
    assert.equal(r.status, 200, r.text);
    assert.equal(r.headers.get('x-switchyard-upstream'), 'accQ');
    assert.match(r.text, /from accQ/);
    const m = /^queued:(\d+)(?:ms)?$/.exec(shedOf(r) ?? '');
    assert.ok(m, `x-switchyard-shed: ${shedOf(r)}`);
    const waited = Number(m[1]);
    // Lower bound: it waited until the place freed, less the time the call took to reach the
    // queue (auth, view, acquire; slow on a loaded 2-core CI machine).
    assert.ok(waited >= freedAt - t0 - 250 && waited <= Date.now() - t0, `queued ${waited} ms; freed after ${freedAt - t0} ms`);
    assert.equal(acc['accQ']!.count, 2);
    const [first, second] = acc['accQ']!.fake.requests;
    assert.ok(first!.finished && second!.receivedAt >= freedAt);
    assert.equal((await held).status, 200);
    const m1 = await redisA.metricsText();
    assert.equal(
      metricSum(m1, 'switchyard_sheds_total', { model: 'r-queue', policy: 'queue' }) -
        metricSum(m0, 'switchyard_sheds_total', { model: 'r-queue', policy: 'queue' }),
      1,
    );
  });

  test('queue with a short queue_timeout_ms (300): 503 reasoning_burst_shed once the wait runs out', async () => {
    const { held } = await holdOne('accQS', 'r-queue-short');
    const r = await deep(redisA, 'r-queue-short');
    assert.equal(r.status, 503, r.text);
    assert.equal((JSON.parse(r.text) as { error: { code: string } }).error.code, 'reasoning_burst_shed');
    assert.ok(r.ms >= 280, `rejected after ${r.ms} ms, before the queue timeout`);
    assert.ok(r.ms < 2_000, `rejected after ${r.ms} ms`);
    assert.equal(acc['accQS']!.count, 1, 'the hot account got no second call');
    acc['accQS']!.gate.resolve();
    assert.equal((await held).status, 200);
  });

  test('reject: 503 reasoning_burst_shed (not a 429: the key is within its limits) in the OpenAI error shape with Retry-After; non-deep calls are never shed', async () => {
    const { held } = await holdOne('accR', 'r-reject');
    const m0 = await redisA.metricsText();

    const r = await deep(redisA, 'r-reject', { stream: false });
    assert.equal(r.status, 503, r.text);
    assert.match(r.headers.get('content-type') ?? '', /^application\/json/);
    const body = JSON.parse(r.text) as { error: Record<string, unknown> };
    assert.deepEqual(Object.keys(body), ['error']);
    assert.equal(body.error['code'], 'reasoning_burst_shed');
    assert.equal(body.error['type'], 'server_error');
    assert.equal(body.error['param'], null);
    assert.equal(typeof body.error['message'], 'string');
    const retryAfter = r.headers.get('retry-after');
    assert.match(retryAfter ?? '', /^\d+$/);
    assert.ok(Number(retryAfter) >= 1 && Number(retryAfter) <= 7, `Retry-After ${retryAfter} (window is 7 s)`);
    assert.equal(r.headers.get('retry-after-ms'), String(Number(retryAfter) * 1000), 'the same wait in ms (1 s: no typical call time known yet)');
    assert.equal(r.headers.get('x-should-retry'), 'true', 'a retry after the wait is right');
    assert.equal(shedOf(r), 'rejected');

    // The same through the SDK, streaming.
    const err = await redisA
      .client()
      .chat.completions.create({ model: 'r-reject', messages: [{ role: 'user', content: 'hi' }], stream: true, reasoning_effort: 'high' })
      .then(
        () => null,
        (e: unknown) => e,
      );
    assert.ok(err instanceof APIError, `APIError expected, got ${String(err)}`);
    assert.equal(err.status, 503);
    assert.equal(err.code, 'reasoning_burst_shed');
    assert.equal(err.type, 'server_error');
    assert.equal(acc['accR']!.count, 1, 'a rejected call reached the hot account');
    const m1 = await redisA.metricsText();
    assert.equal(
      metricSum(m1, 'switchyard_sheds_total', { model: 'r-reject', policy: 'reject' }) -
        metricSum(m0, 'switchyard_sheds_total', { model: 'r-reject', policy: 'reject' }),
      2,
    );

    // Not deep: effort below deep_effort, no effort (default medium), or a model that does not reason.
    const cases: [string, CallOpts][] = [
      ['r-reject', { effort: 'low' }],
      ['r-reject', { effort: 'medium', stream: false }],
      ['r-reject', {}],
      ['plain-on-r', { effort: 'high' }],
      ['plain-on-r', { effort: 'xhigh', stream: false }],
    ];
    for (const [model, o] of cases) {
      const ok = await chat(redisA, model, o);
      assert.equal(ok.status, 200, `${model} ${JSON.stringify(o)}: ${ok.text}`);
      assert.equal(shedOf(ok), null, `${model} ${JSON.stringify(o)} was shed`);
      assert.equal(ok.headers.get('x-switchyard-upstream'), 'accR');
    }
    assert.equal(acc['accR']!.count, 1 + cases.length);
    // The window was hot all along: a deep call is still rejected.
    assert.equal((await deep(redisA, 'r-reject')).status, 503);

    acc['accR']!.gate.resolve();
    assert.equal((await held).status, 200);
  });
});

describe('sticky pins are shared', () => {
  test('a session pinned through replica A lands on the same target through replica B', async () => {
    for (const id of STICKY) acc[id]!.reset(0);
    const seen = new Set<string>();
    for (let i = 0; i < 6; i++) {
      const session = `session-${randomUUID()}`;
      const first = await chat(redisA, 'chat', { session, stream: i % 2 === 0 });
      assert.equal(first.status, 200, first.text);
      assert.equal(first.headers.get('x-switchyard-sticky'), 'new');
      const target = first.headers.get('x-switchyard-upstream')!;
      assert.ok(STICKY.includes(target));
      seen.add(target);
      // The pin is written after the answer: give it a moment to land in Redis.
      await sleep(50);
      for (const gw of [redisB, redisB, redisA]) {
        const r = await chat(gw, 'chat', { session, stream: i % 2 === 1 });
        assert.equal(r.status, 200, r.text);
        assert.equal(r.headers.get('x-switchyard-sticky'), 'pinned', `session ${i} through ${gw === redisA ? 'A' : 'B'}`);
        assert.equal(r.headers.get('x-switchyard-upstream'), target);
      }
    }
    assert.ok(seen.size > 1, 'the sessions were spread over more than one target');
    // A session never seen is new on B too.
    const fresh = await chat(redisB, 'chat', { session: `session-${randomUUID()}` });
    assert.equal(fresh.headers.get('x-switchyard-sticky'), 'new');
  });

  test('without Redis, replica D does not know the pins replica C made', async () => {
    const session = `session-${randomUUID()}`;
    const first = await chat(memC, 'chat', { session });
    assert.equal(first.headers.get('x-switchyard-sticky'), 'new');
    await sleep(50);
    const r = await chat(memD, 'chat', { session });
    assert.equal(r.headers.get('x-switchyard-sticky'), 'new');
  });
});

describe('max_concurrency is global with Redis', () => {
  async function tenCalls(x: TestGateway, y: TestGateway): Promise<Raw[]> {
    acc['lim']!.reset(300);
    return Promise.all(Array.from({ length: 10 }, (_v, i) => chat(i % 2 === 0 ? x : y, 'limited', { stream: i % 3 === 0 })));
  }

  test('an upstream with max_concurrency 2 never sees more than 2 concurrent requests across both replicas', async () => {
    const res = await tenCalls(redisA, redisB);
    for (const r of res) assert.equal(r.status, 200, r.text);
    assert.equal(acc['lim']!.max, 2, `lim saw ${acc['lim']!.max} concurrent requests`);
  });

  test('without Redis each replica enforces it alone (more than 2 at once)', async () => {
    const res = await tenCalls(memC, memD);
    for (const r of res) assert.equal(r.status, 200, r.text);
    assert.ok(acc['lim']!.max > 2, `lim saw ${acc['lim']!.max} concurrent requests`);
  });
});
