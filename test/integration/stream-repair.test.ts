/**
 * What reaches a chat client from an upstream stream that is not quite right: a stream that
 * ends after its finish_reason without `[DONE]`, usage-only chunks with `choices` missing or
 * null, and `data:` frames that are not JSON; plus `extra_body` sent literally in a body.
 * The same for an `anthropic` upstream translated to chat completions: a stream that ends
 * after its stop_reason without `message_stop` is complete, and events translated before a
 * non-JSON event still go out (neither is retried); and a tool-result follow-up with
 * `reasoning_effort` is sent in a shape Anthropic accepts.
 * Driven with raw HTTP (to see every byte) and the official `openai` SDK (to see what a user
 * sees).
 */
import assert from 'node:assert/strict';
import { after, afterEach, before, beforeEach, describe, test } from 'node:test';
import OpenAI from 'openai';
import { anthropicConfigYaml, closeAll, postChat, startGateway, startWithUpstream, testConfigYaml, type TestGateway } from '../helpers/gateway.js';
import { FakeUpstream } from '../helpers/fake-upstream.js';
import { anthropicEvents, anthropicPayloads } from '../helpers/recordings.js';

const chunk = (o: Record<string, unknown>) => `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', created: 1, model: 'up', ...o })}\n\n`;
const TEXT = chunk({ choices: [{ index: 0, delta: { role: 'assistant', content: 'Hello' }, finish_reason: null }] });
const FINISH = chunk({ choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] });
const USAGE = { prompt_tokens: 7, completion_tokens: 1, total_tokens: 8 };
const SSE = { 'content-type': 'text/event-stream' };

const count = (text: string, needle: string) => text.split(needle).length - 1;

