/**
 * The anthropic provider (transport and auth only) against a scripted fake Anthropic on
 * loopback, with the chat -> messages translator on top as the pipeline uses them: request
 * path and headers, native `messages` bodies sent untouched, and the translation of JSON
 * replies, error replies and SSE streams; an abort reaching the upstream.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { LiveUpstream } from '../../src/config/load.js';
import { createAnthropic } from '../../src/providers/anthropic/index.js';
import type { Provider, UpstreamResponse, WireRequest } from '../../src/providers/types.js';
import { FakeUpstream } from '../helpers/fake-upstream.js';
import { fixture, fixtureJson, sseEvents } from '../helpers/recordings.js';
import { drive, makeTranslator } from '../helpers/translate.js';

type Obj = Record<string, unknown>;

let fake: FakeUpstream;
let provider: Provider;
const OPTIONS = { default_max_tokens: 1000 };

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
    options: OPTIONS,
  } as unknown as LiveUpstream;
  provider = createAnthropic(upstream);
});

after(async () => {
  await provider.close();
  await fake.close();
});

function req(extra: Partial<WireRequest> & Pick<WireRequest, 'body'>): WireRequest {
  return { api: 'messages', stream: false, requestId: 'req-123', signal: new AbortController().signal, ...extra };
}

async function bytes(res: UpstreamResponse): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const c of res.body) parts.push(Buffer.from(c as Buffer));
  return Buffer.concat(parts);
}

const text = async (res: UpstreamResponse): Promise<string> => (await bytes(res)).toString('utf8');

const CHAT = { model: 'claude-sonnet-4-5', messages: [{ role: 'user', content: 'hi' }] };

/** The chat -> messages translator as one attempt makes it. */
const chatTr = (stream = false) => makeTranslator('chat', 'messages', { stream, wantsUsage: true, options: OPTIONS, secrets: ['sk-ant-test-key'] });

