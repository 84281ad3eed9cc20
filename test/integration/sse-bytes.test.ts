/**
 * Byte-level SSE relay: the body a raw `fetch` client reads from the gateway is exactly
 * what the upstream wrote (apart from the usage-only chunk the client did not ask for),
 * whatever the framing: CRLF, `data:` without a space, comment lines, upstream writes that
 * split multi-byte UTF-8 characters.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import OpenAI from 'openai';
import type { FakeUpstream, ScriptedReply, Step } from '../helpers/fake-upstream.js';
import { CLIENT_KEY, closeAll, startWithUpstream, testConfigYaml, waitFor, type TestGateway } from '../helpers/gateway.js';
import { fixture, isUsageOnly, sseEvents } from '../helpers/recordings.js';

const SSE = { 'content-type': 'text/event-stream; charset=utf-8' };

/** One recorded event with its own bytes after a framing transform. */
interface Ev {
  bytes: Buffer;
  usageOnly: boolean;
}

function recorded(name: string, transform: (event: string) => string = (e) => e): Ev[] {
  return sseEvents(name).map((e) => ({ bytes: Buffer.from(transform(e), 'utf8'), usageOnly: isUsageOnly(e) }));
}

const toCrlf = (e: string): string => e.replace(/\n/g, '\r\n');
const noSpace = (e: string): string => e.replace(/^data: /gm, 'data:');

/** What the upstream sends: every event (the gateway always asks for usage). */
function upstreamBytes(events: Ev[]): Buffer {
  return Buffer.concat(events.map((e) => e.bytes));
}

/** What the client should get. */
function clientBytes(events: Ev[], includeUsage: boolean): Buffer {
  return Buffer.concat(events.filter((e) => includeUsage || !e.usageOnly).map((e) => e.bytes));
}

function stepsReply(steps: Step[]): ScriptedReply {
  return { status: 200, headers: SSE, steps };
}

/** Splits bytes into fixed-size pieces; pauses after each piece that ends inside a UTF-8 character. */
function pieces(buf: Buffer, size: number): { steps: Step[]; splitChars: number } {
  const steps: Step[] = [];
  let splitChars = 0;
  for (let i = 0; i < buf.length; i += size) {
    steps.push(buf.subarray(i, i + size));
    const next = buf[i + size];
    if (next !== undefined && (next & 0xc0) === 0x80) {
      // The next byte continues a multi-byte character: make sure this piece travels alone.
      splitChars++;
      steps.push({ delayMs: 15 });
    }
  }
  return { steps, splitChars };
}

interface Fetched {
  status: number;
  headers: Headers;
  body: Buffer;
}