describe('stream repair and request unwrapping', () => {
  let upstream: FakeUpstream;
  let gw: TestGateway;
  let client: OpenAI;

  before(async () => {
    ({ upstream, gw } = await startWithUpstream((url) => testConfigYaml(url, { extraUpstreams: [] })));
    client = gw.client();
  });
  after(() => closeAll(gw, upstream));

  const ask = (extra: Record<string, unknown> = {}) => postChat(gw, { model: 'gpt-test', stream: true, messages: [{ role: 'user', content: 'hi' }], ...extra });

  test('a stream that ends after its finish_reason without [DONE] still gets exactly one [DONE]', async () => {
    upstream.on(() => ({ status: 200, headers: SSE, steps: [TEXT, FINISH, chunk({ choices: [], usage: USAGE })] }));
    const raw = await ask();
    assert.equal(raw.status, 200);
    assert.equal(count(raw.text, 'data: [DONE]'), 1);
    assert.ok(raw.text.endsWith('data: [DONE]\n\n'));
    assert.doesNotMatch(raw.text, /"error"/);
    const line = gw.finished().at(-1)!;
    assert.equal(line['outcome'], 'ok');
    assert.deepEqual(line['tokens'], { input: 7, cached: 0, output: 1, reasoning: 0 });

    upstream.on(() => ({ status: 200, headers: SSE, steps: [TEXT, FINISH, 'data: [DONE]\n\n'] }));
    assert.equal(count((await ask()).text, 'data: [DONE]'), 1, 'an upstream [DONE] is not doubled');

    upstream.on(() => ({ status: 200, headers: SSE, steps: [TEXT, FINISH] }));
    const s = await client.chat.completions.create({ model: 'gpt-test', stream: true, messages: [{ role: 'user', content: 'hi' }] });
    let text = '';
    for await (const c of s) text += c.choices[0]?.delta?.content ?? '';
    assert.equal(text, 'Hello');
  });

  test('an unterminated last event keeps apart from the [DONE] added after it; the SDK reads the whole answer', async () => {
    const last = FINISH.slice(0, -2); // no blank line: the connection just closes
    upstream.on(() => ({ status: 200, headers: SSE, steps: [TEXT, last] }));
    const raw = await ask();
    assert.ok(raw.text.endsWith(`${last}\n\ndata: [DONE]\n\n`), JSON.stringify(raw.text.slice(-120)));
    upstream.on(() => ({ status: 200, headers: SSE, steps: [TEXT, last] }));
    const s = await client.chat.completions.create({ model: 'gpt-test', stream: true, messages: [{ role: 'user', content: 'hi' }] });
    let text = '';
    let finish: string | null = null;
    for await (const c of s) {
      text += c.choices[0]?.delta?.content ?? '';
      finish = c.choices[0]?.finish_reason ?? finish;
    }
    assert.deepEqual([text, finish], ['Hello', 'stop']);
  });

  test('a stream of nothing but [DONE] is not an answer: the call fails (or fails over)', async () => {
    upstream.on(() => ({ status: 200, headers: SSE, steps: ['data: [DONE]\n\n'] }));
    const raw = await ask();
    assert.equal(raw.status, 502, raw.text);
    assert.equal((JSON.parse(raw.text) as { error: { code: string } }).error.code, 'upstream_stream_error');
  });

  test('a stream cut before any finish_reason ends with one error event, not a silent cut', async () => {
    upstream.on(() => ({ status: 200, headers: SSE, steps: [TEXT] }));
    const raw = await ask();
    assert.equal(count(raw.text, '"error"'), 1);
    assert.match(raw.text, /upstream_stream_error/);
    assert.equal(count(raw.text, '[DONE]'), 0);
  });

  for (const [label, choices] of [
    ['missing', undefined],
    ['null', null],
    ['empty', []],
  ] as const) {
    test(`a usage-only chunk with choices ${label} is held back unless the client asked for usage`, async () => {
      const usageChunk = chunk({ ...(choices === undefined ? {} : { choices }), usage: USAGE });
      upstream.on(() => ({ status: 200, headers: SSE, steps: [TEXT, FINISH, usageChunk, 'data: [DONE]\n\n'] }));
      const plain = await ask();
      assert.equal(count(plain.text, '"usage"'), 0, 'not asked: not sent');
      assert.deepEqual(gw.finished().at(-1)!['tokens'], { input: 7, cached: 0, output: 1, reasoning: 0 }, 'still counted');
      const asked = await ask({ stream_options: { include_usage: true } });
      assert.equal(count(asked.text, '"usage"'), 1, 'asked: sent once');
      assert.ok(asked.text.includes(usageChunk), 'as the upstream sent it');
    });
  }

  test('a data frame that is not JSON never reaches the client: before the first byte the call fails, after it the stream ends with one error event', async () => {
    const bad = 'data: {"id":"c1","choices":[{"delta":{"content":"x"}\n\n';
    upstream.on(() => ({ status: 200, headers: SSE, steps: [bad, TEXT, FINISH, 'data: [DONE]\n\n'] }));
    const early = await ask();
    assert.equal(early.status, 502);
    assert.equal((JSON.parse(early.text) as { error: { code: string } }).error.code, 'upstream_bad_response');

    upstream.on(() => ({ status: 200, headers: SSE, steps: [TEXT, bad, FINISH, 'data: [DONE]\n\n'] }));
    const late = await ask();
    assert.equal(late.status, 200);
    assert.ok(!late.text.includes(bad), 'the bad frame is not relayed');
    assert.equal(count(late.text, '"error"'), 1);
    assert.match(late.text, /upstream_bad_response/);
    assert.ok(!late.text.includes('[DONE]'), 'nothing after the error event');
    assert.equal(gw.finished().at(-1)!['error_class'], 'stream');

    const s = await client.chat.completions.create({ model: 'gpt-test', stream: true, messages: [{ role: 'user', content: 'hi' }] });
    const err = await (async () => {
      for await (const _c of s) void _c;
    })().then(
      () => null,
      (e: unknown) => e,
    );
    assert.ok(err instanceof OpenAI.APIError, `the SDK raises: ${String(err)}`);
  });

  test('a JSON answer without usage is counted with the tokenizer (never free); a 200 body that is an error is a failure', async () => {
    upstream.on(() => ({
      status: 200,
      body: {
        id: 'c',
        object: 'chat.completion',
        created: 1,
        model: 'up',
        choices: [{ index: 0, message: { role: 'assistant', content: 'four words of answer' }, finish_reason: 'stop' }],
      },
    }));
    const raw = await postChat(gw, { model: 'gpt-test', messages: [{ role: 'user', content: 'a question of several words' }] });
    assert.equal(raw.status, 200);
    assert.ok(Number(raw.headers.get('x-switchyard-cost-usd')) > 0, 'priced');
    const line = gw.finished().at(-1)!;
    assert.equal(line['tokens_estimated'], true);
    const tokens = line['tokens'] as { input: number; output: number };
    assert.ok(tokens.input > 5 && tokens.output >= 4, JSON.stringify(tokens));

    upstream.on(() => ({ status: 200, body: { error: { message: 'Provider returned error', code: 502 } } }));
    const failed = await postChat(gw, { model: 'gpt-test', messages: [{ role: 'user', content: 'hi' }] });
    assert.equal(failed.status, 502, failed.text);
    assert.equal(gw.finished().at(-1)!['outcome'], 'upstream_error');
  });

  test('a literal extra_body object is unwrapped into the body; the key never reaches the upstream', async () => {
    upstream.on(() => ({
      status: 200,
      body: {
        id: 'c',
        object: 'chat.completion',
        created: 1,
        model: 'up',
        choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }],
        usage: USAGE,
      },
    }));
    const raw = await postChat(gw, {
      model: 'gpt-test',
      messages: [{ role: 'user', content: 'hi' }],
      temperature: 1,
      extra_body: { temperature: 0.2, top_k: 5 },
    });
    assert.equal(raw.status, 200);
    const sent = upstream.requests.at(-1)!.json!;
    assert.equal(sent['extra_body'], undefined);
    assert.equal(sent['top_k'], 5);
    assert.equal(sent['temperature'], 0.2, 'extra_body wins, as in the SDKs');

    for (const extra of [{ model: 123 }, { stream: true }, { extra_body: { x: 1 } }]) {
      const reserved = await postChat(gw, { model: 'gpt-test', messages: [{ role: 'user', content: 'hi' }], extra_body: extra });
      assert.equal(reserved.status, 400, JSON.stringify(extra));
      assert.match((JSON.parse(reserved.text) as { error: { message: string } }).error.message, /top level/);
    }
    const bad = await postChat(gw, { model: 'gpt-test', messages: [{ role: 'user', content: 'hi' }], extra_body: 'top_k=5' });
    assert.equal(bad.status, 400);
    const err = (JSON.parse(bad.text) as { error: { param: string; message: string } }).error;
    assert.equal(err.param, 'extra_body');
    assert.match(err.message, /must be an object/);
  });
});

