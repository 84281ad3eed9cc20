/**
 * The bridges to a chat-completions account, driven by the official SDKs: a Responses client
 * (`openai` `responses.stream` / `responses.create`) and a Messages client
 * (`@anthropic-ai/sdk` `messages.stream` / `messages.create`) served by a fake upstream that
 * speaks only chat completions and replays recorded chat answers. A tool loop runs two turns
 * each way: the tool call the recording holds reaches the client as a Responses
 * `function_call` item / an Anthropic `tool_use` block, and the client's tool output goes
 * back to the chat upstream as a `tool` message tied to the call.
 */
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import { RateLimitError } from 'openai';
import { hashKey } from '../../src/auth/keys.js';
import { FakeUpstream, type ReceivedRequest, type ScriptedReply } from '../helpers/fake-upstream.js';
import { CLIENT_KEY, startGateway, type TestGateway } from '../helpers/gateway.js';
import { fixture, fixtureJson, replay, sseEvents } from '../helpers/recordings.js';

type Obj = Record<string, unknown>;

const TOOL_CALL = 'openai-chat-stream-tool-call-argument-deltas.sse';
const REASONER = 'deepseek-reasoner-stream.sse';

/** What a recorded chat stream holds, read here (not by src/). */
function recorded(name: string): { content: string; reasoning: string; calls: { id: string; name: string; args: string }[]; usage: Obj | null } {
  let content = '';
  let reasoning = '';
  let usage: Obj | null = null;
  const calls: { id: string; name: string; args: string }[] = [];
  for (const e of sseEvents(name)) {
    const data = /^data: (.*)$/m.exec(e)?.[1];
    if (!data || data === '[DONE]') continue;
    const c = JSON.parse(data) as Obj;
    if (c['usage']) usage = c['usage'] as Obj;
    for (const ch of (c['choices'] as Obj[] | undefined) ?? []) {
      const d = (ch['delta'] ?? {}) as Obj;
      if (typeof d['content'] === 'string') content += d['content'];
      if (typeof d['reasoning_content'] === 'string') reasoning += d['reasoning_content'];
      for (const tc of (d['tool_calls'] as Obj[] | undefined) ?? []) {
        const fn = tc['function'] as Obj;
        const i = tc['index'] as number;
        calls[i] ??= { id: String(tc['id']), name: String(fn['name']), args: '' };
        calls[i].args += String(fn['arguments'] ?? '');
      }
    }
  }
  return { content, reasoning, calls, usage };
}

function yaml(url: string): string {
  return `
routing: { max_attempts: 1 }
upstreams:
  - { id: chat-acct, provider: openai-compatible, base_url: "${url}/v1", api_key: "\${TEST_UPSTREAM_KEY}" }
models:
  - name: deep-chat
    reasoning: true
    price: { input: 0.55, cached_input: 0.14, output: 2.19 }
    targets: [{ upstream: chat-acct, model: deepseek-reasoner }]
keys:
  - { name: team-a, key_sha256: ${hashKey(CLIENT_KEY)} }
`;
}

const hasToolResult = (req: ReceivedRequest): boolean => ((req.json?.['messages'] as Obj[] | undefined) ?? []).some((m) => m['role'] === 'tool');