describe('anthropic provider', () => {
  test('speaks the messages wire API only', () => {
    assert.deepEqual([...provider.wireApis], ['messages']);
  });

  test('chat JSON: translated request, headers, translated reply', async () => {
    const msg = fixtureJson('anthropic-messages-text.json');
    fake.on(() => ({ status: 200, body: msg, gzip: true }));
    const tr = chatTr();
    const wire = tr.request(CHAT);
    const res = await provider.send(req({ body: wire.body, headers: { 'anthropic-beta': 'beta-b' } }));
    const r = fake.requests.at(-1)!;
    assert.equal(r.url, '/v1/messages');
    assert.equal(r.headers['x-api-key'], 'sk-ant-test-key');
    assert.equal(r.headers['anthropic-version'], '2023-06-01');
    assert.equal(r.headers['anthropic-beta'], 'beta-a,beta-b');
    assert.equal(r.headers['x-request-id'], 'req-123');
    assert.equal(r.headers['authorization'], undefined);
    assert.deepEqual(r.json, { model: 'claude-sonnet-4-5', messages: [{ role: 'user', content: [{ type: 'text', text: 'hi' }] }], max_tokens: 1000 });

    assert.equal(res.statusCode, 200);
    const raw = await bytes(res);
    const answer = tr.json(raw, JSON.parse(raw.toString('utf8')));
    const out = JSON.parse(answer.body.toString('utf8')) as Obj;
    assert.deepEqual(answer.usage, { input: (msg['usage'] as Obj)['input_tokens'], cached: 0, output: (msg['usage'] as Obj)['output_tokens'], reasoning: 0 });
    assert.equal(out['object'], 'chat.completion');
    const content = (msg['content'] as Obj[])[0]!['text'];
    assert.equal(((out['choices'] as Obj[])[0]!['message'] as Obj)['content'], content);
  });

  test('chat error: Anthropic 529 -> OpenAI 503 with retry-after kept', async () => {
    fake.on(() => ({ status: 529, headers: { 'retry-after': '3' }, body: { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } } }));
    const tr = chatTr();
    const res = await provider.send(req({ body: tr.request(CHAT).body }));
    assert.equal(res.statusCode, 529);
    const failure = tr.error(res.statusCode, res.headers, await bytes(res));
    assert.equal(failure.classified.class, 'overloaded');
    assert.equal(failure.error.status, 503);
    assert.equal(failure.error.headers['retry-after'], '3');
    assert.deepEqual(
      { message: failure.error.message, type: failure.error.type, code: failure.error.openaiCode },
      { message: 'Overloaded', type: 'server_error', code: 'overloaded' },
    );
  });

  test('chat error: recorded 404', async () => {
    fake.on(() => ({ status: 404, body: fixture('anthropic-error-404-not-found.json') }));
    const tr = chatTr();
    const res = await provider.send(req({ body: tr.request(CHAT).body }));
    assert.equal(res.statusCode, 404);
    const failure = tr.error(res.statusCode, res.headers, await bytes(res));
    assert.equal(failure.error.status, 404);
    assert.equal(failure.error.openaiCode, 'model_not_found');
  });

  test('chat stream: SSE translated', async () => {
    fake.on(() => ({ status: 200, steps: sseEvents('anthropic-messages-stream-thinking.sse') }));
    const tr = chatTr(true);
    const res = await provider.send(req({ body: tr.request({ ...CHAT, stream: true, reasoning_effort: 'low' }).body, stream: true }));
    const sent = fake.requests.at(-1)!;
    assert.equal(sent.json!['stream'], true);
    assert.equal(sent.headers['accept'], 'text/event-stream');
    assert.deepEqual(sent.json!['thinking'], { type: 'enabled', budget_tokens: 2048 });
    assert.equal(res.statusCode, 200);
    const body = drive(tr, [await bytes(res)]).text;
    assert.ok(body.endsWith('data: [DONE]\n\n'));
    assert.match(body, /"reasoning_content":"This"/);
    assert.ok(!body.includes('event: '));
  });

  test('an aborted call closes the upstream connection', async () => {
    fake.on(() => ({
      status: 200,
      steps: [
        'event: message_start\ndata: {"type":"message_start","message":{"id":"msg_1","model":"claude","usage":{"input_tokens":3,"output_tokens":1}}}\n\n',
        { delayMs: 5000 },
        'event: message_stop\ndata: {"type":"message_stop"}\n\n',
      ],
    }));
    const abort = new AbortController();
    const res = await provider.send(req({ body: chatTr(true).request(CHAT).body, stream: true, signal: abort.signal }));
    const first = await new Promise<Buffer>((resolve) => res.body.once('data', resolve));
    assert.match(first.toString('utf8'), /message_start/);
    res.body.on('error', () => {});
    abort.abort();
    const r = fake.requests.at(-1)!;
    for (let i = 0; i < 100 && r.abortedAt === null; i++) await new Promise((resolve) => setTimeout(resolve, 10));
    assert.notEqual(r.abortedAt, null, 'the upstream connection was closed');
  });

  test('messages: body and reply passed through untouched', async () => {
    const raw = fixture('anthropic-messages-thinking-tool-use.json');
    fake.on(() => ({ status: 200, body: raw }));
    const body = { model: 'claude-sonnet-4', max_tokens: 50, messages: [{ role: 'user', content: 'hi' }], thinking: { type: 'enabled', budget_tokens: 1024 } };
    const res = await provider.send(req({ body: makeTranslator('messages', 'messages', { stream: false }).request(body).body }));
    assert.equal(fake.requests.at(-1)!.body, JSON.stringify(body));
    assert.equal(res.statusCode, 200);
    assert.equal(await text(res), raw.toString('utf8'));
    fake.on(() => ({ status: 400, body: fixture('anthropic-error-400-invalid-request.json') }));
    const err = await provider.send(req({ body }));
    assert.equal(err.statusCode, 400);
    assert.equal(await text(err), fixture('anthropic-error-400-invalid-request.json').toString('utf8'));
  });
});
