/**
 * Redis Cluster, for real: three primaries with a replica each (`redis-server
 * --cluster-enabled`, `redis-cli --cluster create`), two gateways on it, and the primary
 * that holds Switchyard's keys killed mid-load. Every request is answered, the replica's
 * promotion brings both gateways back onto the cluster by themselves, `max_concurrency` is
 * global again afterwards, and no in-flight slot is left behind.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Account } from '../helpers/accounts.js';
import { OTHER_KEY, postChat, startGateway, type TestGateway } from '../helpers/gateway.js';
import { hashKey } from '../../src/auth/keys.js';
import { RedisCluster } from '../helpers/redis-cluster.js';
import { chat, storeConfigText, waitMode } from '../helpers/shared-store.js';

const PREFIX = 'clu';
const TAG = `{${PREFIX}}`;
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

describe('Redis Cluster: a primary killed mid-load', () => {
  let cluster: RedisCluster;
  let acc: Account;
  let a: TestGateway;
  let b: TestGateway;

  before(async () => {
    cluster = await RedisCluster.start();
    acc = await new Account('lim').start();
    acc.ms = 40;
    const text = storeConfigText(
      { cluster_nodes: cluster.urls, replicas: 2, key_prefix: PREFIX, command_timeout_ms: 250, lease_ms: 3000 },
      [{ id: 'lim', url: acc.url, maxConcurrency: 4 }],
      [{ name: 'limited', targets: [{ upstream: 'lim', model: 'lim-model' }] }],
    );
    a = await startGateway(text, { TEST_UPSTREAM_KEY: 'k' });
    b = await startGateway(text, { TEST_UPSTREAM_KEY: 'k' });
    await waitMode(a, 'redis', 10_000);
    await waitMode(b, 'redis', 10_000);
  });
  after(async () => {
    acc?.gate.resolve();
    await Promise.allSettled([a?.close(), b?.close()]);
    await acc?.fake.close();
    await cluster?.stop();
  });

  /** `n` calls at once, alternating between the two gateways; their statuses. */
  const burst = async (n: number) => (await Promise.all(Array.from({ length: n }, (_, i) => chat(i % 2 ? a : b, 'limited')))).map((r) => r.status);

  test("a request's first call on the cluster (a key with rpm, tpm and a budget, a session): one slot, served on Redis, its counters and pin kept there", async () => {
    const cfg = JSON.parse(
      storeConfigText(
        { cluster_nodes: cluster.urls, replicas: 2, key_prefix: PREFIX, command_timeout_ms: 250, lease_ms: 3000 },
        [{ id: 'lim', url: acc.url, maxConcurrency: 4 }],
        [{ name: 'limited', targets: [{ upstream: 'lim', model: 'lim-model' }] }],
      ),
    ) as { keys: unknown[] };
    const limits = { rpm: 1000, tpm: 1_000_000, budget_usd: { amount: 100, period: 'day' } };
    cfg.keys.push({ name: 'clu-key', key_sha256: hashKey(OTHER_KEY), models: ['*'], limits });
    const c = await startGateway(JSON.stringify(cfg), { TEST_UPSTREAM_KEY: 'k' });
    try {
      await waitMode(c, 'redis', 10_000);
      const body = { model: 'limited', messages: [{ role: 'user', content: 'x'.repeat(5_000) }] };
      for (let i = 0; i < 3; i++) {
        const r = await postChat(c, body, { key: OTHER_KEY, headers: { 'x-session-id': 'clu-session' } });
        assert.equal(r.status, 200, r.text);
        assert.equal(r.headers.get('x-ratelimit-remaining-requests'), String(1000 - i - 1));
      }
      assert.equal(c.store.mode, 'redis', 'no call failed on the cluster (a script over two slots would)');
      assert.equal(cluster.run(TAG, 'get', `${TAG}:rl:rpm:clu-key:clu-key`), '3');
      assert.ok(Number(cluster.run(TAG, 'get', `${TAG}:spend:day:${new Date().toISOString().slice(0, 10)}:key:clu-key`)) > 0, 'the spend added');
      assert.match(cluster.run(TAG, 'keys', `${TAG}:pin:*`), /pin/, 'the session pinned');
    } finally {
      await c.close();
    }
  });

  test('no failed request while the primary fails over; limits global again after; no slot left behind', async () => {
    // Before: 16 at once over two replicas never put more than 4 on the account.
    assert.deepEqual(await burst(16), Array(16).fill(200));
    assert.ok(acc.max <= 4 && acc.max >= 3, `max_concurrency 4 across both replicas (saw ${acc.max})`);
    const holder = cluster.primaryOf(TAG);

    // Load from 8 clients for 8 s; the primary holding the keys is killed 1.5 s in.
    const statuses: number[] = [];
    const errors: string[] = [];
    const stopAt = Date.now() + 8000;
    const worker = async (i: number) => {
      while (Date.now() < stopAt) {
        const r = await chat(i % 2 ? a : b, 'limited');
        statuses.push(r.status);
        if (r.status !== 200) errors.push(`${r.status} ${r.text.slice(0, 200)}`);
      }
    };
    const load = Promise.all(Array.from({ length: 8 }, (_, i) => worker(i)));
    await sleep(1500);
    await cluster.kill(holder);
    await load;
    assert.deepEqual(errors, [], 'every request during the failover was answered 200');
    assert.ok(statuses.length > 50, `load ran (${statuses.length} requests)`);

    // The replica took over; both gateways are back on the cluster by themselves.
    await cluster.waitHealthy(20_000);
    const promoted = cluster.primaryOf(TAG);
    assert.notEqual(promoted, holder, 'the slot moved to the promoted replica');
    await waitMode(a, 'redis', 15_000);
    await waitMode(b, 'redis', 15_000);
    // They did run degraded meanwhile (the load reached the dead primary), and came back.
    const msgs = [...a.logLines(), ...b.logLines()].map((l) => String(l['msg']));
    assert.ok(
      msgs.some((m) => m.includes('Redis unreachable')),
      'a gateway went degraded during the failover',
    );
    assert.ok(
      msgs.some((m) => m.includes('back on Redis')),
      'and came back on its own',
    );

    // Global again: 16 at once over both replicas, at most 4 on the account.
    acc.reset(40);
    assert.deepEqual(await burst(16), Array(16).fill(200));
    assert.ok(acc.max <= 4, `max_concurrency is global after the failover (saw ${acc.max})`);
    assert.equal(a.store.mode, 'redis');

    // No slot left: nothing live in the account's in-flight set (leases lapse after lease_ms
    // at worst, which is 3 s here: a release lost with the old primary is not a leak).
    const deadline = Date.now() + 5000;
    let live = -1;
    while (Date.now() < deadline) {
      live = Number(cluster.run(TAG, 'zcount', `${TAG}:inflight:lim`, String(Date.now()), '+inf'));
      if (live === 0) break;
      await sleep(200);
    }
    assert.equal(live, 0, 'no in-flight lease left in the cluster');
  });
});
