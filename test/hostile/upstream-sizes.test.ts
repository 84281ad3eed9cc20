/**
 * An upstream cannot make the gateway hold unbounded memory: one SSE event larger than
 * `routing.max_event_bytes` ends the stream (an error event in the client's API once bytes
 * were sent), a non-streamed answer larger than `routing.max_answer_bytes` is 502
 * `upstream_bad_response` naming the setting, and the next call is served.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { FakeUpstream } from '../helpers/fake-upstream.js';
import { sseEvents } from '../helpers/recordings.js';
import { CLIENT_KEY, closeAll, postChat, startWithUpstream, testConfigYaml, type TestGateway } from '../helpers/gateway.js';

const NO_USAGE = 'openai-chat-stream-text-no-usage-2023.sse';
const SSE_HEADERS = { 'content-type': 'text/event-stream; charset=utf-8' };
const LIMIT = 65_536;

async function rawStream(gw: TestGateway): Promise<{ status: number; events: string[] }> {
  const res = await fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${CLIENT_KEY}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'gpt-test', messages: [{ role: 'user', content: 'hello' }], stream: true }),
  });
  const text = await res.text();
  return { status: res.status, events: text.split(/(?<=\n\n)/).filter((e) => e.trim() !== '') };
}

describe('upstream answers past the configured sizes', () => {
  let upstream: FakeUpstream;
  let gw: TestGateway;
  before(async () => {
    const routing = `  max_attempts: 1\n  max_event_bytes: ${LIMIT}\n  max_answer_bytes: ${LIMIT}`;
    ({ upstream, gw } = await startWithUpstream((url) => testConfigYaml(url, { routing })));
  });
  after(() => closeAll(gw, upstream));

  test('an event just past max_event_bytes after two sent: the stream ends with one error event naming the setting', async () => {
    const sent = sseEvents(NO_USAGE).slice(0, 2);
    const big = `data: {"x":"${'y'.repeat(LIMIT)}"}\n\n`;
    upstream.on(() => ({ status: 200, headers: SSE_HEADERS, steps: [...sent, big, ...sseEvents(NO_USAGE).slice(2)] }));
    const raw = await rawStream(gw);
    assert.equal(raw.status, 200);
    assert.equal(raw.events.length, 3, raw.events.join(''));
    const err = JSON.parse(raw.events[2]!.replace(/^data: /, '')) as { error: { code: string; message: string } };
    assert.equal(err.error.code, 'upstream_bad_response');
    assert.match(err.error.message, /routing\.max_event_bytes/);
  });

  test('an event just under it is relayed whole', async () => {
    const body = 'y'.repeat(LIMIT - 200);
    const chunk = {
      id: 'c1',
      object: 'chat.completion.chunk',
      created: 1,
      model: 'm',
      choices: [{ index: 0, delta: { content: body }, finish_reason: 'stop' }],
    };
    upstream.on(() => ({ status: 200, headers: SSE_HEADERS, steps: [`data: ${JSON.stringify(chunk)}\n\n`, 'data: [DONE]\n\n'] }));
    const raw = await rawStream(gw);
    assert.ok(
      raw.events.some((e) => e.includes(body)),
      'the big delta arrived',
    );
    assert.ok(raw.events.at(-1)!.includes('[DONE]'));
  });

  test('a JSON answer past max_answer_bytes: 502 upstream_bad_response naming the setting; the next call is served', async () => {
    const huge = JSON.stringify({
      id: 'x',
      object: 'chat.completion',
      created: 1,
      model: 'm',
      choices: [{ index: 0, message: { role: 'assistant', content: 'z'.repeat(LIMIT) }, finish_reason: 'stop' }],
    });
    upstream.on(() => ({ status: 200, headers: { 'content-type': 'application/json' }, steps: [huge] }));
    const r = await postChat(gw, { model: 'gpt-test', messages: [{ role: 'user', content: 'hi' }] });
    assert.equal(r.status, 502, r.text);
    const body = JSON.parse(r.text) as { error: { code: string; message: string } };
    assert.equal(body.error.code, 'upstream_bad_response');
    assert.match(body.error.message, /routing\.max_answer_bytes/);

    const small = JSON.stringify({
      id: 'x',
      object: 'chat.completion',
      created: 1,
      model: 'm',
      choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }],
    });
    upstream.on(() => ({ status: 200, headers: { 'content-type': 'application/json' }, steps: [small] }));
    const ok = await postChat(gw, { model: 'gpt-test', messages: [{ role: 'user', content: 'hi' }] });
    assert.equal(ok.status, 200, ok.text);
  });
});
