/**
 * Quota versus rate (issue 32): an account that answers a burst of deep calls with "out of
 * quota" (OpenAI 429 insufficient_quota, Anthropic's 400 spend limit) or "overloaded" (529)
 * says nothing about how many calls it takes at once, so its learned capacity
 * (`switchyard_capacity_limit`) stays where it was; the same burst answered with a 429 rate
 * limit does cut it (the control, so the test can fail). An account out of quota is out for
 * every request, failed over to the other account, until the reset its provider named, and
 * probed after the usual delay when it named none.
 */
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { hashKey } from '../../src/auth/keys.js';
import { answer } from '../helpers/accounts.js';
import { FakeUpstream, type ScriptedReply } from '../helpers/fake-upstream.js';
import { CLIENT_KEY, postChat, startGateway, type TestGateway } from '../helpers/gateway.js';
import { metricValue } from '../helpers/metrics-text.js';

const err = (status: number, type: string, code: string | null, message: string): ScriptedReply => ({
  status,
  body: { error: { message, type, param: null, code } },
});
const inTwoDays = new Date(Date.now() + 2 * 86_400_000).toISOString().slice(0, 10);
const REPLIES: Record<string, ScriptedReply> = {
  quota: err(429, 'insufficient_quota', 'insufficient_quota', 'You exceeded your current quota, please check your plan and billing details.'),
  spend: err(400, 'invalid_request_error', null, `You have reached your specified API usage limits. You will regain access on ${inTwoDays} at 00:00 UTC.`),
  overloaded: err(529, 'overloaded_error', null, 'Overloaded'),
  rate: err(429, 'requests', 'rate_limit_exceeded', 'Rate limit reached for requests'),
};

function yaml(q: string, spare: string): string {
  return `
server: { log_level: warn }
routing:
  max_attempts: 3
  cooldown: { failures: 3, base_ms: 5000, max_ms: 60000, credential_ms: 4000 }
upstreams:
  - { id: q, provider: openai-compatible, base_url: "${q}/v1", api_key: "\${TEST_UPSTREAM_KEY}" }
  - { id: spare, provider: openai-compatible, base_url: "${spare}/v1", api_key: "\${TEST_UPSTREAM_KEY}" }
models:
  - name: deep
    reasoning: true
    price: { input: 1, output: 1 }
    targets: [{ upstream: q, model: deep-q }, { upstream: spare, model: deep-s }]
  - name: q-only
    price: { input: 1, output: 1 }
    targets: [{ upstream: q, model: plain-q }]
keys:
  - { name: k, key_sha256: ${hashKey(CLIENT_KEY)} }
`;
}

const deep = (gw: TestGateway) => postChat(gw, { model: 'deep', stream: true, reasoning_effort: 'high', messages: [{ role: 'user', content: 'think' }] });

describe('quota and overload are not concurrency: the learned capacity stays, the account is out until its reset', () => {
  let q: FakeUpstream;
  let spare: FakeUpstream;
  let gw: TestGateway;
  /** What q answers: one of REPLIES, after 150 ms, so a burst has several calls in flight there. */
  let mode = 'quota';

  beforeEach(async () => {
    q = await new FakeUpstream()
      .on(async () => {
        await sleep(150);
        return REPLIES[mode]!;
      })
      .start();
    spare = await new FakeUpstream().on((req) => answer(req, 'from spare', 150)).start();
    gw = await startGateway(yaml(q.url, spare.url));
  });
  afterEach(async () => {
    await gw.close();
    await q.close();
    await spare.close();
  });

  const limitOfQ = async () => metricValue(await gw.metricsText(), 'switchyard_capacity_limit', { upstream: 'q' });

  /** Sends `n` deep calls at once; returns their statuses. */
  async function burst(n: number): Promise<number[]> {
    return (await Promise.all(Array.from({ length: n }, () => deep(gw)))).map((r) => r.status);
  }

  for (const m of ['quota', 'spend', 'overloaded']) {
    test(`${m}: a burst answered with it leaves q's learned limit as it was, and every call is served by the other account`, async () => {
      mode = m;
      const before = await limitOfQ();
      const statuses = await burst(6);
      assert.deepEqual(statuses, Array(6).fill(200));
      assert.ok(q.requests.length >= 2, `q saw ${q.requests.length} calls of the burst (several in flight at once)`);
      assert.equal(await limitOfQ(), before, `q's limit was ${before}`);
    });
  }

  test('control: the same burst answered with a 429 rate limit cuts the learned limit', async () => {
    mode = 'rate';
    const before = await limitOfQ();
    await burst(6);
    const after = await limitOfQ();
    assert.ok(before !== undefined && after !== undefined && after < before, `q's limit ${before} -> ${after}`);
  });

  test('out of quota with no reset named: no call reaches q until the probe is due (credential_ms / 4 = 1 s), then one does', async () => {
    mode = 'quota';
    await burst(3);
    const seen = q.requests.length;
    assert.deepEqual(await burst(2), [200, 200]);
    assert.equal(q.requests.length, seen, 'out of quota: failed over at once');
    await sleep(1_000);
    await burst(2);
    assert.equal(q.requests.length, seen + 1, 'the probe went, exactly one');
  });

  test("spend limit with a reset date: q stays out past the usual probe delay (the provider's reset is two days away)", async () => {
    mode = 'spend';
    await burst(3);
    const seen = q.requests.length;
    await sleep(1_300);
    assert.deepEqual(await burst(3), [200, 200, 200]);
    assert.equal(q.requests.length, seen, 'no probe before the reset');
    // A model served by q alone: a 503 that names when the gateway tries the account again.
    const only = await postChat(gw, { model: 'q-only', messages: [{ role: 'user', content: 'hi' }] });
    assert.equal(only.status, 503);
    const error = (JSON.parse(only.text) as { error: { code: string; message: string } }).error;
    assert.equal(error.code, 'no_upstream_available');
    assert.ok(error.message.includes(`${inTwoDays}T00:00:00.000Z`), error.message);
    assert.equal(q.requests.length, seen, 'still no call to q');
  });
});
