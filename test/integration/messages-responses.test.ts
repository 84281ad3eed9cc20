/**
 * An Anthropic Messages client (the official `@anthropic-ai/sdk`) served by an account that
 * speaks only the Responses API (`openai-compatible`, `options: { chat: false }`): a fake
 * upstream replays recorded Responses streams and answers
 * (test/fixtures/openai-responses-*). A tool loop runs two turns (the recorded function call
 * as a `tool_use` block, the client's `tool_result` back as a `function_call_output`); JSON
 * answers; an upstream 429, an error before the first byte and one mid-stream reach the SDK
 * in Anthropic's error shape.
 */
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import { hashKey } from '../../src/auth/keys.js';
import { FakeUpstream, type ScriptedReply, type Step } from '../helpers/fake-upstream.js';
import { CLIENT_KEY, startGateway, type TestGateway } from '../helpers/gateway.js';
import type { Obj } from '../helpers/recording-catalog.js';
import { fixtureJson, sseEvents } from '../helpers/recordings.js';
import { completedResponse, framed, recordedEvents } from '../helpers/responses-variants.js';

const CALL = 'openai-responses-stream-function-call.sse';
const TEXT = 'openai-responses-stream-text.sse';
const QUOTA = 'openai-responses-stream-midstream-error-insufficient-quota.chunks.jsonl';

/** A reply replaying a recorded Responses stream (events split as recorded, a pause before each). */
const replay = (name: string): ScriptedReply => ({
  status: 200,
  headers: { 'content-type': 'text/event-stream' },
  steps: sseEvents(name).flatMap((e): Step[] => [{ delayMs: 2 }, e]),
});

const TOOLS = [
  {
    name: 'get_capital',
    description: 'The capital of a country.',
    input_schema: { type: 'object' as const, properties: { country: { type: 'string' } }, required: ['country'] },
  },
];

