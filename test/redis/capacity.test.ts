/**
 * Learned capacity against a provider whose limit the gateway is never told: the
 * throttling provider of the benchmark (scripts/bench/throttled-provider.mjs) answers 429 above
 * its own cap of deep calls in flight, and the cap changes mid-run (4 -> 8 -> 2). The
 * learned limit (`switchyard_capacity_limit`) follows: down at once, up within the probe
 * waits. Then a real replica process is killed with SIGKILL in the middle of a burst: the
 * places its calls held in Redis free within the lease time. The limit for calls of every
 * kind is learned the same way from an account that refuses any call above its cap.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { hashKey } from '../../src/auth/keys.js';
import { RedisStore } from '../../src/store/redis.js';
import { CLIENT_KEY, postChat, startGateway, UPSTREAM_KEY, type TestGateway } from '../helpers/gateway.js';
import { metricValue } from '../helpers/metrics-text.js';
import { freePort, RedisServer } from '../helpers/redis-server.js';
import { deepAccountConfig, startThrottledProvider, type ThrottledProvider } from '../helpers/throttled-account.js';

const here = dirname(fileURLToPath(import.meta.url));
const ROOT = join(here, '..', '..', '..');
const MAIN = join(ROOT, '.test-build', 'src', 'main.js');

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

const DEEP = { model: 'deep', stream: true, reasoning_effort: 'high', messages: [{ role: 'user', content: 'think' }] };

/** Keeps `n` deep calls going until `stop()`; counts the answers by status. */
function load(gw: { url: string }, n: number): { stop(): Promise<Record<string, number>> } {
  let running = true;
  const statuses: Record<string, number> = {};
  const workers = Array.from({ length: n }, async () => {
    while (running) {
      const r = await postChat(gw, DEEP).catch(() => null);
      // An error counts under its status and code (a shed's 503 is not a spent retry budget's).
      const code = r && r.status !== 200 ? `:${String((JSON.parse(r.text) as { error?: { code?: unknown } }).error?.code)}` : '';
      const k = r ? `${r.status}${code}` : 'error';
      statuses[k] = (statuses[k] ?? 0) + 1;
      if (r?.status !== 200) await sleep(20);
    }
  });
  return {
    stop: async () => {
      running = false;
      await Promise.all(workers);
      return statuses;
    },
  };
}

describe('the learned limit follows a provider whose cap changes (4 -> 8 -> 2), never typed in', () => {
  let provider: ThrottledProvider;
  let gw: TestGateway;

  before(async () => {
    provider = await startThrottledProvider({ accounts: 1, cap: 4, shape: '429', ttft_ms: 40, event_ms: 4, reasoning_events: 8, content_events: 4 });
    gw = await startGateway(deepAccountConfig(provider.accountUrl(1), ''), { TEST_UPSTREAM_KEY: UPSTREAM_KEY });
  });
  after(async () => {
    await gw.close();
    await provider.close();
  });

  const limit = async () => metricValue(await gw.metricsText(), 'switchyard_capacity_limit', { upstream: 'acct' }) ?? Number.NaN;

  /** Polls until `ok(limit)` or `ms` pass; returns the limit and how long it took. */
  async function until(ok: (l: number) => boolean, ms: number): Promise<{ limit: number; ms: number }> {
    const t0 = Date.now();
    let l = await limit();
    while (!ok(l) && Date.now() - t0 < ms) {
      await sleep(100);
      l = await limit();
    }
    return { limit: l, ms: Date.now() - t0 };
  }

  test('cap 4: the limit settles at 4 (slow start overshoots once, the refusals cut it back)', async () => {
    const running = load(gw, 12);
    const settled = await until((l) => l === 4, 8_000);
    await sleep(1_500);
    const held = await limit();
    const statuses = await running.stop();
    assert.equal(settled.limit, 4, `limit ${settled.limit} after ${settled.ms} ms (${JSON.stringify(statuses)})`);
    // At most one probe above the cap; one below when a first event came late on a busy machine (a stall signal).
    assert.ok(held >= 3 && held <= 5, `held ${held}`);
    // Traffic flowed at the cap the whole time (at least one call per caller; 20 in 9.5 s on a loaded CI machine).
    assert.ok(provider.stats()['acct-1']!.served >= 12, JSON.stringify(provider.stats()));
  });

  test('cap 8: the limit rises to 8 within the probe waits (each probe served at the new cap shortens the next wait)', async () => {
    provider.setCap('acct-1', 8);
    const running = load(gw, 14);
    const risen = await until((l) => l >= 8, 40_000);
    const statuses = await running.stop();
    assert.ok(risen.limit >= 8, `limit ${risen.limit} after ${risen.ms} ms (${JSON.stringify(statuses)})`);
  });

  test('cap 2: the limit falls to 2 within seconds of the first refusals', async () => {
    provider.setCap('acct-1', 2);
    const running = load(gw, 10);
    const fallen = await until((l) => l <= 2, 5_000);
    const statuses = await running.stop();
    assert.ok(fallen.limit <= 2 && fallen.limit >= 1, `limit ${fallen.limit} after ${fallen.ms} ms (${JSON.stringify(statuses)})`);
    assert.ok(fallen.ms < 3_000, `took ${fallen.ms} ms`);
    assert.equal(statuses['503:retry_budget_exhausted'] ?? 0, 0, 'no retry_budget_exhausted: throttles are routing, not retries');
  });
});

