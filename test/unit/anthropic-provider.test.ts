/**
 * The anthropic provider against a scripted fake Anthropic on loopback: request path and
 * headers, native `messages` passthrough, and the `chat` translation of JSON replies,
 * error replies and SSE streams (including a client abort reaching the upstream).
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { LiveUpstream } from '../../src/config/load.js';
import { createAnthropic } from '../../src/providers/anthropic/index.js';
import type { Provider, SendRequest, UpstreamResponse } from '../../src/providers/types.js';
import { FakeUpstream } from '../helpers/fake-upstream.js';
import { fixture, fixtureJson, sseEvents } from '../helpers/recordings.js';

type Obj = Record<string, unknown>;

let fake: FakeUpstream;
let provider: Provider;

before(async () => {
  fake = await new FakeUpstream().start();
  const upstream = {
    id: 'anthropic-test',
    provider: 'anthropic',
    base_url: `${fake.url}/v1`,
    apiKey: 'sk-ant-test-key',
    region: 'default',
    max_concurrency: 4,
    timeouts: { connect_ms: 2000, first_byte_ms: 5000, idle_ms: 5000 },
    headers: { 'anthropic-beta': 'beta-a' },
    options: { default_max_tokens: 1000 },
  } as unknown as LiveUpstream;
  provider = createAnthropic(upstream);
});

after(async () => {
  await provider.close();
  await fake.close();
});

function req(extra: Partial<SendRequest> & Pick<SendRequest, 'api' | 'body'>): SendRequest {
  return { stream: false, requestId: 'req-123', signal: new AbortController().signal, ...extra };
}

async function text(res: UpstreamResponse): Promise<string> {
  const parts: Buffer[] = [];
  for await (const c of res.body) parts.push(Buffer.from(c as Buffer));
  return Buffer.concat(parts).toString('utf8');
}

const CHAT = { model: 'claude-sonnet-4-5', messages: [{ role: 'user', content: 'hi' }] };

describe('anthropic provider', () => {
  test('serves chat and messages', () => {
    assert.deepEqual([...provider.apis].sort(), ['chat', 'messages']);
  });

  test('chat JSON: translated request, headers, translated reply', async () => {
    const msg = fixtureJson('anthropic-messages-text.json');
    fake.on(() => ({ status: 200, body: msg, gzip: true }));
    const res = await provider.send(req({ api: 'chat', body: CHAT, forwardHeaders: { 'anthropic-beta': 'beta-b' } }));
    const r = fake.requests.at(-1)!;
    assert.equal(r.url, '/v1/messages');
    assert.equal(r.headers['x-api-key'], 'sk-ant-test-key');
    assert.equal(r.headers['anthropic-version'], '2023-06-01');
    assert.equal(r.headers['anthropic-beta'], 'beta-a,beta-b');
    assert.equal(r.headers['x-request-id'], 'req-123');
    assert.equal(r.headers['authorization'], undefined);
    assert.deepEqual(r.json, { model: 'claude-sonnet-4-5', messages: [{ role: 'user', content: [{ type: 'text', text: 'hi' }] }], max_tokens: 1000 });

    assert.equal(res.statusCode, 200);
    assert.equal(res.headers['content-type'], 'application/json');
    const out = JSON.parse(await text(res)) as Obj;
    assert.equal(out['object'], 'chat.completion');
    const content = ((msg['content'] as Obj[])[0]!)['text'];
    assert.equal(((out['choices'] as Obj[])[0]!['message'] as Obj)['content'], content);
  });

  test('chat error: Anthropic 529 -> OpenAI 503 with retry-after kept', async () => {
    fake.on(() => ({ status: 529, headers: { 'retry-after': '3' }, body: { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } } }));
    const res = await provider.send(req({ api: 'chat', body: CHAT }));
    assert.equal(res.statusCode, 503);
    assert.equal(res.headers['retry-after'], '3');
    assert.deepEqual(JSON.parse(await text(res)), { error: { message: 'Overloaded', type: 'server_error', param: null, code: 'overloaded' } });
  });

  test('chat error: recorded 404', async () => {
    fake.on(() => ({ status: 404, body: fixture('anthropic-error-404-not-found.json') }));
    const res = await provider.send(req({ api: 'chat', body: CHAT }));
    assert.equal(res.statusCode, 404);
    assert.equal((JSON.parse(await text(res)) as { error: { code: string } }).error.code, 'model_not_found');
  });

  test('chat stream: SSE translated, content-length dropped', async () => {
    fake.on(() => ({ status: 200, steps: sseEvents('anthropic-messages-stream-thinking.sse') }));
    const res = await provider.send(req({ api: 'chat', body: { ...CHAT, stream: true, reasoning_effort: 'low' }, stream: true }));
    const sent = fake.requests.at(-1)!;
    assert.equal(sent.json!['stream'], true);
    assert.equal(sent.headers['accept'], 'text/event-stream');
    assert.deepEqual(sent.json!['thinking'], { type: 'enabled', budget_tokens: 2048 });
    assert.equal(res.statusCode, 200);
    assert.equal(res.headers['content-type'], 'text/event-stream; charset=utf-8');
    assert.equal(res.headers['content-length'], undefined);
    const body = await text(res);
    assert.ok(body.endsWith('data: [DONE]\n\n'));
    assert.match(body, /"reasoning_content":"This"/);
    assert.ok(!body.includes('event: '));
  });

  test('chat stream: destroying the returned body aborts the upstream', async () => {
    fake.on(() => ({
      status: 200,
      steps: [
        'event: message_start\ndata: {"type":"message_start","message":{"id":"msg_1","model":"claude","usage":{"input_tokens":3,"output_tokens":1}}}\n\n',
        { delayMs: 5000 },
        'event: message_stop\ndata: {"type":"message_stop"}\n\n',
      ],
    }));
    const res = await provider.send(req({ api: 'chat', body: CHAT, stream: true }));
    const first = await new Promise<Buffer>((resolve) => res.body.once('data', resolve));
    assert.match(first.toString('utf8'), /"role":"assistant"/);
    res.body.on('error', () => {});
    res.body.destroy();
    const r = fake.requests.at(-1)!;
    for (let i = 0; i < 100 && r.abortedAt === null; i++) await new Promise((resolve) => setTimeout(resolve, 10));
    assert.notEqual(r.abortedAt, null, 'the upstream connection was closed');
  });

  test('chat stream: an error event ends the reply at once and releases the upstream', async () => {
    fake.on(() => ({
      status: 200,
      steps: [
        'event: message_start\ndata: {"type":"message_start","message":{"id":"msg_2","model":"claude","usage":{"input_tokens":3,"output_tokens":1}}}\n\n',
        'event: error\ndata: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}\n\n',
        { delayMs: 3000 },
        'event: message_stop\ndata: {"type":"message_stop"}\n\n',
      ],
    }));
    const started = Date.now();
    const res = await provider.send(req({ api: 'chat', body: CHAT, stream: true }));
    res.body.on('error', () => {});
    const body = await text(res);
    assert.ok(Date.now() - started < 2000, 'the reply ended without waiting for the upstream');
    assert.ok(body.endsWith('data: {"error":{"message":"Overloaded","type":"server_error","param":null,"code":"overloaded"}}\n\n'));
    const r = fake.requests.at(-1)!;
    for (let i = 0; i < 100 && r.abortedAt === null; i++) await new Promise((resolve) => setTimeout(resolve, 10));
    assert.notEqual(r.abortedAt, null, 'the upstream connection was closed');
  });

  test('messages: body and reply passed through untouched', async () => {
    const raw = fixture('anthropic-messages-thinking-tool-use.json');
    fake.on(() => ({ status: 200, body: raw }));
    const body = { model: 'claude-sonnet-4', max_tokens: 50, messages: [{ role: 'user', content: 'hi' }], thinking: { type: 'enabled', budget_tokens: 1024 } };
    const res = await provider.send(req({ api: 'messages', body }));
    assert.equal(fake.requests.at(-1)!.body, JSON.stringify(body));
    assert.equal(res.statusCode, 200);
    assert.equal(await text(res), raw.toString('utf8'));
    fake.on(() => ({ status: 400, body: fixture('anthropic-error-400-invalid-request.json') }));
    const err = await provider.send(req({ api: 'messages', body }));
    assert.equal(err.statusCode, 400);
    assert.equal(await text(err), fixture('anthropic-error-400-invalid-request.json').toString('utf8'));
  });
});
