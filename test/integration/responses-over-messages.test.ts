/**
 * Responses clients served by an `anthropic` account (issue 29: Codex on Anthropic
 * accounts), through the official `openai` SDK's `responses.create` / `.stream`, against a
 * local fake Anthropic API replaying the Anthropic recordings: a streamed tool loop continued
 * by `previous_response_id` (rebuilt from the journal), a JSON tool loop with thinking
 * continued by full input (the signed thinking block rebuilt from `encrypted_content`), a
 * Codex-shaped request (tools in an `additional_tools` item, a custom tool call back),
 * Anthropic errors in the client's shape, and cache reads and writes in the usage, the
 * finished log line and the cost.
 */
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import OpenAI from 'openai';
import { FakeUpstream } from '../helpers/fake-upstream.js';
import { CLAUDE_TEST_PRICE, anthropicConfigYaml, finishedLine, startGateway, type TestGateway } from '../helpers/gateway.js';
import { codexBody } from '../helpers/codex-request.js';
import { anthropicPayloads, fixtureJson, replayAnthropic } from '../helpers/recordings.js';

type Obj = Record<string, unknown>;

const TOOL_STREAM = 'anthropic-messages-stream-tool-use.sse';
const TEXT_STREAM = 'anthropic-messages-stream-text.chunks.jsonl';
const frame = (p: Obj): string => `event: ${String(p['type'])}\ndata: ${JSON.stringify(p)}\n\n`;

/** The text a stream recording's text deltas hold. */
const recordedText = (name: string): string =>
  anthropicPayloads(name)
    .map((p) => (p['delta'] as Obj | undefined)?.['text'])
    .filter((t) => typeof t === 'string')
    .join('');

/** The messages the fake upstream got on request `i`. */
const messagesOf = (upstream: FakeUpstream, i: number): Obj[] => upstream.requests[i]!.json!['messages'] as Obj[];