describe('bridges to a chat-completions account, through the official SDKs', () => {
  const upstream = new FakeUpstream();
  let gw: TestGateway;
  let anthropic: Anthropic;

  before(async () => {
    await upstream.start();
    gw = await startGateway(yaml(upstream.url));
    anthropic = new Anthropic({ apiKey: CLIENT_KEY, baseURL: gw.url, maxRetries: 0 });
  });
  after(async () => {
    await gw?.close();
    await upstream.close();
  });
  beforeEach(() => {
    upstream.requests.length = 0;
    // A turn with a tool result gets the reasoner's answer; any other the recorded tool call.
    upstream.on((req) => (hasToolResult(req) ? replay(REASONER)(req) : replay(TOOL_CALL)(req)));
  });

  test('Responses client, streamed tool loop: function_call item, then the tool output as a tool message, reasoning and usage back', async () => {
    const client = gw.client();
    const call = recorded(TOOL_CALL).calls[0]!;
    const tools = [{ type: 'function' as const, name: call.name, description: 'report', parameters: { type: 'object', properties: {} }, strict: false }];
    const s1 = client.responses.stream({
      model: 'deep-chat',
      input: 'What is the capital of Mexico?',
      tools,
      reasoning: { effort: 'high' },
      store: false,
      include: ['reasoning.encrypted_content'],
      prompt_cache_key: 'sess-1',
    });
    const types: string[] = [];
    s1.on('event', (e) => types.push(e.type));
    const r1 = await s1.finalResponse();
    assert.equal(r1.status, 'completed');
    const fc = r1.output.find((i) => i.type === 'function_call');
    assert.ok(fc && fc.type === 'function_call', JSON.stringify(r1.output));
    assert.deepEqual([fc.name, fc.call_id, JSON.parse(fc.arguments) as unknown], [call.name, call.id, JSON.parse(call.args) as unknown]);
    assert.ok(types.includes('response.function_call_arguments.delta') && types.at(-1) === 'response.completed', types.join(','));
    const sent1 = upstream.requests[0]!;
    assert.equal(sent1.url, '/v1/chat/completions');
    assert.deepEqual(sent1.json?.['messages'], [{ role: 'user', content: 'What is the capital of Mexico?' }]);
    assert.equal(sent1.json?.['reasoning_effort'], 'high');
    assert.deepEqual(sent1.json?.['stream_options'], { include_usage: true });
    assert.equal((sent1.json?.['tools'] as Obj[])[0]!['type'], 'function');
    for (const k of ['store', 'include', 'prompt_cache_key', 'input', 'reasoning'])
      assert.equal(sent1.json?.[k], undefined, `${k} is not sent to a chat server`);

    const s2 = client.responses.stream({
      model: 'deep-chat',
      input: [
        { role: 'user', content: 'What is the capital of Mexico?' },
        ...(r1.output as unknown as Obj[]),
        { type: 'function_call_output', call_id: fc.call_id, output: 'reported' },
      ] as never,
      tools,
      reasoning: { effort: 'high' },
    });
    const r2 = await s2.finalResponse();
    const want = recorded(REASONER);
    assert.equal(r2.output_text, want.content);
    const reasoning = r2.output.find((i) => i.type === 'reasoning') as unknown as Obj | undefined;
    assert.equal(((reasoning?.['content'] as Obj[] | undefined)?.[0]?.['text'] as string | undefined) ?? '', want.reasoning);
    const usage = want.usage!;
    assert.equal(r2.usage?.input_tokens, usage['prompt_tokens']);
    assert.equal(r2.usage?.output_tokens, usage['completion_tokens']);
    assert.equal(r2.usage?.output_tokens_details.reasoning_tokens, (usage['completion_tokens_details'] as Obj)['reasoning_tokens']);
    const messages = upstream.requests[1]!.json?.['messages'] as Obj[];
    assert.deepEqual(
      messages.map((m) => m['role']),
      ['user', 'assistant', 'tool'],
    );
    assert.deepEqual((messages[1]!['tool_calls'] as Obj[])[0], { id: call.id, type: 'function', function: { name: call.name, arguments: fc.arguments } });
    assert.deepEqual(messages[2], { role: 'tool', tool_call_id: call.id, content: 'reported' });
  });

  test('Responses client, JSON: instructions as a system message, max_output_tokens as the output cap, the answer as a response', async () => {
    upstream.on(() => ({ status: 200, body: fixtureJson('deepseek-reasoner.json') }));
    const r = await gw
      .client()
      .responses.create({ model: 'deep-chat', instructions: 'Be brief.', input: 'How do I cross the street?', max_output_tokens: 500 });
    const rec = fixtureJson('deepseek-reasoner.json');
    const message = (rec['choices'] as Obj[])[0]!['message'] as Obj;
    assert.equal(r.object, 'response');
    assert.equal(r.output_text, message['content']);
    assert.equal(r.usage?.input_tokens, (rec['usage'] as Obj)['prompt_tokens']);
    const sent = upstream.requests[0]!.json!;
    assert.deepEqual(sent['messages'], [
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'How do I cross the street?' },
    ]);
    assert.equal(sent['max_tokens'], 500);
    assert.equal(sent['stream'], undefined);
  });

  test("Responses client: a custom tool (Codex's apply_patch) is offered as a function with one string input and comes back as a custom_tool_call", async () => {
    const patch = '*** Begin Patch\n*** Add File: a.txt\n+hi\n*** End Patch';
    const chunk = (delta: Obj, finish: string | null = null) =>
      `data: ${JSON.stringify({ id: 'chatcmpl-1', object: 'chat.completion.chunk', created: 1, model: 'deepseek-reasoner', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
    upstream.on((): ScriptedReply => ({
      status: 200,
      headers: { 'content-type': 'text/event-stream' },
      steps: [
        chunk({
          role: 'assistant',
          content: null,
          tool_calls: [{ index: 0, id: 'call_patch1', type: 'function', function: { name: 'apply_patch', arguments: '' } }],
        }),
        chunk({ tool_calls: [{ index: 0, function: { arguments: JSON.stringify({ input: patch }) } }] }),
        chunk({}, 'tool_calls'),
        'data: [DONE]\n\n',
      ],
    }));
    const r = await gw
      .client()
      .responses.stream({
        model: 'deep-chat',
        input: 'add a file',
        parallel_tool_calls: false,
        tools: [
          { type: 'custom', name: 'apply_patch', description: 'Apply a patch', format: { type: 'grammar', syntax: 'lark', definition: 'start: /.+/' } },
        ] as never,
      })
      .finalResponse();
    const item = r.output[0] as unknown as Obj;
    assert.deepEqual([item['type'], item['name'], item['call_id'], item['input']], ['custom_tool_call', 'apply_patch', 'call_patch1', patch]);
    const tool = (upstream.requests[0]!.json?.['tools'] as Obj[])[0]!;
    assert.equal((tool['function'] as Obj)['name'], 'apply_patch');
    assert.deepEqual(((tool['function'] as Obj)['parameters'] as Obj)['required'], ['input']);
    assert.equal(upstream.requests[0]!.json?.['parallel_tool_calls'], false);
  });

  test('Responses client: an upstream 429 reaches the SDK as RateLimitError, in OpenAI error shape', async () => {
    upstream.on(() => ({ status: 429, headers: { 'retry-after': '1' }, body: fixtureJson('openai-error-429-rate-limit-exceeded.json') }));
    const err = await gw
      .client()
      .responses.create({ model: 'deep-chat', input: 'hi' })
      .then(
        () => null,
        (e: unknown) => e,
      );
    assert.ok(err instanceof RateLimitError, String(err));
  });

  test('Messages client, streamed tool loop with thinking: tool_use block, the tool_result as a tool message, thinking and text back', async () => {
    const call = recorded(TOOL_CALL).calls[0]!;
    const tools = [{ name: call.name, description: 'report', input_schema: { type: 'object' as const, properties: {} } }];
    const question = { role: 'user' as const, content: 'What is the capital of Mexico?' };
    const m1 = await anthropic.messages
      .stream({ model: 'deep-chat', max_tokens: 20_000, thinking: { type: 'enabled', budget_tokens: 16_384 }, tools, messages: [question] })
      .finalMessage();
    assert.equal(m1.stop_reason, 'tool_use');
    const use = m1.content.find((b) => b.type === 'tool_use');
    assert.ok(use && use.type === 'tool_use');
    assert.deepEqual([use.id, use.name, use.input], [call.id, call.name, JSON.parse(call.args) as unknown]);
    const sent1 = upstream.requests[0]!.json!;
    assert.equal(sent1['reasoning_effort'], 'high', 'a 16k thinking budget reads as high effort');
    assert.equal(sent1['max_tokens'], 20_000);
    assert.deepEqual((sent1['tools'] as Obj[])[0], {
      type: 'function',
      function: { name: call.name, description: 'report', parameters: { type: 'object', properties: {} } },
    });

    const m2 = await anthropic.messages
      .stream({
        model: 'deep-chat',
        max_tokens: 20_000,
        thinking: { type: 'enabled', budget_tokens: 16_384 },
        tools,
        messages: [
          question,
          { role: 'assistant', content: m1.content },
          { role: 'user', content: [{ type: 'tool_result', tool_use_id: use.id, content: 'reported' }] },
        ],
      })
      .finalMessage();
    const want = recorded(REASONER);
    assert.equal(m2.stop_reason, 'end_turn');
    assert.deepEqual(
      m2.content.map((b) => b.type),
      ['thinking', 'text'],
    );
    assert.equal((m2.content[0] as { thinking: string }).thinking, want.reasoning);
    assert.equal((m2.content[1] as { text: string }).text, want.content);
    assert.equal(m2.usage.output_tokens, want.usage!['completion_tokens']);
    const messages = upstream.requests[1]!.json?.['messages'] as Obj[];
    assert.deepEqual(
      messages.map((m) => m['role']),
      ['user', 'assistant', 'tool'],
    );
    assert.equal((messages[1]!['tool_calls'] as Obj[])[0]!['id'], call.id);
    assert.deepEqual(messages[2], { role: 'tool', tool_call_id: call.id, content: 'reported' });
  });

  test('Messages client, JSON: system and stop sequences go across, the answer comes back as a message with thinking', async () => {
    upstream.on(() => ({ status: 200, body: fixtureJson('deepseek-reasoner.json') }));
    const m = await anthropic.messages.create({
      model: 'deep-chat',
      max_tokens: 300,
      system: [{ type: 'text', text: 'Be brief.' }],
      stop_sequences: ['END'],
      messages: [{ role: 'user', content: 'How do I cross the street?' }],
    });
    const rec = fixtureJson('deepseek-reasoner.json');
    const message = (rec['choices'] as Obj[])[0]!['message'] as Obj;
    assert.deepEqual(
      m.content.map((b) => b.type),
      ['thinking', 'text'],
    );
    assert.equal((m.content[1] as { text: string }).text, message['content']);
    assert.match(m.id, /^msg_/);
    const sent = upstream.requests[0]!.json!;
    assert.deepEqual(sent['messages'], [
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'How do I cross the street?' },
    ]);
    assert.deepEqual(sent['stop'], ['END']);
  });

  test('Messages client: an upstream 400 reaches the SDK as BadRequestError in Anthropic error shape, with the upstream message', async () => {
    const body = fixture('openai-chat-error-400-unsupported-value.json');
    upstream.on(() => ({ status: 400, headers: { 'content-type': 'application/json' }, body: JSON.parse(body.toString('utf8')) as unknown }));
    const err = await anthropic.messages.create({ model: 'deep-chat', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] }).then(
      () => null,
      (e: unknown) => e,
    );
    assert.ok(err instanceof Anthropic.BadRequestError, String(err));
    const upstreamMessage = ((JSON.parse(body.toString('utf8')) as Obj)['error'] as Obj)['message'] as string;
    assert.equal((err.error as { type: string; error: { type: string; message: string } }).error.message, upstreamMessage);
    assert.equal((err.error as { type: string }).type, 'error');
  });

  test('images in tool results follow the tool messages as a user message, both ways', async () => {
    upstream.on(() => ({ status: 200, body: fixtureJson('deepseek-reasoner.json') }));
    const png = 'iVBORw0KGgo=';
    await anthropic.messages.create({
      model: 'deep-chat',
      max_tokens: 100,
      messages: [
        { role: 'user', content: 'look' },
        { role: 'assistant', content: [{ type: 'tool_use', id: 'tu1', name: 'shot', input: {} }] },
        {
          role: 'user',
          content: [
            {
              type: 'tool_result',
              tool_use_id: 'tu1',
              content: [
                { type: 'text', text: 'here' },
                { type: 'image', source: { type: 'base64', media_type: 'image/png', data: png } },
              ],
            },
          ],
        },
      ],
    });
    const m = upstream.requests.at(-1)!.json!['messages'] as Obj[];
    assert.deepEqual(m.slice(2), [
      { role: 'tool', tool_call_id: 'tu1', content: 'here' },
      { role: 'user', content: [{ type: 'image_url', image_url: { url: `data:image/png;base64,${png}` } }] },
    ]);
    await gw.client().responses.create({
      model: 'deep-chat',
      input: [
        { role: 'user', content: 'look' },
        { type: 'function_call', call_id: 'c1', name: 'shot', arguments: '{}' },
        {
          type: 'function_call_output',
          call_id: 'c1',
          output: [
            { type: 'input_text', text: 'here' },
            { type: 'input_image', image_url: `data:image/png;base64,${png}` },
          ],
        },
      ] as never,
    });
    const r = upstream.requests.at(-1)!.json!['messages'] as Obj[];
    assert.deepEqual(r.slice(2), [
      { role: 'tool', tool_call_id: 'c1', content: 'here' },
      { role: 'user', content: [{ type: 'image_url', image_url: { url: `data:image/png;base64,${png}` } }] },
    ]);
  });

  test('Messages client: Anthropic-defined client tools and a tool without input_schema are refused 400 naming the tool', async () => {
    const before = upstream.requests.length;
    for (const [tools, param] of [
      [[{ type: 'bash_20250124', name: 'bash' }], 'tools[0]'],
      [[{ name: 'ok', input_schema: { type: 'object' } }, { name: 'no-schema' }], 'tools[1].input_schema'],
    ] as const) {
      const err = await anthropic.messages
        .create({ model: 'deep-chat', max_tokens: 10, tools: tools as never, messages: [{ role: 'user', content: 'hi' }] })
        .then(
          () => null,
          (e: unknown) => e,
        );
      assert.ok(err instanceof Anthropic.BadRequestError, String(err));
      assert.match(err.message, param === 'tools[0]' ? /defined by Anthropic/ : /input_schema/);
    }
    assert.equal(upstream.requests.length, before);
  });

  test('Messages client: a block a chat server cannot take is refused 400 naming it, upstream untouched', async () => {
    const err = await anthropic.messages
      .create({
        model: 'deep-chat',
        max_tokens: 10,
        messages: [{ role: 'user', content: [{ type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: 'JVBERi0=' } }] }],
      })
      .then(
        () => null,
        (e: unknown) => e,
      );
    assert.ok(err instanceof Anthropic.BadRequestError, String(err));
    assert.match(err.message, /text documents/);
    assert.equal(upstream.requests.length, 0);
  });
});

describe('a Codex-style burst on the Responses API is spread and shed like a chat one', () => {
  const accounts = [new FakeUpstream(), new FakeUpstream()];
  const cheap = new FakeUpstream();
  let gw: TestGateway;

  before(async () => {
    for (const u of [...accounts, cheap]) {
      await u.start();
      // Each answer takes a while, so the burst's calls overlap.
      u.on(replay(REASONER, { delayMs: 2 }));
    }
    gw = await startGateway(`
routing: { max_attempts: 2 }
upstreams:
  - { id: acct-1, provider: openai-compatible, base_url: "${accounts[0]!.url}/v1", api_key: "\${TEST_UPSTREAM_KEY}", capacity: { start: 1, ceiling: 1 } }
  - { id: acct-2, provider: openai-compatible, base_url: "${accounts[1]!.url}/v1", api_key: "\${TEST_UPSTREAM_KEY}", capacity: { start: 1, ceiling: 1 } }
  - { id: cheap-acct, provider: openai-compatible, base_url: "${cheap.url}/v1", api_key: "\${TEST_UPSTREAM_KEY}" }
models:
  - name: codex
    reasoning: true
    shed: { policy: downgrade, fallback: cheap }
    price: { input: 1, output: 1 }
    targets: [{ upstream: acct-1, model: deepseek-reasoner }, { upstream: acct-2, model: deepseek-reasoner }]
  - name: cheap
    price: { input: 0.1, output: 0.1 }
    targets: [{ upstream: cheap-acct, model: cheap-chat }]
keys:
  - { name: team-a, key_sha256: ${hashKey(CLIENT_KEY)} }
`);
  });
  after(async () => {
    await gw?.close();
    for (const u of [...accounts, cheap]) await u.close();
  });

  test('4 deep Responses calls at once on 2 accounts of 1 place each: one on each account, two shed to the cheap model, all complete', async () => {
    const call = async () => {
      const res = await fetch(`${gw.url}/v1/responses`, {
        method: 'POST',
        headers: { authorization: `Bearer ${CLIENT_KEY}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'codex', input: 'refactor this', stream: true, reasoning: { effort: 'high' }, store: false }),
      });
      const text = await res.text();
      return { status: res.status, shed: res.headers.get('x-switchyard-shed'), completed: text.includes('event: response.completed') };
    };
    const results = await Promise.all([call(), call(), call(), call()]);
    assert.deepEqual(
      results.map((r) => [r.status, r.completed]),
      Array(4).fill([200, true]),
    );
    assert.deepEqual([accounts[0]!.requests.length, accounts[1]!.requests.length], [1, 1], 'spread: one deep call per account');
    assert.equal(cheap.requests.length, 2);
    assert.equal(results.filter((r) => r.shed === 'codex->cheap').length, 2, JSON.stringify(results));
    assert.equal(cheap.requests[0]!.json?.['reasoning_effort'], undefined, 'the non-reasoning fallback gets no reasoning control');
  });
});
