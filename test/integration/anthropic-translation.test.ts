/**
 * Chat completions served by an `anthropic` upstream: every Anthropic recording (JSON,
 * streams, errors) is replayed by a local fake Anthropic API, translated by the gateway,
 * and consumed by the official `openai` client as users do, including
 * `chat.completions.stream()` and its final assembled message.
 */
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import OpenAI from 'openai';
import { FakeUpstream } from '../helpers/fake-upstream.js';
import { CLAUDE_TEST_PRICE, CLIENT_KEY, UPSTREAM_KEY, anthropicConfigYaml, startGateway, type TestGateway } from '../helpers/gateway.js';
import { anthropicPayloads, fixtureJson, replayAnthropic } from '../helpers/recordings.js';

const PRICE = CLAUDE_TEST_PRICE;

interface AnthropicBlock {
  type: string;
  text?: string;
  thinking?: string;
  id?: string;
  name?: string;
  input?: unknown;
}
interface AnthropicUsage {
  input_tokens: number;
  output_tokens: number;
  cache_read_input_tokens?: number | null;
  cache_creation_input_tokens?: number | null;
}

function promptTokens(u: AnthropicUsage): number {
  return u.input_tokens + (u.cache_read_input_tokens ?? 0) + (u.cache_creation_input_tokens ?? 0);
}

/** What a stream recording should come out as: text, reasoning, client tool calls, usage, stop reason. */
function expectedFromStream(name: string) {
  const blocks = new Map<number, { type: string; id?: string; name?: string; json: string }>();
  let text = '';
  let reasoning = '';
  let usage: AnthropicUsage = { input_tokens: 0, output_tokens: 0 };
  let stop: string | null = null;
  for (const p of anthropicPayloads(name)) {
    if (p['type'] === 'message_start') usage = { ...usage, ...(p['message'] as { usage: AnthropicUsage }).usage };
    if (p['type'] === 'content_block_start') {
      const b = p['content_block'] as AnthropicBlock;
      blocks.set(p['index'] as number, { type: b.type, ...(b.id ? { id: b.id } : {}), ...(b.name ? { name: b.name } : {}), json: '' });
    }
    if (p['type'] === 'content_block_delta') {
      const d = p['delta'] as { type: string; text?: string; thinking?: string; partial_json?: string };
      if (d.type === 'text_delta') text += d.text;
      if (d.type === 'thinking_delta') reasoning += d.thinking;
      if (d.type === 'input_json_delta') blocks.get(p['index'] as number)!.json += d.partial_json;
    }
    if (p['type'] === 'message_delta') {
      usage = { ...usage, ...(p['usage'] as Partial<AnthropicUsage>) } as AnthropicUsage;
      stop = (p['delta'] as { stop_reason: string }).stop_reason;
    }
  }
  const tools = [...blocks.values()]
    .filter((b) => b.type === 'tool_use')
    .map((b) => ({ id: b.id!, name: b.name!, input: b.json === '' ? {} : (JSON.parse(b.json) as unknown) }));
  return { text, reasoning, tools, usage, stop };
}

const FINISH: Record<string, string> = { end_turn: 'stop', tool_use: 'tool_calls', max_tokens: 'length', stop_sequence: 'stop' };

