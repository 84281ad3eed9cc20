/**
 * Redis work per request for each kind of request (issue 33): a plain one, one through a
 * client key with rate and concurrency limits, one that carries a session (cache affinity),
 * the first after the replica was idle (its cached views are old), and one through a key with
 * a budget. Each costs two top-level commands (MONITOR, scripts' inner commands left out):
 * one script call before the upstream and one after the answer, in two round trips (a TCP
 * proxy counts the gateway's writes), of which one is before the upstream (the fake upstream
 * notes the count when the request reaches it).
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import type { Redis } from 'ioredis';
import { hashKey } from '../../src/auth/keys.js';
import { answer } from '../helpers/accounts.js';
import { FakeUpstream } from '../helpers/fake-upstream.js';
import { OTHER_KEY, postChat, startGateway, type TestGateway } from '../helpers/gateway.js';
import { CommandMonitor } from '../helpers/command-monitor.js';
import { RedisServer, TcpProxy } from '../helpers/redis-server.js';
import { chat, storeConfigText, waitMode } from '../helpers/shared-store.js';

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
const BUDGET_KEY = 'sk-test-budget-0123456789abcdef';

let redis: RedisServer;
let proxy: TcpProxy;
let base: Redis;
let monitor: CommandMonitor;
const up = new FakeUpstream();
/** Top-level commands seen by MONITOR (those run by scripts left out). */
const commandCount = (): number => monitor.seen.length;
/** Per request that reached the upstream: the proxy's writes by then (MONITOR's count lags: not used here). */
const arrivals: number[] = [];
let gw: TestGateway;

before(async () => {
  redis = await RedisServer.start();
  proxy = await new TcpProxy(redis.port).start();
  up.on(async (req) => {
    arrivals.push(proxy.writes);
    return answer(req, 'ok');
  });
  await up.start();
  const store = { redis_url: proxy.url, key_prefix: `rk-${randomUUID()}`, lease_ms: 60_000 };
  const config = JSON.parse(storeConfigText(store, [{ id: 'a1', url: up.url }], [{ name: 'm', targets: [{ upstream: 'a1', model: 'm' }] }])) as {
    keys: unknown[];
  };
  config.keys.push(
    { name: 'limited', key_sha256: hashKey(OTHER_KEY), models: ['*'], limits: { rpm: 100_000, tpm: 100_000_000, max_concurrency: 50 } },
    { name: 'budgeted', key_sha256: hashKey(BUDGET_KEY), models: ['*'], limits: { budget_usd: { amount: 1_000, period: 'day' } } },
  );
  gw = await startGateway(JSON.stringify(config));
  await waitMode(gw, 'redis');
  base = redis.client();
  monitor = await CommandMonitor.start(base);
});

after(async () => {
  monitor?.stop();
  base?.disconnect();
  await gw?.close();
  await up.close();
  await proxy?.close();
  await redis.stop();
});

interface Kind {
  readonly name: string;
  /** One request of the kind (the i-th). */
  readonly send: (i: number) => Promise<{ status: number; text: string }>;
  /** Wait before each request, ms (the views go stale after 250 ms). */
  readonly idleMs?: number;
}

const session = randomUUID();
const KINDS: Kind[] = [
  { name: 'plain', send: () => chat(gw, 'm') },
  {
    name: 'limited key (rpm, tpm, max_concurrency)',
    send: () => postChat(gw, { model: 'm', messages: [{ role: 'user', content: 'hi' }] }, { key: OTHER_KEY }),
  },
  { name: 'session (cache affinity)', send: () => chat(gw, 'm', { session, prompt: 'x'.repeat(5_000) }) },
  { name: 'after idle', send: () => chat(gw, 'm'), idleMs: 400 },
  { name: 'budgeted key', send: () => postChat(gw, { model: 'm', messages: [{ role: 'user', content: 'hi' }] }, { key: BUDGET_KEY }) },
];

describe('two Redis commands per request, one round trip before the upstream, for every kind', () => {
  for (const kind of KINDS) {
    test(kind.name, async () => {
      const n = 4;
      // Warm: scripts loaded, views cached, the session pinned.
      for (let i = 0; i < 2; i++) assert.equal((await kind.send(-1 - i)).status, 200);
      await sleep(kind.idleMs ?? 100);
      const [c0, w0, a0] = [commandCount(), proxy.writes, arrivals.length];
      /** Round trips of each request before it reached the upstream. */
      const before: number[] = [];
      for (let i = 0; i < n; i++) {
        if (i > 0 && kind.idleMs) await sleep(kind.idleMs);
        const wi = proxy.writes;
        const r = await kind.send(i);
        assert.equal(r.status, 200, r.text);
        before.push(arrivals[a0 + i]! - wi);
        // The settlement leaves after the answer: let it land before the next request.
        await sleep(150);
      }
      const [cmds, writes] = [commandCount() - c0, proxy.writes - w0];
      assert.deepEqual(monitor.errors, [], 'MONITOR read every command');
      const summary = `${kind.name}: ${cmds / n} commands and ${writes / n} round trips per request; round trips before the upstream: ${before.join(' ')}`;
      assert.equal(cmds, 2 * n, summary);
      assert.ok(writes <= 2 * n, summary);
      for (const b of before) assert.ok(b <= 1, `one round trip before the upstream: ${summary}`);
    });
  }
});
