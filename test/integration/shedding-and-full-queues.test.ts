/**
 * Shedding and full queues, end to end: the real gateway on port 0 in front of two scripted
 * fake upstreams. A reasoning model (`deep`, on upstream a: one call at a time, a burst
 * window of one call, no queue room) has a non-reasoning fallback (`lite`, on upstream b).
 * A call shed to the fallback is downgraded (no `reasoning_effort` sent to a model that
 * does not reason), and a call that finds the primary at its concurrency cap with a full
 * queue is served by the fallback model.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { hashKey } from '../../src/auth/keys.js';
import { FakeUpstream, type ScriptedReply } from '../helpers/fake-upstream.js';
import { CLIENT_KEY, closeAll, postChat, startGateway, type RawReply, type TestGateway } from '../helpers/gateway.js';

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

/**
 * Upstream a (one call at a time, a burst window of one call) serves the reasoning model
 * `deep`, which sheds (downgrade) and falls back to `lite` on upstream b; no queue room.
 */
function yaml(a: string, b: string): string {
  return `
server:
  log_level: info
routing:
  strategy: cheap
  max_attempts: 4
  backoff_base_ms: 1
  backoff_cap_ms: 1
  retry_budget: { min_retries: 1000 }
  cooldown: { failures: 1000 }
  queue: { max: 0, timeout_ms: 100 }
upstreams:
  - id: a
    provider: openai-compatible
    base_url: ${a}/v1
    api_key: \${TEST_UPSTREAM_KEY}
    max_concurrency: 1
    capacity: { start: 1, ceiling: 1 }
  - id: b
    provider: openai-compatible
    base_url: ${b}/v1
    api_key: \${TEST_UPSTREAM_KEY}
models:
  - name: deep
    reasoning: true
    price: { input: 1, output: 1 }
    shed: { policy: downgrade, fallback: lite }
    fallbacks: [lite]
    targets:
      - { upstream: a, model: deep-a }
  - name: lite
    price: { input: 1, output: 1 }
    targets:
      - { upstream: b, model: lite-b }
keys:
  - name: team-a
    key_sha256: ${hashKey(CLIENT_KEY)}
    models: ["*"]
`;
}

function post(gw: TestGateway, body: Record<string, unknown>): Promise<RawReply> {
  return postChat(gw, { messages: [{ role: 'user', content: 'hi' }], ...body });
}

describe('shedding and full queues', () => {
  let a: FakeUpstream;
  let b: FakeUpstream;
  let gw: TestGateway;
  before(async () => {
    a = await new FakeUpstream().start();
    b = await new FakeUpstream().start();
    gw = await startGateway(yaml(a.url, b.url));
  });
  after(() => closeAll(gw, a, b));

  test('a deep call downgraded to a non-reasoning model does not carry reasoning_effort', async () => {
    a.on(() => ({ ...okJson('deep answer'), delayMs: 400 }));
    b.on(() => okJson('lite answer'));
    const slow = post(gw, { model: 'deep', reasoning_effort: 'high' });
    await sleep(100);
    const shed = await post(gw, { model: 'deep', reasoning_effort: 'high' });
    assert.equal(shed.status, 200);
    assert.equal(shed.headers.get('x-switchyard-shed'), 'deep->lite');
    const sent = b.requests.at(-1)!.json!;
    assert.equal(sent['model'], 'lite-b');
    assert.equal('reasoning_effort' in sent, false, 'stripped for the non-reasoning fallback');
    assert.equal(a.requests.at(-1)!.json!['reasoning_effort'], 'high', 'kept for the reasoning model');
    assert.equal((await slow).status, 200);
  });

  test('when the primary is at its concurrency cap with no queue room, the fallback model serves', async () => {
    a.on(() => ({ ...okJson('slow a'), delayMs: 400 }));
    b.on(() => okJson('lite answer'));
    const slow = post(gw, { model: 'deep', reasoning_effort: 'low' });
    await sleep(100);
    const r = await post(gw, { model: 'deep', reasoning_effort: 'low' });
    assert.equal(r.status, 200);
    assert.equal(r.headers.get('x-switchyard-fallback'), 'deep->lite');
    assert.match(r.text, /lite answer/);
    assert.equal((await slow).status, 200);
  });
});
