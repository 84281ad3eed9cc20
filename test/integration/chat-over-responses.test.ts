/**
 * A chat-completions client served by a Responses-only account (`options: { chat: false }`),
 * through the official `openai` SDK: the recorded Responses function call comes back as chat
 * `tool_calls` (streamed and JSON), a tool result goes back as `function_call_output`, and a
 * chat field the Responses API has no room for is refused 400 naming it.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { BadRequestError } from 'openai';
import { hashKey } from '../../src/auth/keys.js';
import { FakeUpstream } from '../helpers/fake-upstream.js';
import { CLIENT_KEY, startGateway, type TestGateway } from '../helpers/gateway.js';
import { sseEvents } from '../helpers/recordings.js';

type Obj = Record<string, unknown>;

describe('a chat-completions client served by a Responses-only account (the openai SDK)', () => {
  const upstream = new FakeUpstream();
  let gw: TestGateway;
  const RECORDING = 'openai-responses-stream-gpt5-reasoning-function-call.sse';
  const completed = (): Obj => {
    for (const e of sseEvents(RECORDING)) {
      const data = /^data: (.*)$/m.exec(e)?.[1];
      const p = data ? (JSON.parse(data) as Obj) : null;
      if (p?.['type'] === 'response.completed') return p['response'] as Obj;
    }
    throw new Error('no response.completed');
  };

  before(async () => {
    await upstream.start();
    gw = await startGateway(`
routing: { max_attempts: 1 }
upstreams:
  - { id: codex-acct, provider: openai-compatible, base_url: "${upstream.url}/v1", api_key: "\${TEST_UPSTREAM_KEY}", options: { chat: false } }
models:
  - name: codex-only
    reasoning: true
    price: { input: 1.25, output: 10 }
    targets: [{ upstream: codex-acct, model: gpt-5.5-codex }]
keys:
  - { name: team-a, key_sha256: ${hashKey(CLIENT_KEY)} }
`);
  });
  after(async () => {
    await gw?.close();
    await upstream.close();
  });

  test('streamed: the recorded function call comes back as chat tool_calls with the recorded usage; the account got a Responses request', async () => {
    upstream.requests.length = 0;
    upstream.on(() => ({ status: 200, headers: { 'content-type': 'text/event-stream' }, steps: sseEvents(RECORDING) }));
    const tools = [{ type: 'function' as const, function: { name: 'final_result', parameters: { type: 'object', properties: {} } } }];
    const final = await gw
      .client()
      .chat.completions.stream({
        model: 'codex-only',
        messages: [
          { role: 'system', content: 'Be exact.' },
          { role: 'user', content: 'compute' },
        ],
        tools,
        reasoning_effort: 'low',
        stream_options: { include_usage: true },
      })
      .finalChatCompletion();
    const want = completed();
    const call = (want['output'] as Obj[]).find((i) => i['type'] === 'function_call')!;
    const choice = final.choices[0]!;
    assert.equal(choice.finish_reason, 'tool_calls');
    const got = choice.message.tool_calls?.[0];
    assert.ok(got && got.type === 'function');
    assert.deepEqual([got.id, got.function.name, got.function.arguments], [call['call_id'], call['name'], call['arguments']]);
    assert.equal(final.usage?.completion_tokens, (want['usage'] as Obj)['output_tokens']);
    const sent = upstream.requests[0]!;
    assert.equal(sent.url, '/v1/responses');
    assert.deepEqual(sent.json?.['input'], [
      { role: 'system', content: 'Be exact.' },
      { role: 'user', content: 'compute' },
    ]);
    assert.deepEqual(sent.json?.['reasoning'], { effort: 'low' });
    assert.deepEqual((sent.json?.['tools'] as Obj[])[0], {
      type: 'function',
      name: 'final_result',
      parameters: { type: 'object', properties: {} },
      strict: false,
    });
    assert.equal(sent.json?.['store'], false);
  });

  test('JSON: the response object as a chat completion; a tool result goes back as function_call_output', async () => {
    upstream.requests.length = 0;
    upstream.on(() => ({ status: 200, body: completed() }));
    const c = await gw.client().chat.completions.create({
      model: 'codex-only',
      messages: [
        { role: 'user', content: 'compute' },
        { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'final_result', arguments: '{"result":1}' } }] },
        { role: 'tool', tool_call_id: 'call_1', content: 'ok' },
      ],
      max_completion_tokens: 200,
    });
    assert.equal(c.object, 'chat.completion');
    assert.equal(c.choices[0]!.finish_reason, 'tool_calls');
    const input = upstream.requests[0]!.json?.['input'] as Obj[];
    assert.deepEqual(input.slice(1), [
      { type: 'function_call', call_id: 'call_1', name: 'final_result', arguments: '{"result":1}' },
      { type: 'function_call_output', call_id: 'call_1', output: 'ok' },
    ]);
    assert.equal(upstream.requests[0]!.json?.['max_output_tokens'], 200);
  });

  test('a field the Responses API has no room for is refused 400 naming it, the account untouched', async () => {
    upstream.requests.length = 0;
    const err = await gw
      .client()
      .chat.completions.create({ model: 'codex-only', messages: [{ role: 'user', content: 'hi' }], stop: ['END'] })
      .then(
        () => null,
        (e: unknown) => e,
      );
    assert.ok(err instanceof BadRequestError, String(err));
    assert.equal(err.param, 'stop');
    assert.equal(upstream.requests.length, 0);
  });
});