describe('anthropic upstream behind chat completions', () => {
  const upstream = new FakeUpstream();
  let gw: TestGateway;
  let client: OpenAI;

  before(async () => {
    await upstream.start();
    // A 404 (not_found) cools its target until a probe: with credential_ms 1 the next request is that probe.
    gw = await startGateway(anthropicConfigYaml(upstream.url, '  max_attempts: 1\n  cooldown: { credential_ms: 1 }'));
    client = gw.client();
  });
  after(async () => {
    await gw?.close();
    await upstream.close();
  });
  beforeEach(() => {
    upstream.requests.length = 0;
  });

  for (const name of ['anthropic-messages-text.json', 'anthropic-messages-parallel-tool-use.json', 'anthropic-messages-thinking-tool-use.json']) {
    test(`non-stream ${name}: content, tool calls, reasoning, usage, finish reason and cost`, async () => {
      const rec = fixtureJson(name) as { content: AnthropicBlock[]; usage: AnthropicUsage; stop_reason: string };
      upstream.on(() => ({ status: 200, body: rec }));
      const { data, response } = await client.chat.completions.create({ model: 'claude-test', messages: [{ role: 'user', content: 'hi' }] }).withResponse();
      const choice = data.choices[0]!;
      const text = rec.content
        .filter((b) => b.type === 'text')
        .map((b) => b.text)
        .join('');
      assert.equal(choice.message.content ?? '', text);
      const tools = rec.content.filter((b) => b.type === 'tool_use');
      assert.equal(choice.message.tool_calls?.length ?? 0, tools.length);
      tools.forEach((t, i) => {
        const call = choice.message.tool_calls![i]! as { id: string; function: { name: string; arguments: string } };
        assert.equal(call.id, t.id);
        assert.equal(call.function.name, t.name);
        assert.deepEqual(JSON.parse(call.function.arguments), t.input);
      });
      const thinking = rec.content
        .filter((b) => b.type === 'thinking')
        .map((b) => b.thinking)
        .join('');
      if (thinking) assert.equal((choice.message as unknown as { reasoning_content: string }).reasoning_content, thinking);
      assert.equal(choice.finish_reason, FINISH[rec.stop_reason]);
      assert.equal(data.usage?.prompt_tokens, promptTokens(rec.usage));
      assert.equal(data.usage?.completion_tokens, rec.usage.output_tokens);
      assert.equal(data.usage?.prompt_tokens_details?.cached_tokens ?? 0, rec.usage.cache_read_input_tokens ?? 0);
      const cached = rec.usage.cache_read_input_tokens ?? 0;
      const written = rec.usage.cache_creation_input_tokens ?? 0;
      const want =
        ((promptTokens(rec.usage) - cached - written) * PRICE.input +
          cached * PRICE.cached_input +
          written * PRICE.cache_write +
          rec.usage.output_tokens * PRICE.output) /
        1e6;
      assert.ok(Math.abs(Number(response.headers.get('x-switchyard-cost-usd')) - want) < 1e-8, `${response.headers.get('x-switchyard-cost-usd')} vs ${want}`);

      // What went upstream: the Messages API, with Anthropic's auth and version headers.
      const sent = upstream.requests[0]!;
      assert.equal(sent.url, '/v1/messages');
      assert.equal(sent.headers['x-api-key'], UPSTREAM_KEY);
      assert.equal(sent.headers['anthropic-version'], '2023-06-01');
      assert.equal(sent.headers['authorization'], undefined);
      assert.equal(sent.json?.['model'], 'claude-upstream-id');
      assert.equal(sent.json?.['max_tokens'], 1000);
    });
  }

  for (const name of [
    'anthropic-messages-stream-text.chunks.jsonl',
    'anthropic-messages-stream-thinking.sse',
    'anthropic-messages-stream-tool-use.sse',
    'anthropic-messages-stream-tool-no-args.chunks.jsonl',
  ]) {
    test(`stream ${name}: chat.completions.stream() assembles text, reasoning, tool calls and usage`, async () => {
      const want = expectedFromStream(name);
      upstream.on(replayAnthropic(name));
      const stream = client.chat.completions.stream({
        model: 'claude-test',
        messages: [{ role: 'user', content: 'hi' }],
        stream_options: { include_usage: true },
      });
      let reasoning = '';
      let chunks = 0;
      stream.on('chunk', (c) => {
        chunks++;
        const d = c.choices[0]?.delta as { reasoning_content?: string } | undefined;
        if (d?.reasoning_content) reasoning += d.reasoning_content;
      });
      const final = await stream.finalChatCompletion();
      assert.ok(chunks > 2);
      const msg = final.choices[0]!.message;
      assert.equal(msg.content ?? '', want.text);
      assert.equal(reasoning, want.reasoning);
      assert.equal(msg.tool_calls?.length ?? 0, want.tools.length);
      want.tools.forEach((t, i) => {
        const call = msg.tool_calls![i]! as { id: string; function: { name: string; arguments: string } };
        assert.equal(call.id, t.id);
        assert.equal(call.function.name, t.name);
        assert.deepEqual(call.function.arguments === '' ? {} : JSON.parse(call.function.arguments), t.input);
      });
      assert.equal(final.choices[0]!.finish_reason, FINISH[want.stop!]);
      assert.equal(final.usage?.prompt_tokens, promptTokens(want.usage));
      assert.equal(final.usage?.completion_tokens, want.usage.output_tokens);
      const sent = upstream.requests[0]!;
      assert.equal(sent.json?.['stream'], true);
    });
  }

  test('the raw stream has no ping events, only chat chunks and [DONE]', async () => {
    upstream.on(replayAnthropic('anthropic-messages-stream-tool-no-args.chunks.jsonl'));
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${CLIENT_KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'claude-test', stream: true, messages: [{ role: 'user', content: 'hi' }] }),
    });
    const raw = await res.text();
    assert.match(res.headers.get('content-type') ?? '', /text\/event-stream/);
    assert.doesNotMatch(raw, /ping/);
    assert.doesNotMatch(raw, /^event:/m);
    assert.match(raw, /data: \[DONE\]\n\n$/);
    for (const line of raw.split('\n').filter((l) => l.startsWith('data: ') && l !== 'data: [DONE]')) {
      assert.equal((JSON.parse(line.slice(6)) as { object: string }).object, 'chat.completion.chunk');
    }
  });

  test('the request is translated: system, tools, tool results, stop, reasoning_effort -> thinking', async () => {
    upstream.on(() => ({ status: 200, body: fixtureJson('anthropic-messages-text.json') }));
    await client.chat.completions.create({
      model: 'claude-test',
      reasoning_effort: 'high',
      max_completion_tokens: 30000,
      stop: ['END'],
      messages: [
        { role: 'system', content: 'be brief' },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'weather?' },
            { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=' } },
          ],
        },
        {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }],
        },
        { role: 'tool', tool_call_id: 'call_1', content: 'sunny' },
      ],
      tools: [
        { type: 'function', function: { name: 'get_weather', description: 'w', parameters: { type: 'object', properties: { city: { type: 'string' } } } } },
      ],
      tool_choice: 'required',
    });
    const b = upstream.requests[0]!.json!;
    assert.equal(JSON.stringify(b['system']).includes('be brief'), true);
    const msgs = b['messages'] as {
      role: string;
      content: { type: string; id?: string; tool_use_id?: string; input?: unknown; source?: { type: string } }[];
    }[];
    assert.deepEqual(
      msgs.map((m) => m.role),
      ['user', 'assistant', 'user'],
    );
    assert.equal(msgs[0]!.content[1]!.type, 'image');
    assert.equal(msgs[0]!.content[1]!.source?.type, 'base64');
    assert.deepEqual(msgs[1]!.content.find((c) => c.type === 'tool_use')?.input, { city: 'Paris' });
    assert.equal(msgs[2]!.content[0]!.type, 'tool_result');
    assert.equal(msgs[2]!.content[0]!.tool_use_id, 'call_1');
    assert.deepEqual(b['tool_choice'], { type: 'any' });
    assert.equal((b['tools'] as { name: string; input_schema: unknown }[])[0]!.name, 'get_weather');
    assert.deepEqual(b['stop_sequences'], ['END']);
    assert.equal(b['max_tokens'], 30000);
    // The last assistant turn used tools and its thinking blocks cannot be sent back: no thinking.
    assert.equal(b['thinking'], undefined);
  });

  test('reasoning_effort becomes a thinking budget that fits under the client cap; a budget below the minimum is raised to it', async () => {
    upstream.on(() => ({ status: 200, body: fixtureJson('anthropic-messages-text.json') }));
    const ask = (extra: Record<string, unknown>) =>
      client.chat.completions.create({ model: 'claude-test', messages: [{ role: 'user', content: 'think' }], reasoning_effort: 'high', ...extra });
    await ask({ max_completion_tokens: 30000, temperature: 0.5 });
    await ask({ max_tokens: 5000 });
    await ask({ max_tokens: 100 });
    await ask({});
    const [big, mid, small, none] = upstream.requests.map((r) => r.json!);
    const t = (b: Record<string, unknown>) => b['thinking'] as { type: string; budget_tokens: number } | undefined;
    assert.equal(t(big!)?.type, 'enabled');
    assert.equal(t(big!)?.budget_tokens, 16384);
    assert.equal(big!['max_tokens'], 30000);
    assert.equal(big!['temperature'], undefined, 'temperature is not allowed with thinking');
    assert.equal(t(mid!)?.budget_tokens, 4999);
    assert.equal(mid!['max_tokens'], 5000);
    assert.deepEqual(t(small!), { type: 'enabled', budget_tokens: 1024 }, "Anthropic's minimum budget");
    assert.equal(small!['max_tokens'], 1025, 'max_tokens above the budget, as Anthropic requires');
    assert.equal(t(none!)?.budget_tokens, 16384);
    assert.equal(none!['max_tokens'], 16384 + 1000);
  });

  test('an Anthropic error event mid-stream ends the stream with an OpenAI error the SDK raises', async () => {
    const events = anthropicPayloads('anthropic-messages-stream-text.chunks.jsonl').slice(0, 5);
    const steps = events.map((p) => `event: ${String(p['type'])}\ndata: ${JSON.stringify(p)}\n\n`);
    steps.push(`event: error\ndata: ${JSON.stringify({ type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } })}\n\n`);
    upstream.on(() => ({ status: 200, headers: { 'content-type': 'text/event-stream' }, steps }));
    const stream = await client.chat.completions.create({ model: 'claude-test', stream: true, messages: [{ role: 'user', content: 'hi' }] });
    let text = '';
    const err = await (async () => {
      for await (const c of stream) text += c.choices[0]?.delta?.content ?? '';
    })().then(
      () => null,
      (e: unknown) => e,
    );
    assert.ok(err instanceof OpenAI.APIError, `got ${String(err)}`);
    assert.match((err as Error).message, /Overloaded/);
    assert.ok(text.length > 0, 'text before the error reached the client');
    const line = await (async () => {
      for (let i = 0; i < 50; i++) {
        const l = gw.finished().at(-1);
        if (l && l['request_id']) return l;
        await new Promise((r) => setTimeout(r, 20));
      }
      return null;
    })();
    assert.ok(line);
  });

  test('a client that leaves after the stream started is recorded with 499 and estimated input tokens', async () => {
    // message_start, the first text block and its first delta; then the upstream goes quiet.
    const head = anthropicPayloads('anthropic-messages-stream-text.chunks.jsonl')
      .filter((p) => p['type'] !== 'ping')
      .slice(0, 3);
    assert.deepEqual(
      head.map((p) => p['type']),
      ['message_start', 'content_block_start', 'content_block_delta'],
    );
    upstream.on(() => ({
      status: 200,
      headers: { 'content-type': 'text/event-stream' },
      steps: [...head.map((p) => `event: ${String(p['type'])}\ndata: ${JSON.stringify(p)}\n\n`), { delayMs: 3000 }, 'event: ping\ndata: {"type":"ping"}\n\n'],
    }));
    const controller = new AbortController();
    const stream = await client.chat.completions.create(
      { model: 'claude-test', stream: true, messages: [{ role: 'user', content: 'a prompt with several words in it' }] },
      { signal: controller.signal },
    );
    const it = stream[Symbol.asyncIterator]();
    await it.next(); // the stream has started (the role chunk waits for the first text, and comes with it)
    controller.abort();
    const line = await (async () => {
      for (let i = 0; i < 100; i++) {
        const l = gw.finished().find((x) => x['status'] === 499);
        if (l) return l;
        await new Promise((r) => setTimeout(r, 20));
      }
      return null;
    })();
    assert.ok(line, 'a 499 request line');
    assert.equal(line['tokens_estimated'], true);
    assert.ok((line['tokens'] as { input: number }).input > 5, JSON.stringify(line['tokens']));
  });

  test('prompt-cache reads and writes are priced apart (cache_write price), JSON and stream', async () => {
    const rec = fixtureJson('anthropic-messages-text.json') as { usage: Record<string, number> };
    const usage = { ...rec.usage, input_tokens: 100, cache_read_input_tokens: 2000, cache_creation_input_tokens: 1000, output_tokens: 50 };
    upstream.on(() => ({ status: 200, body: { ...rec, usage } }));
    const { data, response } = await client.chat.completions.create({ model: 'claude-test', messages: [{ role: 'user', content: 'hi' }] }).withResponse();
    assert.equal(data.usage?.prompt_tokens, 3100);
    assert.equal(data.usage?.prompt_tokens_details?.cached_tokens, 2000);
    assert.equal((data.usage as unknown as { cache_creation_input_tokens: number }).cache_creation_input_tokens, 1000);
    const want = (100 * PRICE.input + 2000 * PRICE.cached_input + 1000 * PRICE.cache_write + 50 * PRICE.output) / 1e6;
    assert.ok(Math.abs(Number(response.headers.get('x-switchyard-cost-usd')) - want) < 1e-8, `${response.headers.get('x-switchyard-cost-usd')} vs ${want}`);
  });

  test('the request Anthropic would refuse is cleaned: whitespace-only stop entries and text dropped, image/jpg sent as image/jpeg', async () => {
    upstream.on(() => ({ status: 200, body: fixtureJson('anthropic-messages-text.json') }));
    const png = 'iVBORw0KGgo=';
    await client.chat.completions.create({
      model: 'claude-test',
      stop: ['\n', '  ', 'END'],
      messages: [
        { role: 'system', content: '   ' },
        {
          role: 'user',
          content: [
            { type: 'text', text: ' \n ' },
            { type: 'text', text: 'look' },
            { type: 'image_url', image_url: { url: `data:image/jpg;base64,${png}` } },
          ],
        },
        { role: 'assistant', content: '\t' },
        { role: 'user', content: 'and?' },
      ],
    });
    const sent = upstream.requests.at(-1)!.json!;
    assert.deepEqual(sent['stop_sequences'], ['END']);
    assert.equal(sent['system'], undefined, 'a whitespace-only system prompt is dropped');
    assert.deepEqual(sent['messages'], [
      {
        role: 'user',
        content: [
          { type: 'text', text: 'look' },
          { type: 'image', source: { type: 'base64', media_type: 'image/jpeg', data: png } },
          { type: 'text', text: 'and?' },
        ],
      },
    ]);
  });

  // Last: the 401 case puts the target in its credential cooldown.
  test('Anthropic errors become OpenAI errors with the right status and class', async () => {
    const cases: { status: number; body: unknown; want: number; cls: abstract new (...args: never[]) => unknown }[] = [
      { status: 400, body: fixtureJson('anthropic-error-400-invalid-request.json'), want: 400, cls: OpenAI.BadRequestError },
      { status: 404, body: fixtureJson('anthropic-error-404-not-found.json'), want: 404, cls: OpenAI.NotFoundError },
      {
        status: 429,
        body: { type: 'error', error: { type: 'rate_limit_error', message: 'Number of request tokens has exceeded your per-minute rate limit' } },
        want: 429,
        cls: OpenAI.RateLimitError,
      },
      { status: 529, body: { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } }, want: 503, cls: OpenAI.InternalServerError },
      {
        status: 401,
        body: { type: 'error', error: { type: 'authentication_error', message: 'invalid x-api-key' } },
        want: 502,
        cls: OpenAI.InternalServerError,
      },
    ];
    for (const c of cases) {
      upstream.on(() => ({ status: c.status, body: c.body }));
      const err = await client.chat.completions.create({ model: 'claude-test', messages: [{ role: 'user', content: 'hi' }] }).then(
        () => assert.fail('expected an error'),
        (e: unknown) => e,
      );
      assert.ok(err instanceof c.cls, `${c.status}: got ${String(err)}`);
      assert.equal((err as InstanceType<typeof OpenAI.APIError>).status, c.want);
      const inner = (c.body as { error: { message: string } }).error;
      if (c.status !== 401) assert.match((err as Error).message, new RegExp(inner.message.slice(0, 20).replace(/[.*+?^${}()|[\]\\]/g, '\\$&')));
      assert.doesNotMatch(JSON.stringify((err as { error?: unknown }).error ?? {}), new RegExp(UPSTREAM_KEY));
    }
  });
});
