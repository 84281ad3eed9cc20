/**
 * A stream that fails before its first token is failed over invisibly to the next upstream
 * (an error event as the first event, or a plain JSON answer to a streaming request), unless
 * the error is the caller's (a 400, not retried). A stream that breaks after bytes reached
 * the client ends with exactly one final `data: {"error":{…}}` event (never a silent cut,
 * never `[DONE]` after it); the official `openai` client raises an APIError while iterating,
 * after the chunks sent before the break. Also: timeouts (first byte vs idle) and the SSE
 * response headers / incremental delivery.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import OpenAI, { APIConnectionError, APIError } from 'openai';
import { FakeUpstream, type ScriptedReply, type Step } from '../helpers/fake-upstream.js';
import { sseEvents } from '../helpers/recordings.js';
import { CLIENT_KEY, closeAll, postChat, startGateway, startWithUpstream, testConfigYaml, waitFor, type TestGateway } from '../helpers/gateway.js';

const NO_USAGE = 'openai-chat-stream-text-no-usage-2023.sse';
const SSE_HEADERS = { 'content-type': 'text/event-stream; charset=utf-8' };

/** The first `n` events of the no-usage recording: all content deltas, none with a finish reason. */
function firstEvents(n: number): string[] {
  const evs = sseEvents(NO_USAGE).slice(0, n);
  for (const e of evs) {
    assert.doesNotMatch(e, /"finish_reason":"/, 'fixture prefix must not carry a finish reason');
    assert.doesNotMatch(e, /\[DONE\]/);
  }
  return evs;
}

function chunk(i: number, content: string | null, finish: string | null = null): string {
  const delta = content === null ? {} : { content };
  return `data: ${JSON.stringify({
    id: 'chatcmpl-test',
    object: 'chat.completion.chunk',
    created: 1700000000,
    model: 'upstream-model-x',
    choices: [{ index: 0, delta, finish_reason: finish }],
  })}\n\n`;
}

function streamReply(steps: Step[]): ScriptedReply {
  return { status: 200, headers: SSE_HEADERS, steps };
}

interface RawResult {
  status: number;
  headers: Headers;
  text: string;
  events: string[];
}

async function rawStream(gw: TestGateway): Promise<RawResult> {
  const res = await fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${CLIENT_KEY}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'gpt-test', messages: [{ role: 'user', content: 'hello' }], stream: true }),
  });
  // A silent cut (socket destroyed without an error event) rejects here and fails the test.
  const text = await res.text();
  return { status: res.status, headers: res.headers, text, events: text.split(/(?<=\n\n)/).filter((e) => e.trim() !== '') };
}

interface Collected {
  chunks: OpenAI.Chat.Completions.ChatCompletionChunk[];
  error: unknown;
}

async function collect(client: OpenAI): Promise<Collected> {
  const chunks: OpenAI.Chat.Completions.ChatCompletionChunk[] = [];
  try {
    const stream = await client.chat.completions.create({ model: 'gpt-test', messages: [{ role: 'user', content: 'hello' }], stream: true });
    for await (const c of stream) chunks.push(c);
    return { chunks, error: null };
  } catch (error) {
    return { chunks, error };
  }
}

/** Parses the final event of a broken stream: must be exactly one `data: {"error":{…}}` event. */
function finalErrorEvent(raw: RawResult): { message: string; type: string; param: unknown; code: unknown } {
  assert.equal(raw.status, 200);
  assert.ok(raw.events.length > 0, 'stream had events');
  assert.doesNotMatch(raw.text, /\[DONE\]/, 'no [DONE] on a broken stream');
  const last = raw.events.at(-1)!;
  const m = /^data: (\{.*\})\n\n$/s.exec(last);
  assert.ok(m, `last event is a single data event, got ${JSON.stringify(last)}`);
  const body = JSON.parse(m[1]!) as { error?: { message: string; type: string; param: unknown; code: unknown } };
  assert.ok(body.error && typeof body.error === 'object', 'final event carries an error object');
  assert.deepEqual(Object.keys(body.error).sort(), ['code', 'message', 'param', 'type']);
  assert.equal(typeof body.error.message, 'string');
  assert.ok(body.error.message.length > 0);
  assert.equal(typeof body.error.type, 'string');
  // Only one error event.
  assert.equal(raw.events.filter((e) => /"error"\s*:/.test(e) && !/"choices"/.test(e)).length, 1);
  return body.error;
}

