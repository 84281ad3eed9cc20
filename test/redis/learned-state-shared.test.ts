/**
 * What the fleet learned about an account is kept in Redis and used by a replica that starts
 * later, at once: a gateway learns an account's deep-call capacity from a throttling provider
 * (never typed in), then a second gateway started on the same Redis shows the learned limit
 * on its first `/metrics` scrape, and its first burst never puts more calls on the account
 * than the learned limit (the starting guess would).
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { postChat, startGateway, UPSTREAM_KEY, type TestGateway } from '../helpers/gateway.js';
import { metricValue } from '../helpers/metrics-text.js';
import { RedisServer } from '../helpers/redis-server.js';
import { deepAccountConfig, startThrottledProvider, type ThrottledProvider } from '../helpers/throttled-account.js';

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
const DEEP = { model: 'deep', stream: true, reasoning_effort: 'high', messages: [{ role: 'user', content: 'think' }] };
/** The gateway's starting guess for a deep capacity (config default), above the provider's cap. */
const GUESS = 4;
const CAP = 2;

let redis: RedisServer;
let provider: ThrottledProvider;
const gateways: TestGateway[] = [];

const config = (): string => deepAccountConfig(provider.accountUrl(1), `store: { redis_url: "${redis.url}", replicas: 2 }`);

const limitOf = async (gw: TestGateway) => metricValue(await gw.metricsText(), 'switchyard_capacity_limit', { upstream: 'acct' }) ?? Number.NaN;

before(async () => {
  redis = await RedisServer.start();
  provider = await startThrottledProvider({ accounts: 1, cap: CAP, shape: '429', ttft_ms: 40, event_ms: 4, reasoning_events: 8, content_events: 4 });
});
after(async () => {
  for (const g of gateways) await g.close();
  await provider.close();
  await redis.stop();
});

test('a replica started after the fleet learned an account uses the learned limit at once (its first scrape, its first burst)', async () => {
  const a = await startGateway(config(), { TEST_UPSTREAM_KEY: UPSTREAM_KEY });
  gateways.push(a);
  assert.equal(await limitOf(a), GUESS, 'a cold fleet starts from the guess');
  // Learn: deep calls on the account until the limit falls to its cap.
  let running = true;
  const workers = Array.from({ length: 6 }, async () => {
    while (running) {
      const r = await postChat(a, DEEP).catch(() => null);
      if (r?.status !== 200) await sleep(20);
    }
  });
  const t0 = Date.now();
  while ((await limitOf(a)) > CAP && Date.now() - t0 < 8_000) await sleep(50);
  running = false;
  await Promise.all(workers);
  const learned = await limitOf(a);
  assert.ok(learned <= CAP && learned >= 1, `the first replica learned ${learned}`);

  // A new replica on the same Redis: the learned limit before it served anything.
  const b = await startGateway(config(), { TEST_UPSTREAM_KEY: UPSTREAM_KEY });
  gateways.push(b);
  assert.equal(await limitOf(b), learned, 'the new replica shows the learned limit on its first scrape, not the guess');
  // Its first burst: never more deep calls on the account than the learned limit.
  provider.reset();
  const burst = await Promise.all(Array.from({ length: GUESS + 2 }, () => postChat(b, DEEP)));
  const served = burst.filter((r) => r.status === 200).length;
  const stats = provider.stats()['acct-1']!;
  assert.ok(served >= 1, `the burst was served (${burst.map((r) => r.status).join(',')})`);
  assert.equal(stats.throttled, 0, `no call of the first burst was refused by the provider: ${JSON.stringify(stats)}`);
  assert.ok(stats.peak_in_flight <= learned, `at most the learned ${learned} in flight: ${JSON.stringify(stats)}`);
});