describe('Responses clients on an Anthropic account, through the openai SDK', () => {
  const upstream = new FakeUpstream();
  let gw: TestGateway;
  let client: OpenAI;

  before(async () => {
    await upstream.start();
    gw = await startGateway(anthropicConfigYaml(upstream.url));
    client = gw.client();
  });
  after(async () => {
    await gw?.close();
    await upstream.close();
  });
  beforeEach(() => {
    upstream.requests.length = 0;
  });

  test('streamed tool loop: a function_call item, then the follow-up by previous_response_id rebuilt as Anthropic turns', async () => {
    upstream.on((_req, i) => replayAnthropic(i === 0 ? TOOL_STREAM : TEXT_STREAM)());
    const tools = [
      {
        type: 'function' as const,
        name: 'get_exchange_rate',
        description: 'rate',
        parameters: { type: 'object', properties: { from_currency: { type: 'string' }, to_currency: { type: 'string' } } },
        strict: false,
      },
    ];
    const s1 = client.responses.stream({ model: 'claude-test', instructions: 'Be exact.', input: 'USD to EUR?', tools });
    const types: string[] = [];
    s1.on('event', (e) => types.push(e.type));
    const r1 = await s1.finalResponse();
    assert.equal(r1.status, 'completed');
    assert.match(r1.id, /^resp_/);
    assert.ok(types.includes('response.function_call_arguments.delta') && types.at(-1) === 'response.completed', types.join(','));
    const fc = r1.output.find((i) => i.type === 'function_call');
    assert.ok(fc && fc.type === 'function_call');
    assert.deepEqual(
      [fc.name, fc.call_id, JSON.parse(fc.arguments)],
      ['get_exchange_rate', 'toolu_01EFn5wTNBYA8Reni8rbmnHT', { from_currency: 'USD', to_currency: 'EUR' }],
    );
    const sent1 = upstream.requests[0]!;
    assert.equal(sent1.url, '/v1/messages');
    // The instructions as one text block, marked as a prompt-cache breakpoint (translate/messages-cache.ts).
    assert.deepEqual(
      [sent1.json?.['system'], sent1.json?.['stream'], sent1.json?.['max_tokens']],
      [[{ type: 'text', text: 'Be exact.', cache_control: { type: 'ephemeral' } }], true, 1000],
    );
    assert.deepEqual((sent1.json?.['tools'] as Obj[])[0]!['name'], 'get_exchange_rate');

    const s2 = await client.responses
      .create({
        model: 'claude-test',
        previous_response_id: r1.id,
        input: [{ type: 'function_call_output', call_id: fc.call_id, output: '0.92' }],
        tools,
        stream: true,
      })
      .withResponse();
    assert.equal(s2.response.headers.get('x-switchyard-continuation'), 'rebuilt');
    let text = '';
    for await (const e of s2.data) if (e.type === 'response.output_text.delta') text += e.delta;
    assert.equal(text, recordedText(TEXT_STREAM));
    const turns = messagesOf(upstream, 1);
    assert.deepEqual(
      turns.map((m) => m['role']),
      ['user', 'assistant', 'user'],
    );
    // The turn before the final user turn ends in a prompt-cache breakpoint.
    assert.deepEqual((turns[1]!['content'] as Obj[]).at(-1), {
      type: 'tool_use',
      id: fc.call_id,
      name: 'get_exchange_rate',
      input: { from_currency: 'USD', to_currency: 'EUR' },
      cache_control: { type: 'ephemeral' },
    });
    assert.deepEqual(turns[2]!['content'], [{ type: 'tool_result', tool_use_id: fc.call_id, content: '0.92' }]);
  });

  test('JSON tool loop with thinking, continued by full input: the signed thinking block goes back first in the tool turn', async () => {
    const rec = fixtureJson('anthropic-messages-thinking-tool-use.json');
    const thinking = (rec['content'] as Obj[])[0]!;
    upstream.on((_req, i) => ({ status: 200, body: i === 0 ? rec : fixtureJson('anthropic-messages-text.json') }));
    const tools = [{ type: 'function' as const, name: 'get_user_country', parameters: { type: 'object', properties: {} }, strict: false }];
    const r1 = await client.responses.create({
      model: 'claude-test',
      input: 'Largest city in my country?',
      tools,
      reasoning: { effort: 'high' },
      store: false,
      include: ['reasoning.encrypted_content'],
    });
    assert.deepEqual(
      r1.output.map((i) => i.type),
      ['reasoning', 'message', 'function_call'],
    );
    const reasoning = r1.output[0] as OpenAI.Responses.ResponseReasoningItem;
    assert.equal(reasoning.summary[0]?.text, thinking['thinking']);
    assert.equal(typeof reasoning.encrypted_content, 'string');
    assert.deepEqual(upstream.requests[0]!.json?.['thinking'], { type: 'enabled', budget_tokens: 16384 });
    assert.equal(upstream.requests[0]!.json?.['max_tokens'], 16384 + 1000);
    const fc = r1.output[2] as OpenAI.Responses.ResponseFunctionToolCall;

    const input = [
      { role: 'user' as const, content: 'Largest city in my country?' },
      ...r1.output,
      { type: 'function_call_output' as const, call_id: fc.call_id, output: 'France' },
    ];
    const r2 = await client.responses.create({
      model: 'claude-test',
      input: input as OpenAI.Responses.ResponseInput,
      tools,
      reasoning: { effort: 'high' },
      store: false,
    });
    assert.equal(r2.output_text, (fixtureJson('anthropic-messages-text.json')['content'] as Obj[])[0]!['text']);
    const sent = upstream.requests[1]!.json!;
    assert.deepEqual(sent['thinking'], { type: 'enabled', budget_tokens: 16384 });
    const turn = (sent['messages'] as Obj[])[1]!;
    assert.deepEqual((turn['content'] as Obj[])[0], { type: 'thinking', thinking: thinking['thinking'], signature: thinking['signature'] });
    assert.equal(sent['stream'], undefined);
  });

  test("Codex's request: tools from the additional_tools item (no such message upstream); a custom tool's call back as custom_tool_call", async () => {
    const input = 'text("hi")';
    const events = anthropicPayloads(TOOL_STREAM).flatMap((p): Obj[] => {
      const block = p['content_block'] as Obj | undefined;
      if (block?.['type'] === 'tool_use') return [{ ...p, content_block: { ...block, name: 'exec' } }];
      if (p['index'] === 4 && p['type'] === 'content_block_delta') return [];
      if (p['index'] === 4 && p['type'] === 'content_block_stop')
        return [{ type: 'content_block_delta', index: 4, delta: { type: 'input_json_delta', partial_json: JSON.stringify({ input }) } }, p];
      return [p];
    });
    upstream.on(() => ({ status: 200, headers: { 'content-type': 'text/event-stream' }, steps: events.map(frame) }));
    const r = await client.responses.stream({ ...codexBody(), model: 'claude-test' } as never).finalResponse();
    const call = r.output.find((i) => i.type === 'custom_tool_call');
    assert.ok(call && call.type === 'custom_tool_call', JSON.stringify(r.output));
    assert.deepEqual([call.name, call.input, call.namespace], ['exec', input, undefined]);
    const sent = upstream.requests[0]!.json!;
    assert.deepEqual(
      (sent['tools'] as Obj[]).map((t) => t['name']),
      ['exec', 'wait', 'clock__sleep'],
    );
    assert.deepEqual(sent['tool_choice'], { type: 'auto', disable_parallel_tool_use: true });
    assert.deepEqual(sent['system'], [{ type: 'text', text: 'You are Codex.', cache_control: { type: 'ephemeral' } }]);
    assert.ok(!JSON.stringify(sent['messages']).includes('additional_tools'));
  });

  test('Anthropic 429, 529 and 400 answers reach the SDK in OpenAI error shape with the matching class; a mid-stream error too', async () => {
    const cases = [
      {
        status: 429,
        body: { type: 'error', error: { type: 'rate_limit_error', message: 'Number of request tokens has exceeded your per-minute rate limit' } },
        want: 429,
        cls: OpenAI.RateLimitError,
        code: 'rate_limit_exceeded',
      },
      {
        status: 529,
        body: { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } },
        want: 503,
        cls: OpenAI.InternalServerError,
        code: 'overloaded',
      },
      { status: 400, body: fixtureJson('anthropic-error-400-invalid-request.json'), want: 400, cls: OpenAI.BadRequestError, code: null },
    ];
    for (const c of cases) {
      upstream.on(() => ({ status: c.status, headers: { 'retry-after': '0' }, body: c.body }));
      const err = await client.responses.create({ model: 'claude-test', input: 'hi' }).then(
        () => assert.fail('expected an error'),
        (e: unknown) => e,
      );
      assert.ok(err instanceof c.cls, `${c.status}: got ${String(err)}`);
      const apiErr = err as InstanceType<typeof OpenAI.APIError>;
      assert.equal(apiErr.status, c.want);
      assert.equal(apiErr.code ?? null, c.code);
      assert.equal((apiErr.error as Obj)['message'], (c.body['error'] as Obj)['message']);
    }
    const head = anthropicPayloads(TEXT_STREAM).slice(0, 4);
    upstream.on(() => ({
      status: 200,
      headers: { 'content-type': 'text/event-stream' },
      steps: [...head.map(frame), frame({ type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } })],
    }));
    const stream = await client.responses.create({ model: 'claude-test', input: 'hi', stream: true });
    let text = '';
    const err = await (async () => {
      for await (const e of stream) if (e.type === 'response.output_text.delta') text += e.delta;
    })().then(
      () => null,
      (e: unknown) => e,
    );
    assert.ok(err instanceof OpenAI.APIError, `got ${String(err)}`);
    assert.match((err as Error).message, /Overloaded/);
    assert.ok(text.length > 0, 'the text before the error reached the client');
  });

  test('cache reads and writes: input tokens include both, cached_tokens the reads; the finished log line and the cost price them apart', async () => {
    const rec = fixtureJson('anthropic-messages-text.json');
    const usage = { ...(rec['usage'] as Obj), input_tokens: 100, cache_read_input_tokens: 2000, cache_creation_input_tokens: 1000, output_tokens: 50 };
    upstream.on(() => ({ status: 200, body: { ...rec, usage } }));
    const { data, response } = await client.responses.create({ model: 'claude-test', input: 'hi' }).withResponse();
    assert.deepEqual(data.usage, {
      input_tokens: 3100,
      input_tokens_details: { cached_tokens: 2000 },
      output_tokens: 50,
      output_tokens_details: { reasoning_tokens: 0 },
      total_tokens: 3150,
    });
    const p = CLAUDE_TEST_PRICE;
    const want = (100 * p.input + 2000 * p.cached_input + 1000 * p.cache_write + 50 * p.output) / 1e6;
    assert.ok(Math.abs(Number(response.headers.get('x-switchyard-cost-usd')) - want) < 1e-8, `${response.headers.get('x-switchyard-cost-usd')} vs ${want}`);
    const line = await finishedLine(gw, response.headers.get('x-request-id')!);
    assert.deepEqual(line['tokens'], { input: 3100, cached: 2000, output: 50, reasoning: 0, cache_write: 1000 });
    assert.ok(Math.abs((line['cost_usd'] as number) - want) < 1e-8);
    assert.equal(line['status'], 200);

    // The same through a stream: the usage of message_start and message_delta.
    const payloads = anthropicPayloads(TEXT_STREAM).map((e) => (e['type'] === 'message_delta' ? { ...e, usage } : e));
    upstream.on(() => ({ status: 200, headers: { 'content-type': 'text/event-stream' }, steps: payloads.map(frame) }));
    const r = await client.responses.stream({ model: 'claude-test', input: 'hi' }).finalResponse();
    assert.deepEqual([r.usage?.input_tokens, r.usage?.input_tokens_details.cached_tokens], [3100, 2000]);
  });
});