function assertApiErrorAfter(got: Collected, wantChunks: number): APIError {
  assert.ok(got.error, 'the openai client raised');
  assert.ok(got.error instanceof APIError, `APIError expected, got ${String(got.error)}`);
  assert.ok(!(got.error instanceof APIConnectionError), `an error event, not a connection failure: ${String(got.error)}`);
  assert.equal(got.chunks.length, wantChunks, 'chunks before the break were delivered');
  return got.error;
}

describe('stream failures before the first token', () => {
  let a: FakeUpstream;
  let b: FakeUpstream;
  let gw: TestGateway;
  before(async () => {
    a = await new FakeUpstream().start();
    b = await new FakeUpstream().start();
    // `cheap` tries `fake` (a) first, then `fake2` (b); no cooldown and no retry budget
    // limit, so every request here fails over the same way.
    const routing =
      '  strategy: cheap\n  max_attempts: 4\n  backoff_base_ms: 1\n  backoff_cap_ms: 1\n  retry_budget: { min_retries: 1000 }\n  cooldown: { failures: 1000 }';
    gw = await startGateway(testConfigYaml(a.url, { extraUpstreams: [b.url], routing }));
  });
  after(() => closeAll(gw, a, b));

  const post = () => postChat(gw, { model: 'gpt-test', stream: true, messages: [{ role: 'user', content: 'hi' }] });
  const okStream = (text: string): ScriptedReply => streamReply([chunk(0, text), chunk(1, null, 'stop'), 'data: [DONE]\n\n']);

  test('an error event as the very first event fails over invisibly', async () => {
    a.on(() => streamReply(['data: {"error":{"message":"overloaded before start","type":"server_error","code":"overloaded"}}\n\n']));
    b.on(() => okStream('from b'));
    for (let i = 0; i < 3; i++) {
      const r = await post();
      assert.equal(r.status, 200);
      assert.equal(r.headers.get('x-switchyard-upstream'), 'fake2');
      assert.equal(r.headers.get('x-switchyard-attempts'), '2');
      assert.match(r.text, /from b/);
      assert.doesNotMatch(r.text, /overloaded/);
    }
  });

  test('a caller fault reported as the first event comes back as a 400, not retried', async () => {
    a.on(() => streamReply(['data: {"error":{"code":400,"message":"Token limit reached"}}\n\n']));
    b.on(() => okStream('from b'));
    const before = b.requests.length;
    const r = await post();
    assert.equal(r.status, 400);
    assert.equal((JSON.parse(r.text) as { error: { message: string } }).error.message, 'Token limit reached');
    assert.equal(b.requests.length, before);
  });

  test('a streaming request answered with plain JSON fails over to a real stream', async () => {
    a.on(() => ({
      status: 200,
      body: {
        id: 'c',
        object: 'chat.completion',
        created: 1,
        model: 'm',
        choices: [{ index: 0, message: { role: 'assistant', content: 'json from a' }, finish_reason: 'stop' }],
        usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
      },
    }));
    b.on(() => okStream('stream from b'));
    const r = await post();
    assert.equal(r.status, 200);
    assert.match(r.headers.get('content-type') ?? '', /text\/event-stream/);
    assert.match(r.text, /stream from b/);
    assert.match(r.text, /data: \[DONE\]/);
  });
});