/** An Anthropic text stream recording, and the text its `text_delta` events carry. */
const ANTHROPIC_TEXT = 'anthropic-messages-stream-text.chunks.jsonl';

function recordedText(): string {
  let text = '';
  for (const p of anthropicPayloads(ANTHROPIC_TEXT)) {
    const delta = p['delta'] as { type?: string; text?: string } | undefined;
    if (p['type'] === 'content_block_delta' && delta?.type === 'text_delta') text += delta.text ?? '';
  }
  return text;
}

describe('stream repair and request translation with an anthropic upstream', () => {
  let upstream: FakeUpstream;
  let gw: TestGateway;

  // A fresh gateway per test: retry budgets and cooldowns must not carry over.
  before(async () => {
    upstream = await new FakeUpstream().start();
  });
  after(() => closeAll(upstream));
  beforeEach(async () => {
    upstream.requests.length = 0;
    gw = await startGateway(anthropicConfigYaml(upstream.url, '  max_attempts: 3\n  backoff_base_ms: 5\n  backoff_cap_ms: 10'));
  });
  afterEach(() => closeAll(gw));

  const ask = (extra: Record<string, unknown> = {}) =>
    postChat(gw, { model: 'claude-test', stream: true, messages: [{ role: 'user', content: 'hi' }], ...extra });

  // An earlier README (API, Streams; now docs/api.md, "What the client sees"): a stream is
  // broken only when it ends "with neither [DONE] nor a finish_reason". An Anthropic stream
  // that delivered message_delta (with its stop_reason) but no message_stop has a
  // finish_reason, so the answer is complete: its chunks reach the client and the prompt is
  // not sent to the upstream again.
  test('a stream with message_delta but no message_stop, in one read, still reaches the client', async () => {
    const events = anthropicEvents(ANTHROPIC_TEXT).filter((e) => !e.includes('message_stop'));
    upstream.on(() => ({ status: 200, headers: SSE, steps: [events.join('')] }));
    const res = await ask();
    assert.equal(res.status, 200, `status ${res.status}: ${res.text}`);
    assert.match(res.headers.get('content-type') ?? '', /text\/event-stream/);
    let text = '';
    for (const line of res.text.split('\n')) {
      if (!line.startsWith('data: {"id"')) continue;
      const c = JSON.parse(line.slice(6)) as { choices: { delta?: { content?: string } }[] };
      text += c.choices[0]?.delta?.content ?? '';
    }
    assert.equal(text, recordedText());
    assert.equal(upstream.requests.length, 1, 'the completed answer must not be requested again');
  });

  // An earlier README: "Events before an error in the same read still go out first", and a stream that
  // broke after its first event is not retried: the client gets the translated events, then
  // one error event, and the upstream is called once.
  test('events translated before a non-JSON event in the same read are relayed, not retried', async () => {
    const events = anthropicEvents(ANTHROPIC_TEXT).slice(0, 4); // message_start, block_start, ping, "Hello"
    upstream.on(() => ({
      status: 200,
      headers: SSE,
      steps: [events.join('') + 'event: content_block_delta\ndata: {not json\n\n'],
    }));
    const res = await ask();
    assert.equal(res.status, 200, `status ${res.status}: ${res.text}`);
    assert.match(res.text, /"content":"Hello"/);
    assert.match(res.text, /data: \{"error":/);
    assert.equal(upstream.requests.length, 1);
  });

  // Anthropic (Extended thinking, "Preserving thinking blocks"): with thinking enabled, the
  // last assistant turn of a tool loop must start with its thinking block, or the call fails
  // with 400 "Expected `thinking` or `redacted_thinking`, but found `tool_use`". OpenAI chat
  // clients cannot send thinking blocks (the translation drops signatures), so the gateway
  // must not send `thinking` together with a trailing assistant tool_use turn that has no
  // thinking block. The fake upstream answers 400 exactly as Anthropic does when it would.
  test('reasoning_effort in a tool-result follow-up does not produce a request Anthropic rejects', async () => {
    upstream.on((req) => {
      const body = req.json as { thinking?: unknown; messages: { role: string; content: { type: string }[] }[] };
      const lastAssistant = [...body.messages].reverse().find((m) => m.role === 'assistant');
      if (body.thinking && lastAssistant && lastAssistant.content.some((b) => b.type === 'tool_use') && lastAssistant.content[0]?.type !== 'thinking') {
        return {
          status: 400,
          body: {
            type: 'error',
            error: {
              type: 'invalid_request_error',
              message:
                'messages.1.content.0.type: Expected `thinking` or `redacted_thinking`, but found `tool_use`. When `thinking` is enabled, a final `assistant` message must start with a thinking block.',
            },
          },
        };
      }
      return {
        status: 200,
        body: {
          id: 'msg_1',
          type: 'message',
          role: 'assistant',
          model: 'claude-upstream-id',
          content: [{ type: 'text', text: 'Sunny.' }],
          stop_reason: 'end_turn',
          usage: { input_tokens: 10, output_tokens: 2 },
        },
      };
    });
    const res = await postChat(gw, {
      model: 'claude-test',
      reasoning_effort: 'medium',
      tools: [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object', properties: {} } } }],
      messages: [
        { role: 'user', content: 'weather in Paris?' },
        {
          role: 'assistant',
          content: null,
          reasoning_content: 'I should call the tool.',
          tool_calls: [{ id: 'toolu_1', type: 'function', function: { name: 'get_weather', arguments: '{}' } }],
        },
        { role: 'tool', tool_call_id: 'toolu_1', content: 'sunny' },
      ],
    });
    assert.equal(res.status, 200, `status ${res.status}: ${res.text}`);
  });
});
