/**
 * Providers' rate-limit headers as a routing signal, end to end: an account whose answer
 * says its request window is spent (`x-ratelimit-remaining-requests: 0`) is passed over
 * until the window's reset (a cooldown in the shared store), without a 429 ever being
 * collected; an account with room left keeps its traffic.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { hashKey } from '../../src/auth/keys.js';
import { FakeUpstream, type ReceivedRequest, type ScriptedReply } from '../helpers/fake-upstream.js';
import { CLIENT_KEY, postChat, startGateway, type TestGateway } from '../helpers/gateway.js';
import { metricSum } from '../helpers/metrics-text.js';

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

function reply(req: ReceivedRequest, from: string, headers: Record<string, string>): ScriptedReply {
  void req;
  return {
    status: 200,
    headers,
    body: {
      id: 'chatcmpl-rw',
      object: 'chat.completion',
      created: 1700000000,
      model: 'm-up',
      choices: [{ index: 0, message: { role: 'assistant', content: `from ${from}`, refusal: null }, finish_reason: 'stop' }],
      usage: { prompt_tokens: 5, completion_tokens: 2, total_tokens: 7 },
    },
  };
}

describe('an account whose rate-limit headers say its window is spent is passed over until the reset', () => {
  const a = new FakeUpstream();
  const b = new FakeUpstream();
  let gw: TestGateway;
  /** What account a says of its request window on its next answer. */
  let aRemaining = '0';

  before(async () => {
    await a.start();
    await b.start();
    a.on((req) => reply(req, 'a', { 'x-ratelimit-limit-requests': '60', 'x-ratelimit-remaining-requests': aRemaining, 'x-ratelimit-reset-requests': '1.2s' }));
    b.on((req) => reply(req, 'b', { 'x-ratelimit-limit-requests': '600', 'x-ratelimit-remaining-requests': '599', 'x-ratelimit-reset-requests': '100ms' }));
    gw = await startGateway(`
server: { log_level: warn }
routing: { strategy: cheap }
upstreams:
  - { id: a, provider: openai-compatible, base_url: "${a.url}/v1", api_key: "\${TEST_UPSTREAM_KEY}" }
  - { id: b, provider: openai-compatible, base_url: "${b.url}/v1", api_key: "\${TEST_UPSTREAM_KEY}" }
models:
  - name: m
    price: { input: 1, output: 1 }
    targets:
      - { upstream: a, model: m-up, price: { input: 1, output: 1 } }
      - { upstream: b, model: m-up, price: { input: 2, output: 2 } }
keys:
  - { name: team-a, key_sha256: ${hashKey(CLIENT_KEY)} }
`);
  });
  after(async () => {
    await gw.close();
    await a.close();
    await b.close();
  });

  const served = async () => {
    const r = await postChat(gw, { model: 'm', messages: [{ role: 'user', content: 'hi' }] });
    assert.equal(r.status, 200, r.text);
    return r.headers.get('x-switchyard-upstream');
  };

  test('the cheap account answers with 0 requests left: the next calls go to the other until 1.2 s passed, then back', async () => {
    assert.equal(await served(), 'a', 'the cheapest account first');
    const t0 = Date.now();
    const during: (string | null)[] = [];
    while (Date.now() - t0 < 900) {
      during.push(await served());
      await sleep(100);
    }
    assert.ok(during.length >= 3);
    assert.deepEqual([...new Set(during)], ['b'], `while a's window is spent: ${during.join(',')}`);
    aRemaining = '40';
    await sleep(Math.max(0, 1_400 - (Date.now() - t0)));
    assert.equal(await served(), 'a', 'back on the cheap account once its window refilled');
    assert.equal(await served(), 'a', 'and it stays there while it has room');
    const m = await gw.metricsText();
    assert.equal(metricSum(m, 'switchyard_rate_window_spent_total', { upstream: 'a' }), 1);
    assert.equal(metricSum(m, 'switchyard_rate_window_spent_total', { upstream: 'b' }), 0);
    assert.equal(a.requests.length, 3, 'a saw no call while its window was spent');
  });
});
