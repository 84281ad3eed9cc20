/**
 * What reaches a chat client from an upstream stream that is not quite right: a stream that
 * ends after its finish_reason without `[DONE]`, usage-only chunks with `choices` missing or
 * null, and `data:` frames that are not JSON; plus `extra_body` sent literally in a body.
 * Driven with raw HTTP (to see every byte) and the official `openai` SDK (to see what a user
 * sees).
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import OpenAI from 'openai';
import { closeAll, postChat, startWithUpstream, testConfigYaml, type TestGateway } from '../helpers/gateway.js';
import type { FakeUpstream } from '../helpers/fake-upstream.js';

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

  test('a stream cut before any finish_reason ends with one error event, not a silent cut', async () => {
    upstream.on(() => ({ status: 200, headers: SSE, steps: [TEXT] }));
    const raw = await ask();
    assert.equal(count(raw.text, '"error"'), 1);
    assert.match(raw.text, /upstream_stream_error/);
    assert.equal(count(raw.text, '[DONE]'), 0);
  });

  for (const [label, choices] of [['missing', undefined], ['null', null], ['empty', []]] as const) {
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

  test('a literal extra_body object is unwrapped into the body; the key never reaches the upstream', async () => {
    upstream.on(() => ({ status: 200, body: { id: 'c', object: 'chat.completion', created: 1, model: 'up', choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }], usage: USAGE } }));
    const raw = await postChat(gw, { model: 'gpt-test', messages: [{ role: 'user', content: 'hi' }], temperature: 1, extra_body: { temperature: 0.2, top_k: 5 } });
    assert.equal(raw.status, 200);
    const sent = upstream.requests.at(-1)!.json!;
    assert.equal(sent['extra_body'], undefined);
    assert.equal(sent['top_k'], 5);
    assert.equal(sent['temperature'], 0.2, 'extra_body wins, as in the SDKs');

    const bad = await postChat(gw, { model: 'gpt-test', messages: [{ role: 'user', content: 'hi' }], extra_body: 'top_k=5' });
    assert.equal(bad.status, 400);
    const err = (JSON.parse(bad.text) as { error: { param: string; message: string } }).error;
    assert.equal(err.param, 'extra_body');
    assert.match(err.message, /must be an object/);
  });
});