async function rawChat(gw: TestGateway, includeUsage: boolean, model = 'gpt-test'): Promise<Fetched> {
  const res = await fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${CLIENT_KEY}`, 'content-type': 'application/json' },
    body: JSON.stringify({
      model,
      messages: [{ role: 'user', content: 'hello' }],
      stream: true,
      ...(includeUsage ? { stream_options: { include_usage: true } } : {}),
    }),
  });
  return { status: res.status, headers: res.headers, body: Buffer.from(await res.arrayBuffer()) };
}

/** Shows where two buffers first differ, for readable failures. */
function sameBytes(got: Buffer, want: Buffer, what: string): void {
  if (got.equals(want)) return;
  let i = 0;
  while (i < got.length && i < want.length && got[i] === want[i]) i++;
  assert.fail(
    `${what}: bytes differ at offset ${i} (got ${got.length} bytes, want ${want.length})\n` +
      `got:  ${JSON.stringify(got.subarray(Math.max(0, i - 40), i + 40).toString('latin1'))}\n` +
      `want: ${JSON.stringify(want.subarray(Math.max(0, i - 40), i + 40).toString('latin1'))}`,
  );
}

interface Assembled {
  reasoning: string;
  content: string;
  chunks: number;
  finish: string | null;
}

async function assemble(client: OpenAI, model: string): Promise<Assembled> {
  const stream = await client.chat.completions.create({ model, messages: [{ role: 'user', content: 'hello' }], stream: true });
  const out: Assembled = { reasoning: '', content: '', chunks: 0, finish: null };
  for await (const chunk of stream) {
    out.chunks++;
    const choice = chunk.choices[0];
    if (!choice) continue;
    const delta = choice.delta as { content?: string | null; reasoning_content?: string | null };
    out.reasoning += delta.reasoning_content ?? '';
    out.content += delta.content ?? '';
    if (choice.finish_reason) out.finish = choice.finish_reason;
  }
  return out;
}

describe('SSE bytes relay unchanged', () => {
  let upstream: FakeUpstream;
  let gw: TestGateway;
  let direct: OpenAI;

  before(async () => {
    ({ upstream, gw } = await startWithUpstream());
    direct = new OpenAI({ apiKey: 'direct', baseURL: `${upstream.url}/v1`, maxRetries: 0 });
  });
  after(() => closeAll(gw, upstream));

  const CASES: [string, string, (e: string) => string][] = [
    ['CRLF line endings', 'openai-chat-stream-text-include-usage.sse', toCrlf],
    ['CRLF line endings (parallel tool calls)', 'openai-chat-stream-parallel-tool-calls.sse', toCrlf],
    ['data: without a space', 'openai-chat-stream-tool-call-argument-deltas.sse', noSpace],
    ['data: without a space and CRLF', 'openai-chat-stream-text-include-usage.sse', (e) => toCrlf(noSpace(e))],
  ];

  for (const [label, name, transform] of CASES) {
    for (const includeUsage of [true, false]) {
      test(`${label}: ${name} include_usage=${includeUsage}`, async () => {
        const events = recorded(name, transform);
        assert.ok(
          events.some((e) => e.usageOnly),
          'the recording has a usage-only chunk',
        );
        const sent = upstreamBytes(events);
        upstream.on(() => stepsReply(events.map((e) => e.bytes)));
        const before = gw.finished().length;
        const got = await rawChat(gw, includeUsage);
        assert.equal(got.status, 200);
        assert.match(got.headers.get('content-type') ?? '', /^text\/event-stream/);
        const want = clientBytes(events, includeUsage);
        if (!includeUsage) assert.ok(want.length < sent.length, 'the usage-only chunk is left out');
        sameBytes(got.body, want, label);
        const line = await waitFor(() => gw.finished()[before], 2000, 'request log line');
        assert.equal(line['outcome'], 'ok');
        // Usage is read whatever the framing.
        assert.equal(line['tokens_estimated'], false);
        assert.ok((line['tokens'] as Record<string, number>)['output']! > 0);
      });
    }
  }

  test('CRLF stream: the openai client gets the same chunks through the gateway as direct', async () => {
    const events = recorded('openai-chat-stream-tool-call-argument-deltas.sse', toCrlf);
    upstream.on(() => stepsReply(events.map((e) => e.bytes)));
    const collect = async (client: OpenAI) => {
      const s = await client.chat.completions.create({
        model: 'gpt-test',
        messages: [{ role: 'user', content: 'x' }],
        stream: true,
        stream_options: { include_usage: true },
      });
      const chunks: unknown[] = [];
      for await (const c of s) chunks.push(c);
      return chunks;
    };
    const want = await collect(direct);
    const got = await collect(gw.client());
    assert.ok(want.length > 10);
    assert.deepEqual(got, want);
  });

  for (const includeUsage of [true, false]) {
    test(`: keep-alive comment lines between events are relayed include_usage=${includeUsage}`, async () => {
      const base = recorded('openai-chat-stream-text-include-usage.sse');
      const keepAlive: Ev = { bytes: Buffer.from(': keep-alive\n\n'), usageOnly: false };
      const events: Ev[] = [keepAlive, keepAlive];
      for (const e of base) events.push(e, keepAlive);
      // An OpenRouter-style comment with CRLF framing just before [DONE].
      events.splice(events.length - 2, 0, { bytes: Buffer.from(': OPENROUTER PROCESSING\r\n\r\n'), usageOnly: false });
      upstream.on(() => stepsReply(events.flatMap((e) => [e.bytes, { delayMs: 1 }] as Step[])));
      const got = await rawChat(gw, includeUsage);
      assert.equal(got.status, 200);
      // The answer ends at [DONE] (the request is complete there): the comment after it is not relayed.
      const want = clientBytes(events.slice(0, -1), includeUsage);
      sameBytes(got.body, want, 'keep-alive stream');
      const text = got.body.toString('utf8');
      assert.ok(text.startsWith(': keep-alive\n\n: keep-alive\n\ndata: '), 'comments sent before the first data event are kept');
      // Comments between events are never dropped, even the one after a dropped usage-only chunk.
      assert.equal(text.split(': keep-alive\n\n').length - 1, events.filter((e) => e === keepAlive).length - 1);
      assert.ok(text.endsWith('data: [DONE]\n\n'));
      assert.ok(text.includes(': OPENROUTER PROCESSING\r\n\r\n'));
    });
  }

  test('[DONE] is relayed as the last event, byte for byte', async () => {
    for (const [transform, done] of [
      [(e: string) => e, 'data: [DONE]\n\n'],
      [toCrlf, 'data: [DONE]\r\n\r\n'],
      [noSpace, 'data:[DONE]\n\n'],
    ] as const) {
      const events = recorded('openai-chat-stream-text-no-usage-2023.sse', transform);
      upstream.on(() => stepsReply(events.map((e) => e.bytes)));
      const got = await rawChat(gw, false);
      assert.equal(got.status, 200);
      const text = got.body.toString('utf8');
      assert.ok(text.endsWith(done), `ends with ${JSON.stringify(done)}: ${JSON.stringify(text.slice(-40))}`);
      assert.equal(text.split('[DONE]').length, 2, 'exactly one [DONE]');
      sameBytes(got.body, upstreamBytes(events), 'no-usage stream');
    }
  });

  test('a [DONE] that the upstream writes without its final blank line is relayed with it', async () => {
    const events = recorded('openai-chat-stream-text-no-usage-2023.sse');
    const sent = upstreamBytes(events);
    const cut = sent.subarray(0, sent.length - 2); // "... data: [DONE]" unterminated
    assert.ok(cut.toString('latin1').endsWith('data: [DONE]'));
    upstream.on(() => stepsReply([cut]));
    const got = await rawChat(gw, false);
    assert.equal(got.status, 200);
    sameBytes(got.body, Buffer.concat([cut, Buffer.from('\n\n')]), 'unterminated [DONE], blank line added');
  });

  test('deepseek-reasoner-stream.sse written in 7-byte pieces: bytes and text unchanged', async () => {
    const sent = fixture('deepseek-reasoner-stream.sse');
    const { steps, splitChars } = pieces(sent, 7);
    assert.ok(splitChars >= 1, 'at least one upstream write ends inside a multi-byte character');
    upstream.on(() => stepsReply(steps));

    for (const includeUsage of [true, false]) {
      // No usage-only chunk in this recording (DeepSeek puts usage on the last choice chunk).
      const got = await rawChat(gw, includeUsage, 'reasoner-test');
      assert.equal(got.status, 200);
      sameBytes(got.body, sent, `7-byte pieces include_usage=${includeUsage}`);
    }

    const want = await assemble(direct, 'reasoner-test');
    const before = gw.finished().length;
    const got = await assemble(gw.client(), 'reasoner-test');
    assert.ok(want.reasoning.length > 100, 'reasoning_content was assembled');
    assert.ok(want.content.includes('😊'), 'content has the multi-byte character');
    assert.ok(!got.content.includes('\ufffd') && !got.reasoning.includes('\ufffd'), 'no replacement characters');
    assert.equal(got.reasoning, want.reasoning);
    assert.equal(got.content, want.content);
    assert.equal(got.chunks, want.chunks);
    assert.equal(got.finish, 'stop');
    const line = await waitFor(() => gw.finished()[before], 2000, 'request log line');
    assert.deepEqual(line['tokens'], { input: 6, cached: 0, output: 212, reasoning: 198 });
  });

  test('Chinese text, € and 🙂 written one byte at a time', async () => {
    const parts = ['深度', '求索：', '价格 5 €', '，', '好的 🙂', '。'];
    const chunk = (delta: Record<string, unknown>, finish: string | null = null) =>
      `data: ${JSON.stringify({ id: 'chatcmpl-x', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
    const text =
      chunk({ role: 'assistant', content: '', reasoning_content: '想一想…' }) +
      parts.map((p) => chunk({ content: p })).join('') +
      chunk({}, 'stop') +
      'data: [DONE]\n\n';
    const sent = Buffer.from(text, 'utf8');
    const { steps, splitChars } = pieces(sent, 1);
    assert.ok(splitChars > 10);
    upstream.on(() => stepsReply(steps));
    const raw = await rawChat(gw, false);
    sameBytes(raw.body, sent, 'one byte at a time');
    const got = await assemble(gw.client(), 'gpt-test');
    assert.equal(got.content, parts.join(''));
    assert.equal(got.reasoning, '想一想…');
  });
});