describe('stream failures after the first byte', () => {
  let upstream: FakeUpstream;
  let gw: TestGateway;

  before(async () => {
    ({ upstream, gw } = await startWithUpstream());
  });
  after(() => closeAll(gw, upstream));

  test('socket reset mid-stream ends with one error event and the client raises APIError', async () => {
    const sent = firstEvents(4);
    upstream.on(() => streamReply([...sent, { delayMs: 30 }, { destroy: true }]));

    const before = gw.finished().length;
    const raw = await rawStream(gw);
    assert.deepEqual(raw.events.slice(0, -1), sent, 'events before the break relayed byte for byte');
    const err = finalErrorEvent(raw);
    assert.equal(err.code, 'upstream_stream_error');
    assert.equal(err.type, 'server_error');
    const line = await waitFor(() => gw.finished()[before], 2000, 'request log line');
    assert.equal(line['outcome'], 'upstream_error');
    assert.equal(line['status'], 200);

    const got = await collect(gw.client());
    const e = assertApiErrorAfter(got, 4);
    assert.equal(e.code, 'upstream_stream_error');
    assert.equal(got.chunks[1]!.choices[0]!.delta.content, '(');
  });

  test('an upstream `event: error` ends the stream with one error event carrying its message', async () => {
    const sent = firstEvents(3);
    const errEvent = 'event: error\ndata: {"error":{"message":"The server is overloaded, try later.","type":"server_error","code":"overloaded"}}\n\n';
    // The error arrives in the same write as one more chunk before it and more data + [DONE] after it.
    const tail = sseEvents(NO_USAGE).slice(3, 5).join('');
    upstream.on(() => streamReply([sent[0]!, sent[1]!, { delayMs: 20 }, sent[2]! + errEvent + tail + 'data: [DONE]\n\n']));

    const raw = await rawStream(gw);
    assert.deepEqual(raw.events.slice(0, -1), sent, 'nothing after the upstream error event is relayed');
    const err = finalErrorEvent(raw);
    assert.equal(err.message, 'The server is overloaded, try later.');
    assert.equal(err.code, 'overloaded');
    assert.doesNotMatch(raw.text, /^event: error/m, 'the error is re-rendered as a plain data event');

    const got = await collect(gw.client());
    const e = assertApiErrorAfter(got, 3);
    assert.match(e.message, /overloaded/);
  });

  test('a clean close without [DONE] and without a finish reason ends with an error event', async () => {
    const sent = firstEvents(6);
    upstream.on(() => streamReply(sent));

    const before = gw.finished().length;
    const raw = await rawStream(gw);
    assert.deepEqual(raw.events.slice(0, -1), sent);
    const err = finalErrorEvent(raw);
    assert.equal(err.code, 'upstream_stream_error');
    const line = await waitFor(() => gw.finished()[before], 2000, 'request log line');
    assert.equal(line['outcome'], 'upstream_error');
    assert.equal(line['error_class'], 'stream');

    const got = await collect(gw.client());
    assertApiErrorAfter(got, 6);
  });

  test('a complete stream (finish reason + [DONE]) is not turned into an error', async () => {
    // Control for the cases above: same helpers, healthy stream, no error event.
    const steps = [chunk(0, 'Hi'), chunk(1, ' there'), chunk(2, null, 'stop'), 'data: [DONE]\n\n'];
    upstream.on(() => streamReply(steps));
    const raw = await rawStream(gw);
    assert.deepEqual(raw.events, steps);
    const got = await collect(gw.client());
    assert.equal(got.error, null);
    assert.equal(got.chunks.length, 3);
  });

  test('SSE headers and incremental delivery: the first event arrives before the upstream pause ends', async () => {
    const evs = sseEvents(NO_USAGE);
    const first = evs[0]!;
    const rest = [...evs.slice(1, 4), evs.at(-2)!, evs.at(-1)!];
    assert.match(evs.at(-2)!, /"finish_reason":"stop"/);
    upstream.on(() => streamReply([first, { delayMs: 1000 }, ...rest]));

    const t0 = Date.now();
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${CLIENT_KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'gpt-test', messages: [{ role: 'user', content: 'hello' }], stream: true }),
    });
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^text\/event-stream/);
    assert.equal(res.headers.get('cache-control'), 'no-cache');
    assert.equal(res.headers.get('x-accel-buffering'), 'no');

    const reader = res.body!.getReader();
    const decoder = new TextDecoder();
    let received = '';
    while (!received.includes('\n\n')) {
      const { value, done } = await reader.read();
      assert.ok(!done, 'stream ended before the first event');
      received += decoder.decode(value, { stream: true });
    }
    const firstAt = Date.now() - t0;
    assert.ok(firstAt < 600, `first event after ${firstAt} ms, expected well before the 1000 ms pause ended`);
    assert.equal(received, first, 'only the first event arrived before the pause');

    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      received += decoder.decode(value, { stream: true });
    }
    const total = Date.now() - t0;
    assert.ok(total >= 950, `whole stream took ${total} ms; the upstream paused 1000 ms`);
    assert.equal(received, [first, ...rest].join(''));
  });
});

