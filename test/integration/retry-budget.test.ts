/**
 * The retry budget never stops the first failover to an account that is answering (issue
 * 14: half a second into traffic after a quiet spell, one 500 from one account gave the
 * client 503 retry_budget_exhausted although the other account was healthy), while retries
 * onto accounts not known to answer still draw on it.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { hashKey } from '../../src/auth/keys.js';
import { FakeUpstream } from '../helpers/fake-upstream.js';
import { CLIENT_KEY, postChat, startGateway, type TestGateway } from '../helpers/gateway.js';
import { metricSum } from '../helpers/metrics-text.js';

const completion = {
  id: 'c',
  object: 'chat.completion',
  created: 1,
  model: 'm',
  choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }],
  usage: { prompt_tokens: 5, completion_tokens: 2, total_tokens: 7 },
};

/** Default routing (budget 20 % + 3 per 10 s, 4 attempts) except `cheap` order and a circuit that stays closed. */
function yaml(failing: string, healthy: string): string {
  return `
routing: { strategy: cheap, cooldown: { failures: 1000 } }
upstreams:
  - { id: failing, provider: openai-compatible, base_url: "${failing}/v1", api_key: k, max_concurrency: 1000 }
  - { id: healthy, provider: openai-compatible, base_url: "${healthy}/v1", api_key: k, max_concurrency: 1000 }
models:
  - name: m
    price: { input: 1, output: 1 }
    targets:
      - { upstream: failing, model: x, price: { input: 1, output: 1 } }
      - { upstream: healthy, model: x, price: { input: 2, output: 2 } }
keys:
  - { name: team-a, key_sha256: ${hashKey(CLIENT_KEY)}, models: ["*"] }
`;
}

describe('retry budget and failover', () => {
  const failing = new FakeUpstream();
  const healthy = new FakeUpstream();
  let gw: TestGateway;

  before(async () => {
    failing.on(() => ({ status: 500, body: { error: { message: 'boom', type: 'server_error' } } }));
    healthy.on(() => ({ status: 200, body: completion }));
    await failing.start();
    await healthy.start();
    gw = await startGateway(yaml(failing.url, healthy.url));
  });
  after(async () => {
    await gw?.close();
    await failing.close();
    await healthy.close();
  });

  test('every request whose first account fails is served by the answering one, however many at once', async () => {
    // The first failover finds the healthy account unproven: it draws on min_retries.
    assert.equal((await postChat(gw, { model: 'm', messages: [{ role: 'user', content: 'hi' }] })).status, 200);
    const burst = await Promise.all(Array.from({ length: 40 }, () => postChat(gw, { model: 'm', messages: [{ role: 'user', content: 'hi' }] })));
    const statuses = burst.map((r) => r.status);
    assert.deepEqual(statuses, Array(40).fill(200), burst.find((r) => r.status !== 200)?.text);
    assert.equal(failing.requests.length, 41);
    assert.equal(healthy.requests.length, 41, 'one failover each, no more');
    assert.equal(metricSum(await gw.metricsText(), 'switchyard_retry_budget_exhausted_total'), 0);
  });
});

describe('a retry budget per model', () => {
  test('a broken model spending its retries leaves another model its own: a flaky call there is still retried', async () => {
    const broken = await new FakeUpstream().start();
    const flaky = await new FakeUpstream().start();
    broken.on(() => ({ status: 500, body: { error: { message: 'boom', type: 'server_error' } } }));
    // Every other call fails: a request's retry of the same account succeeds.
    flaky.on((_req, i) => (i % 2 === 0 ? { status: 500, body: { error: { message: 'flaky', type: 'server_error' } } } : { status: 200, body: completion }));
    const gw = await startGateway(`
routing: { max_attempts: 2, backoff_base_ms: 1, backoff_cap_ms: 1, cooldown: { failures: 1000 }, retry_budget: { ratio: 0.1, min_retries: 2, window_ms: 60000 } }
upstreams:
  - { id: broken, provider: openai-compatible, base_url: "${broken.url}/v1", api_key: k }
  - { id: flaky, provider: openai-compatible, base_url: "${flaky.url}/v1", api_key: k }
models:
  - { name: broken-model, price: { input: 1, output: 1 }, targets: [{ upstream: broken, model: x }] }
  - { name: flaky-model, price: { input: 1, output: 1 }, targets: [{ upstream: flaky, model: x }] }
keys:
  - { name: team-a, key_sha256: ${hashKey(CLIENT_KEY)}, models: ["*"] }
`);
    try {
      // The broken model's requests spend its budget (min_retries 2), then stop at once.
      for (let i = 0; i < 6; i++) await postChat(gw, { model: 'broken-model', messages: [{ role: 'user', content: 'hi' }] });
      const stopped = await postChat(gw, { model: 'broken-model', messages: [{ role: 'user', content: 'hi' }] });
      assert.match(stopped.text, /retry_budget_exhausted/, 'the broken model spent its budget');
      for (let i = 0; i < 2; i++) {
        const r = await postChat(gw, { model: 'flaky-model', messages: [{ role: 'user', content: 'hi' }] });
        assert.equal(r.status, 200, r.text);
      }
    } finally {
      await gw.close();
      await broken.close();
      await flaky.close();
    }
  });
});