describe('keep-alive comments while an upstream is silent mid-stream', () => {
  let upstream: FakeUpstream;
  let gw: TestGateway;

  before(async () => {
    ({ upstream, gw } = await startWithUpstream((url) => testConfigYaml(url, { routing: '  max_attempts: 1\n  sse_keepalive_ms: 100' })));
  });
  after(() => closeAll(gw, upstream));

  test("a 600 ms pause after the first event gets comment lines at event boundaries; without them the bytes are the upstream's", async () => {
    const events = recorded('openai-chat-stream-text-include-usage.sse');
    const steps: Step[] = [events[0]!.bytes, { delayMs: 600 }, ...events.slice(1).flatMap((e) => [e.bytes] as Step[])];
    upstream.on(() => stepsReply(steps));
    const got = await rawChat(gw, true);
    assert.equal(got.status, 200);
    const text = got.body.toString('utf8');
    const comments = text.split(': keep-alive\n\n').length - 1;
    assert.ok(comments >= 3 && comments <= 8, `${comments} keep-alives in a 600 ms pause at 100 ms`);
    assert.ok(text.startsWith(events[0]!.bytes.toString('utf8') + ': keep-alive\n\n'), 'the first keep-alive follows the first event whole');
    sameBytes(Buffer.from(text.split(': keep-alive\n\n').join(''), 'utf8'), clientBytes(events, true), 'the events themselves');
  });
});
