/**
 * The wait rung weighs the waiters of every process sharing the places (router/take.ts
 * expectedPlaceWaitMs): a process sees only its own waiters, so on Redis each is taken to
 * stand for `store.replicas` × `server.workers` of them (RouterSlots.peers); in memory mode
 * (one process) for itself alone. A real Router on a real StateStore: two requests wait for
 * an account's one deep place, and the expected wait of a third is read.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import { Router } from '../../src/router/index.js';
import { expectedPlaceWaitMs, waitForPlace } from '../../src/router/take.js';
import { StateStore } from '../../src/store/index.js';
import { parseTestConfig } from '../helpers/config.js';
import { RedisServer } from '../helpers/redis-server.js';
import { slotOf } from '../helpers/store-contract.js';

let redis: RedisServer;
before(async () => {
  redis = await RedisServer.start();
});
after(async () => {
  await redis?.stop();
});

const config = parseTestConfig(
  `
upstreams:
  - { id: acct, provider: openai-compatible, base_url: "http://127.0.0.1:9/v1", api_key: k, capacity: { start: 1, ceiling: 1 } }
models:
  - name: deep
    reasoning: true
    price: { input: 1, output: 1 }
    targets: [{ upstream: acct, model: m }]
keys:
  - { name: k, key_sha256: "${'0'.repeat(64)}" }
`,
  {},
);
const target = config.models.get('deep')!.targets[0]!;

/** The expected wait (ms, typical call 1,000 ms) of a new deep call with two waiting on this process. */
async function expectedWith(store: StateStore): Promise<number | null> {
  const router = new Router(config.routing, store);
  const held = await store.acquire(slotOf(target, true));
  assert.ok(held.ok, 'the one deep place taken');
  const stop = new AbortController();
  const waits = [0, 1].map(() => waitForPlace(router, [target], 10_000, stop.signal).catch(() => null));
  await new Promise((r) => setTimeout(r, 50));
  const [view] = await store.view([{ key: target.key, upstream: target.upstream.id, capacity: target.upstream.bounds, calls: target.upstream.callBounds }]);
  const ms = expectedPlaceWaitMs(router, [target], new Map([[target, view!]]), 1_000);
  stop.abort(new Error('done'));
  await Promise.all(waits);
  await store.release(held.lease);
  return ms;
}

const storeConfig = (redisUrl: string, replicas: number) => ({
  redis_url: redisUrl,
  redis_options: {},
  cluster_nodes: [],
  key_prefix: `peers-${randomUUID()}`,
  command_timeout_ms: 250,
  replicas,
  lease_ms: 30_000,
  journal_ttl_ms: 60_000,
});
const quiet = { info: () => {}, warn: () => {} };

test('on Redis with two replicas, two waiters here stand for four: (4 + 1) × 1,000 ms / 1 place', async () => {
  const store = new StateStore(storeConfig(redis.url, 2), quiet, {});
  try {
    await store.ready(3_000);
    assert.equal(store.peers, 2);
    assert.equal(await expectedWith(store), 5_000);
  } finally {
    await store.close();
  }
});

test('in memory mode (one process) two waiters are two: (2 + 1) × 1,000 ms', async () => {
  const store = new StateStore(storeConfig('', 2), quiet, {});
  try {
    assert.equal(store.peers, 1);
    assert.equal(await expectedWith(store), 3_000);
  } finally {
    await store.close();
  }
});