describe('stream timeouts', () => {
  let upstream: FakeUpstream;
  let gw: TestGateway;

  before(async () => {
    ({ upstream, gw } = await startWithUpstream((url) => testConfigYaml(url, { timeouts: { first_byte_ms: 300, idle_ms: 300 } })));
  });
  after(() => closeAll(gw, upstream));

  test('idle timeout between chunks ends with an error event; log outcome upstream_error', async () => {
    const sent = firstEvents(3);
    // undici's body timer has ~1 s resolution (it fires between idle_ms and idle_ms + ~1 s),
    // so the pause is long enough to tell the timeout from the upstream resuming.
    upstream.on(() => streamReply([...sent, { delayMs: 2500 }, ...sseEvents(NO_USAGE).slice(3, 6)]));

    const before = gw.finished().length;
    const t0 = Date.now();
    const raw = await rawStream(gw);
    const took = Date.now() - t0;
    assert.ok(took < 2000, `stream ended after ${took} ms, expected idle_ms (300) + timer resolution, before the 2500 ms pause ended`);
    assert.deepEqual(raw.events.slice(0, -1), sent);
    const err = finalErrorEvent(raw);
    assert.equal(err.code, 'upstream_stream_error');
    const line = await waitFor(() => gw.finished()[before], 2000, 'request log line');
    assert.equal(line['outcome'], 'upstream_error');
    assert.equal(line['error_class'], 'timeout');
    assert.equal(line['status'], 200);

    const got = await collect(gw.client());
    assertApiErrorAfter(got, 3);
  });

  test('a JSON answer whose upstream goes silent after its headers: 504 upstream_timeout, as for a stream', async () => {
    upstream.on(() => ({
      status: 200,
      headers: { 'content-type': 'application/json' },
      steps: ['{"id":"chatcmpl-1",', { delayMs: 2500 }, '"object":"chat.completion"}'],
    }));
    const r = await postChat(gw, { model: 'gpt-test', messages: [{ role: 'user', content: 'hi' }] });
    assert.equal(r.status, 504, r.text);
    assert.equal((JSON.parse(r.text) as { error: { code: string } }).error.code, 'upstream_timeout');
  });

  test('an upstream event past 32 MiB ends the stream with an error event; the gateway keeps serving', async () => {
    const sent = firstEvents(2);
    const huge = Buffer.alloc(40 * 1024 * 1024, 0x78);
    upstream.on(() => streamReply([...sent, 'data: {"x":"', huge, '"}\n\n', ...sseEvents(NO_USAGE).slice(2)]));
    const raw = await rawStream(gw);
    assert.deepEqual(raw.events.slice(0, -1), sent);
    assert.equal(finalErrorEvent(raw).code, 'upstream_bad_response');
    upstream.on(() => streamReply(sseEvents(NO_USAGE)));
    const after = await rawStream(gw);
    assert.ok(after.events.length > 2, 'the next stream is served');
  });

  test('a healthy stream longer than first_byte_ms completes (not cut by the first-byte timeout)', async () => {
    const steps: Step[] = [];
    const words: string[] = [];
    for (let i = 0; i < 19; i++) {
      words.push(`w${i} `);
      steps.push({ delayMs: 50 }, chunk(i, `w${i} `));
    }
    steps.push({ delayMs: 50 }, chunk(19, null, 'stop'), 'data: [DONE]\n\n');
    upstream.on(() => streamReply(steps));

    const before = gw.finished().length;
    const t0 = Date.now();
    const got = await collect(gw.client());
    const took = Date.now() - t0;
    assert.equal(got.error, null, `unexpected error: ${String(got.error)}`);
    assert.ok(took >= 900, `stream took ${took} ms; should outlast first_byte_ms (300)`);
    assert.equal(got.chunks.length, 20);
    assert.equal(got.chunks.map((c) => c.choices[0]?.delta.content ?? '').join(''), words.join(''));
    assert.equal(got.chunks.at(-1)!.choices[0]!.finish_reason, 'stop');
    const line = await waitFor(() => gw.finished()[before], 2000, 'request log line');
    assert.equal(line['outcome'], 'ok');
    assert.equal(line['status'], 200);
  });

  test('first-byte timeout gives a 504 JSON error with code upstream_timeout', async () => {
    // undici's headers timer has ~1 s resolution: the delay must clearly exceed 300 ms + 1 s.
    upstream.on(() => ({ delayMs: 2500, ...streamReply([chunk(0, 'late', 'stop'), 'data: [DONE]\n\n']) }));

    const before = gw.finished().length;
    const t0 = Date.now();
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${CLIENT_KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'gpt-test', messages: [{ role: 'user', content: 'hello' }], stream: true }),
    });
    const took = Date.now() - t0;
    assert.equal(res.status, 504);
    assert.match(res.headers.get('content-type') ?? '', /^application\/json/);
    const body = (await res.json()) as { error: { message: string; type: string; param: unknown; code: string } };
    assert.equal(body.error.code, 'upstream_timeout');
    assert.equal(body.error.type, 'server_error');
    assert.equal(typeof body.error.message, 'string');
    assert.ok(took >= 250 && took < 2000, `answered after ${took} ms, expected first_byte_ms (300) + timer resolution, before the 2500 ms delay ended`);
    const line = await waitFor(() => gw.finished()[before], 2000, 'request log line');
    assert.equal(line['status'], 504);
    assert.equal(line['error_class'], 'timeout');

    const got = await collect(gw.client());
    assert.ok(got.error instanceof APIError);
    assert.equal(got.error.status, 504);
    assert.equal(got.error.code, 'upstream_timeout');
    assert.equal(got.error.type, 'server_error');
    assert.equal(got.chunks.length, 0);
  });
});
