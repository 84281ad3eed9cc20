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

const completion = { id: 'c', object: 'chat.completion', created: 1, model: 'm', choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }], usage: { prompt_tokens: 5, completion_tokens: 2, total_tokens: 7 } };

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
