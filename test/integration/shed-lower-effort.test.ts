/**
 * The shed ladder's lower-effort rung (opt-in `shed.lower_effort`), end to end: when every
 * account of a reasoning model is hot, a deep call is sent to the same model at the lower
 * effort (no longer deep, so it needs no deep place) before any fallback model; it is marked
 * `x-switchyard-shed: effort:<from>-><to>` and counted as `policy="lower_effort"`. A lower
 * effort that would still be deep is a config error.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { hashKey } from '../../src/auth/keys.js';
import { ConfigError } from '../../src/config/load.js';
import { parseTestConfig } from '../helpers/config.js';
import { deferred } from '../helpers/accounts.js';
import { FakeUpstream, type ScriptedReply } from '../helpers/fake-upstream.js';
import { CLIENT_KEY, closeAll, postChat, startGateway, UPSTREAM_KEY, waitFor, type TestGateway } from '../helpers/gateway.js';
import { metricSum } from '../helpers/metrics-text.js';

const okJson = (text: string): ScriptedReply => ({
  status: 200,
  body: {
    id: 'c',
    object: 'chat.completion',
    created: 1,
    model: 'm',
    choices: [{ index: 0, message: { role: 'assistant', content: text }, finish_reason: 'stop' }],
    usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
  },
});

function yaml(a: string, b: string, lower = 'low'): string {
  return `
server: { log_level: warn }
upstreams:
  - { id: a, provider: openai-compatible, base_url: "${a}/v1", api_key: "\${TEST_UPSTREAM_KEY}", capacity: { start: 1, ceiling: 1 } }
  - { id: b, provider: openai-compatible, base_url: "${b}/v1", api_key: "\${TEST_UPSTREAM_KEY}" }
models:
  - name: deep
    reasoning: true
    deep_effort: high
    price: { input: 1, output: 1 }
    shed: { lower_effort: ${lower}, fallback: lite }
    targets: [{ upstream: a, model: deep-a }]
  - name: lite
    price: { input: 1, output: 1 }
    targets: [{ upstream: b, model: lite-b }]
keys:
  - { name: team-a, key_sha256: ${hashKey(CLIENT_KEY)} }
`;
}

describe('the lower-effort rung', () => {
  let a: FakeUpstream;
  let b: FakeUpstream;
  let gw: TestGateway;
  before(async () => {
    a = await new FakeUpstream().start();
    b = await new FakeUpstream().start();
    gw = await startGateway(yaml(a.url, b.url));
  });
  after(() => closeAll(gw, a, b));

  test('a hot deep call goes to the same model at the lower effort, before the non-reasoning fallback', async () => {
    const gate = deferred();
    a.on(async (req) => {
      if (req.json?.['reasoning_effort'] === 'high') await gate.promise;
      return okJson(`from a at ${String(req.json?.['reasoning_effort'])}`);
    });
    b.on(() => okJson('from lite'));
    const m0 = await gw.metricsText();
    const held = postChat(gw, { model: 'deep', reasoning_effort: 'high', messages: [{ role: 'user', content: 'think hard' }] });
    await waitFor(() => a.requests.length === 1, 3_000, 'the first deep call to reach a');

    const r = await postChat(gw, { model: 'deep', reasoning_effort: 'high', messages: [{ role: 'user', content: 'think hard too' }] });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.headers.get('x-switchyard-shed'), 'effort:high->low');
    assert.equal(r.headers.get('x-switchyard-upstream'), 'a', 'the same model, not the fallback');
    assert.match(r.text, /from a at low/);
    assert.equal(a.requests.at(-1)!.json!['reasoning_effort'], 'low', 'the lowered effort was sent');
    assert.equal(b.requests.length, 0, 'the non-reasoning fallback was not needed');
    const m1 = await gw.metricsText();
    assert.equal(
      metricSum(m1, 'switchyard_sheds_total', { model: 'deep', policy: 'lower_effort' }) -
        metricSum(m0, 'switchyard_sheds_total', { model: 'deep', policy: 'lower_effort' }),
      1,
    );

    gate.resolve();
    const h = await held;
    assert.equal(h.status, 200);
    assert.equal(h.headers.get('x-switchyard-shed'), null, 'the call that found a place was not shed');
  });

  test('a call already at or below the lower effort is not lowered: it takes the next rung', async () => {
    const gate = deferred();
    a.on(async (req) => {
      if (req.json?.['reasoning_effort'] === 'high') await gate.promise;
      return okJson('from a');
    });
    b.on(() => okJson('from lite'));
    const held = postChat(gw, { model: 'deep', reasoning_effort: 'high', messages: [{ role: 'user', content: 'x' }] });
    const n = a.requests.length;
    await waitFor(() => a.requests.length === n + 1, 3_000, 'the held call');
    // xhigh is deep too; lowered from xhigh to low.
    const r = await postChat(gw, { model: 'deep', reasoning_effort: 'xhigh', messages: [{ role: 'user', content: 'y' }] });
    assert.equal(r.headers.get('x-switchyard-shed'), 'effort:xhigh->low');
    gate.resolve();
    await held;
  });

  test('a lower_effort at or above deep_effort is refused at load, naming the path', () => {
    assert.throws(
      () => parseTestConfig(yaml('http://127.0.0.1:9', 'http://127.0.0.1:9', 'high'), { TEST_UPSTREAM_KEY: UPSTREAM_KEY }),
      (err: unknown) => {
        assert.ok(err instanceof ConfigError);
        assert.match(String(err.message), /\/models\/0\/shed\/lower_effort: "high" is not below the model's deep_effort "high"/);
        return true;
      },
    );
  });
});
