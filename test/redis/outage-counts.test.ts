/**
 * What is counted while Redis is away is added to the shared counters when it returns,
 * exactly once (issue 14: spend served in degraded mode never reached the key's budget
 * counter), and a request during the outage waits for one Redis timeout, not one per limit.
 * Real gateway, real redis-server frozen with SIGSTOP (commands sent meanwhile are run
 * when it resumes, so a timed-out add may land on its own: the case that needs exactly once).
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { hashKey } from '../../src/auth/keys.js';
import { FakeUpstream } from '../helpers/fake-upstream.js';
import { metricSum } from '../helpers/metrics-text.js';
import { postChat, startGateway, UPSTREAM_KEY, waitFor, type TestGateway } from '../helpers/gateway.js';
import { RedisServer } from '../helpers/redis-server.js';
import { waitMode } from '../helpers/shared-store.js';

const KEY = 'sk-outage-counts-0123456789abcdef';
const PREFIX = 'counts';
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

function yaml(upstream: string, redisUrl: string): string {
  return `
server: { log_level: info }
store: { redis_url: "${redisUrl}", replicas: 2, command_timeout_ms: 250, key_prefix: ${PREFIX} }
routing: { max_attempts: 1 }
upstreams:
  - { id: fake, provider: openai-compatible, base_url: "${upstream}/v1", api_key: "\${TEST_UPSTREAM_KEY}" }
models:
  - name: gpt-test
    price: { input: 2.5, output: 10 }
    targets: [{ upstream: fake, model: upstream-model-x }]
keys:
  - { name: k-out, key_sha256: ${hashKey(KEY)}, limits: { rpm: 1000, tpm: 1000000, budget_usd: { amount: 100, period: day } } }
`;
}

function chunk(delta: Record<string, unknown>, finish: string | null = null, usage?: unknown): string {
  return `data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta, finish_reason: finish }], ...(usage ? { usage } : {}) })}\n\n`;
}

describe('counts made while Redis is away', () => {
  let redis: RedisServer;
  const fake = new FakeUpstream();
  let gw: TestGateway;

  before(async () => {
    redis = await RedisServer.start();
    fake.on((req) => {
      const usage = { prompt_tokens: 5, completion_tokens: 2, total_tokens: 7 };
      if (req.json?.['stream'] === true) {
        return {
          status: 200,
          steps: [chunk({ role: 'assistant', content: 'o' }), { delayMs: 600 }, chunk({ content: 'k' }, 'stop', usage), 'data: [DONE]\n\n'],
        };
      }
      return {
        status: 200,
        body: {
          id: 'c',
          object: 'chat.completion',
          created: 1,
          model: 'm',
          choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }],
          usage,
        },
      };
    });
    await fake.start();
    gw = await startGateway(yaml(fake.url, redis.url), { TEST_UPSTREAM_KEY: UPSTREAM_KEY });
    await waitMode(gw, 'redis', 5_000);
  });
  after(async () => {
    redis.thaw();
    await gw?.close();
    await fake.close();
    await redis?.stop();
  });

  const call = (stream = false) => postChat(gw, { model: 'gpt-test', stream, max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] }, { key: KEY });

  test('spend and tokens served during a freeze land in Redis once it is back, exactly once', async () => {
    const r = redis.client();
    try {
      assert.equal((await call()).status, 200);
      // A stream whose end (and spend) comes while Redis is frozen: its add times out, and
      // Redis runs it anyway on resume; the catch-up re-sends it, which must not count twice.
      const streaming = call(true);
      await waitFor(() => fake.requests.length === 2, 3000, 'the stream started');
      redis.freeze();
      assert.equal((await streaming).status, 200);
      await sleep(400); // the stream's settlement, after its last byte, times out
      const during = [await call(), await call()];
      for (const d of during) {
        assert.equal(d.status, 200, d.text);
        // One Redis timeout (250 ms) at most per request, not one per limit checked.
        assert.ok(d.ms < 600, `a request during the freeze took ${d.ms} ms`);
      }
      assert.equal(gw.store.mode, 'degraded');
      assert.ok(gw.store.counterBacklog > 0, 'amounts are waiting for Redis');

      redis.thaw();
      await waitMode(gw, 'redis', 10_000);
      await waitFor(() => gw.store.counterBacklog === 0, 5000, 'the backlog flushed');

      const metrics = await gw.metricsText();
      const spent = metricSum(metrics, 'switchyard_spend_usd_total', { key: 'k-out' });
      assert.ok(spent > 0);
      const day = new Date().toISOString().slice(0, 10);
      const budget = Number(await r.get(`{${PREFIX}}:spend:k-out:${day}`));
      const daily = Number(await r.get(`{${PREFIX}}:spend:day:${day}:key:k-out`));
      assert.ok(Math.abs(budget - spent) < 1e-12, `budget counter ${budget} vs spend ${spent}`);
      assert.ok(Math.abs(daily - spent) < 1e-12, `daily counter ${daily} vs spend ${spent}`);
      // 4 requests of 7 real tokens each in the shared token window, 4 in the request window.
      assert.equal(Number(await r.get(`{${PREFIX}}:rl:tpm:k-out:k-out`)), 28);
      assert.equal(Number(await r.get(`{${PREFIX}}:rl:rpm:k-out:k-out`)), 4);

      // Another outage without traffic adds nothing again.
      redis.freeze();
      await sleep(100);
      assert.equal((await call()).status, 200);
      redis.thaw();
      await waitMode(gw, 'redis', 10_000);
      await waitFor(() => gw.store.counterBacklog === 0, 5000, 'the second backlog flushed');
      const spent2 = metricSum(await gw.metricsText(), 'switchyard_spend_usd_total', { key: 'k-out' });
      assert.ok(Math.abs(Number(await r.get(`{${PREFIX}}:spend:k-out:${day}`)) - spent2) < 1e-12);
      assert.equal(Number(await r.get(`{${PREFIX}}:rl:tpm:k-out:k-out`)), 35);
    } finally {
      r.disconnect();
    }
  });
});