describe('the learned limit for every call: an account that refuses any call above its cap, never typed in', () => {
  let provider: ThrottledProvider;
  let gw: TestGateway;

  before(async () => {
    provider = await startThrottledProvider({ accounts: 1, cap: 3, shape: '429', ttft_ms: 30, event_ms: 3, reasoning_events: 0, content_events: 6 });
    gw = await startGateway(
      `
server: { log_level: warn }
routing: { max_attempts: 3 }
upstreams:
  - { id: acct, provider: openai-compatible, base_url: "${provider.accountUrl(1)}", api_key: "\${TEST_UPSTREAM_KEY}" }
models:
  - name: plain
    price: { input: 1, output: 1 }
    targets: [{ upstream: acct, model: plain-model }]
keys:
  - { name: team-a, key_sha256: ${hashKey(CLIENT_KEY)} }
`,
      { TEST_UPSTREAM_KEY: UPSTREAM_KEY },
    );
  });
  after(async () => {
    await gw.close();
    await provider.close();
  });

  test('10 plain calls at once on a 3-call account: the limit falls to the cap, the rest wait their turn, no client sees a 429 or 503', async () => {
    const statuses: Record<string, number> = {};
    let running = true;
    const workers = Array.from({ length: 10 }, async () => {
      while (running) {
        const r = await postChat(gw, { model: 'plain', stream: true, messages: [{ role: 'user', content: 'hi' }] }).catch(() => null);
        const k = r ? String(r.status) : 'error';
        statuses[k] = (statuses[k] ?? 0) + 1;
      }
    });
    const callLimit = async () => metricValue(await gw.metricsText(), 'switchyard_call_capacity_limit', { upstream: 'acct' }) ?? Number.NaN;
    assert.equal(await callLimit(), 64, 'it starts at max_concurrency (64 by default)');
    const t0 = Date.now();
    let l = await callLimit();
    while (l > 3 && Date.now() - t0 < 5_000) {
      await sleep(50);
      l = await callLimit();
    }
    const fellMs = Date.now() - t0;
    await sleep(2_000);
    const before = provider.stats()['acct-1']!;
    await sleep(2_000);
    const afterStats = provider.stats()['acct-1']!;
    running = false;
    await Promise.all(workers);
    assert.ok(l <= 3 && l >= 1, `learned ${l} after ${fellMs} ms`);
    assert.ok(fellMs < 3_000, `took ${fellMs} ms to fall`);
    assert.deepEqual(Object.keys(statuses), ['200'], `every call answered 200: ${JSON.stringify(statuses)}`);
    // Once learned, the account is rarely pushed over its cap: only the additive probes (one every 2 s or more) find it.
    const throttled = afterStats.throttled - before.throttled;
    const served = afterStats.served - before.served;
    // Liveness only (the account keeps serving the waiting calls): how close to its cap it is
    // kept is measured by npm run bench:clustering, not here (47 were served on a loaded run).
    assert.ok(served > 20, `served ${served} in 2 s`);
    assert.ok(throttled <= 3, `${throttled} refusals in 2 s once learned (served ${served})`);
  });
});

describe('a replica killed with SIGKILL mid-burst frees its places within the lease time', () => {
  let redis: RedisServer;
  let provider: ThrottledProvider;
  let dir: string;
  let replica: ChildProcess | null = null;

  before(async () => {
    redis = await RedisServer.start();
    // Calls that hold their place for a long time (a slow reasoning stream), no throttling.
    provider = await startThrottledProvider({ accounts: 1, cap: 100, shape: '429', ttft_ms: 50, event_ms: 500, reasoning_events: 60, content_events: 4 });
    dir = mkdtempSync(join(tmpdir(), 'switchyard-kill-'));
  });
  after(async () => {
    replica?.kill('SIGKILL');
    await provider.close();
    await redis.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  test('4 deep calls in flight on a replica; SIGKILL; their places lapse within lease_ms (3 s)', async () => {
    const prefix = 'kill-test';
    const file = join(dir, 'switchyard.yaml');
    writeFileSync(file, deepAccountConfig(provider.accountUrl(1), `store: { redis_url: "${redis.url}", key_prefix: ${prefix}, lease_ms: 3000 }`));
    const port = await freePort();
    replica = spawn(process.execPath, [MAIN, '--config', file], {
      env: { ...process.env, PORT: String(port), HOST: '127.0.0.1', TEST_UPSTREAM_KEY: UPSTREAM_KEY },
      stdio: 'ignore',
    });
    const url = `http://127.0.0.1:${port}`;
    for (let i = 0; i < 100; i++) {
      const ready = await fetch(`${url}/readyz`).then(
        (r) => r.text(),
        () => '',
      );
      if (ready.includes('"mode":"redis"')) break;
      await sleep(100);
    }
    const client = await redis.storeClient(prefix, 500, 3_000);
    const view = new RedisStore(client, { prefix, leaseMs: 3_000 });
    const deep = async () =>
      (
        await view.view([{ key: 'acct/deep-model', upstream: 'acct', capacity: { start: 4, min: 1, ceiling: 64 }, calls: { start: 64, min: 1, ceiling: 64 } }])
      )[0]!.deep;
    try {
      const calls = Array.from({ length: 4 }, () => postChat({ url }, DEEP).catch(() => null));
      for (let i = 0; i < 50 && (await deep()) < 4; i++) await sleep(100);
      assert.equal(await deep(), 4, 'four places held in Redis');
      // Held past the lease time: the live replica renews them.
      await sleep(3_500);
      assert.equal(await deep(), 4, 'a live replica keeps renewing its places');

      const killedAt = Date.now();
      replica.kill('SIGKILL');
      await Promise.all(calls);
      let n = await deep();
      while (n > 0 && Date.now() - killedAt < 8_000) {
        await sleep(100);
        n = await deep();
      }
      const freedMs = Date.now() - killedAt;
      assert.equal(n, 0, `places still held ${freedMs} ms after the kill`);
      assert.ok(freedMs <= 3_000 + 1_500, `freed after ${freedMs} ms (lease 3 s)`);
    } finally {
      await view.close();
    }
  });
});