describe('a Messages client served by a Responses-only account (the Anthropic SDK)', () => {
  const upstream = new FakeUpstream();
  let gw: TestGateway;
  let anthropic: Anthropic;

  before(async () => {
    await upstream.start();
    gw = await startGateway(`
routing: { max_attempts: 1 }
upstreams:
  - { id: codex-acct, provider: openai-compatible, base_url: "${upstream.url}/v1", api_key: "\${TEST_UPSTREAM_KEY}", options: { chat: false } }
  - { id: codex-acct-2, provider: openai-compatible, base_url: "${upstream.url}/v1", api_key: "\${TEST_UPSTREAM_KEY}", options: { chat: false } }
models:
  - name: codex-second
    reasoning: true
    price: { input: 1.25, output: 10 }
    targets: [{ upstream: codex-acct-2, model: gpt-5.5-codex }]
  - name: codex-only
    aliases: ["claude-*"]
    reasoning: true
    price: { input: 1.25, cached_input: 0.125, output: 10 }
    targets: [{ upstream: codex-acct, model: gpt-5.5-codex }]
keys:
  - { name: team-a, key_sha256: ${hashKey(CLIENT_KEY)} }
`);
    anthropic = new Anthropic({ apiKey: CLIENT_KEY, baseURL: gw.url, maxRetries: 0 });
  });
  after(async () => {
    await gw?.close();
    await upstream.close();
  });
  beforeEach(() => {
    upstream.requests.length = 0;
  });

  test('streamed tool loop: the function call as a tool_use block, the tool_result back as function_call_output, then the text', async () => {
    upstream.on((req) => (((req.json?.['input'] as Obj[] | undefined) ?? []).some((i) => i['type'] === 'function_call_output') ? replay(TEXT) : replay(CALL)));
    const question = { role: 'user' as const, content: 'What is the capital of France?' };
    const s1 = anthropic.messages.stream({
      model: 'claude-sonnet-4-6',
      max_tokens: 20_000,
      system: 'Be exact.',
      thinking: { type: 'enabled', budget_tokens: 16_384 },
      tools: TOOLS,
      messages: [question],
    });
    const starts: Obj[] = [];
    s1.on('streamEvent', (e) => {
      if (e.type === 'message_start') starts.push(e.message as unknown as Obj);
    });
    const m1 = await s1.finalMessage();
    const call = (completedResponse(CALL)['output'] as Obj[]).find((i) => i['type'] === 'function_call')!;
    assert.equal(m1.stop_reason, 'tool_use');
    const use = m1.content.find((b) => b.type === 'tool_use');
    assert.ok(use && use.type === 'tool_use', JSON.stringify(m1.content));
    assert.deepEqual([use.id, use.name, use.input], [call['call_id'], call['name'], JSON.parse(call['arguments'] as string) as unknown]);
    const usage = completedResponse(CALL)['usage'] as Obj;
    assert.deepEqual([m1.usage.input_tokens, m1.usage.output_tokens], [usage['input_tokens'], usage['output_tokens']], "the final counts are the upstream's");
    assert.ok(((starts[0]!['usage'] as Obj)['input_tokens'] as number) > 0, 'message_start announces an estimate of the prompt');
    const sent1 = upstream.requests[0]!;
    assert.equal(sent1.url, '/v1/responses');
    assert.deepEqual(sent1.json, {
      model: 'gpt-5.5-codex',
      instructions: 'Be exact.',
      input: [{ role: 'user', content: 'What is the capital of France?' }],
      store: false,
      tools: [{ type: 'function', name: 'get_capital', description: 'The capital of a country.', parameters: TOOLS[0]!.input_schema, strict: false }],
      max_output_tokens: 20_000,
      reasoning: { effort: 'high' },
      stream: true,
    });

    const m2 = await anthropic.messages
      .stream({
        model: 'claude-sonnet-4-6',
        max_tokens: 20_000,
        tools: TOOLS,
        messages: [
          question,
          { role: 'assistant', content: m1.content },
          { role: 'user', content: [{ type: 'tool_result', tool_use_id: use.id, content: 'Paris' }] },
        ],
      })
      .finalMessage();
    const text = recordedEvents(TEXT)
      .filter((e) => e['type'] === 'response.output_text.delta')
      .map((e) => e['delta'])
      .join('');
    assert.equal(m2.stop_reason, 'end_turn');
    assert.deepEqual(
      m2.content.map((b) => b.type),
      ['text'],
    );
    assert.equal((m2.content[0] as { text: string }).text, text);
    assert.deepEqual((upstream.requests[1]!.json?.['input'] as Obj[]).slice(1), [
      { type: 'function_call', call_id: call['call_id'], name: 'get_capital', arguments: call['arguments'] },
      { type: 'function_call_output', call_id: call['call_id'], output: 'Paris' },
    ]);
  });

  test('JSON: the response object as a message (tool_use, stop reason, usage with cache reads apart)', async () => {
    const response = completedResponse('openai-responses-stream-gpt5-reasoning-function-call.sse');
    const cached = { ...response, usage: { ...(response['usage'] as Obj), input_tokens_details: { cached_tokens: 40 } } };
    upstream.on(() => ({ status: 200, body: cached }));
    const m = await anthropic.messages.create({ model: 'codex-only', max_tokens: 300, tools: TOOLS, messages: [{ role: 'user', content: 'compute' }] });
    const call = (response['output'] as Obj[]).find((i) => i['type'] === 'function_call')!;
    assert.equal(m.stop_reason, 'tool_use');
    assert.match(m.id, /^msg_/);
    assert.deepEqual(
      m.content.map((b) => b.type),
      ['tool_use'],
    );
    assert.deepEqual((m.content[0] as { input: unknown }).input, JSON.parse(call['arguments'] as string));
    const usage = response['usage'] as Obj;
    assert.equal(m.usage.cache_read_input_tokens, 40);
    assert.equal(m.usage.input_tokens, (usage['input_tokens'] as number) - 40);
    assert.equal(upstream.requests[0]!.json?.['stream'], undefined);
  });

  test('stop_sequences is refused 400 naming it, in Anthropic shape, the account untouched', async () => {
    const err = await anthropic.messages
      .create({ model: 'codex-only', max_tokens: 10, stop_sequences: ['END'], messages: [{ role: 'user', content: 'hi' }] })
      .then(
        () => null,
        (e: unknown) => e,
      );
    assert.ok(err instanceof Anthropic.BadRequestError, String(err));
    assert.match(((err.error as Obj)['error'] as Obj)['message'] as string, /stop_sequences/);
    assert.equal(upstream.requests.length, 0);
  });

  test('an upstream 429 reaches the SDK as RateLimitError in Anthropic error shape, Retry-After kept', async () => {
    upstream.on(() => ({ status: 429, headers: { 'retry-after': '7' }, body: fixtureJson('openai-error-429-rate-limit-exceeded.json') }));
    const err = await anthropic.messages.create({ model: 'codex-only', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] }).then(
      () => null,
      (e: unknown) => e,
    );
    assert.ok(err instanceof Anthropic.RateLimitError, String(err));
    assert.equal((err.error as { type: string; error: { type: string } }).error.type, 'rate_limit_error');
    assert.equal(err.headers?.get('retry-after'), '7');
  });

  test('an error event before the first byte: an Anthropic error answer with the upstream message', async () => {
    upstream.on(() => ({ status: 200, headers: { 'content-type': 'text/event-stream' }, steps: [framed(recordedEvents(QUOTA)).toString()] }));
    const err = await anthropic.messages
      .stream({ model: 'codex-only', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] })
      .finalMessage()
      .then(
        () => null,
        (e: unknown) => e,
      );
    assert.ok(err instanceof Anthropic.APIError, String(err));
    const message = (recordedEvents(QUOTA).find((e) => e['type'] === 'error')!['error'] as Obj)['message'];
    assert.deepEqual([(err.error as Obj)['type'], ((err.error as Obj)['error'] as Obj)['message']], ['error', message]);
  });

  test('an error event mid-stream: the text so far, then an Anthropic error event the SDK raises', async () => {
    const text = recordedEvents(TEXT);
    const firstDelta = text.findIndex((e) => e['type'] === 'response.output_text.delta');
    const failure = recordedEvents(QUOTA).filter((e) => e['type'] === 'error' || e['type'] === 'response.failed');
    upstream.on(() => ({
      status: 200,
      headers: { 'content-type': 'text/event-stream' },
      steps: [framed(text.slice(0, firstDelta + 1)).toString(), { delayMs: 30 }, framed(failure).toString()],
    }));
    // Another account: the quota error of the test before leaves codex-acct cooling down.
    const s = anthropic.messages.stream({ model: 'codex-second', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] });
    let got = '';
    s.on('text', (t) => (got += t));
    const err = await s.finalMessage().then(
      () => null,
      (e: unknown) => e,
    );
    assert.equal(got, text[firstDelta]!['delta']);
    assert.ok(err instanceof Anthropic.APIError, String(err));
    const body = err.error as Obj;
    assert.equal(body['type'], 'error');
    assert.equal((body['error'] as Obj)['message'], (failure[0]!['error'] as Obj)['message']);
  });
});
