/**
 * A delivered answer is a completed request (issue 29). Once the client API's terminal event
 * (`data: [DONE]`, `response.completed`, `message_stop`) was written, the request is 200
 * `ok` with the upstream's own usage, whatever happens next: the client closes at once (as
 * Codex CLI does on `response.completed`), the upstream lingers before ending its body,
 * resets its connection, or never ends. Only a client that leaves before the terminal event
 * is a 499. Driven by raw fetch readers and the official SDKs, against a fake upstream that
 * replays recordings and then does one of those things.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import { hashKey } from '../../src/auth/keys.js';
import { FakeUpstream, type ReceivedRequest, type Step } from '../helpers/fake-upstream.js';
import { CLIENT_KEY, finishedLine, startGateway, waitFor, type TestGateway } from '../helpers/gateway.js';
import { metricValue } from '../helpers/metrics-text.js';
import { anthropicEvents, sseEvents } from '../helpers/recordings.js';

/** What each recording reports (read from the files: usage chunk, `response.completed`, `message_delta`). */
const CHAT = { file: 'openai-chat-stream-text-include-usage.sse', input: 53, output: 15 };
const RESPONSES = { file: 'openai-responses-stream-text.sse', input: 21, output: 3 };
const MESSAGES = { file: 'anthropic-messages-stream-thinking.sse', input: 43, output: 282 };
/** USD per 1M tokens of every model below: the cost of a line is input + 2 * output, in millionths. */
const PRICE = '{ input: 1, cached_input: 1, output: 2 }';

function yaml(url: string): string {
  const t = '{ connect_ms: 2000, first_byte_ms: 5000, idle_ms: 10000 }';
  return `
server: { log_level: info }
routing: { max_attempts: 1 }
upstreams:
  - { id: oai, provider: openai-compatible, base_url: "${url}/v1", api_key: "\${TEST_UPSTREAM_KEY}", options: { responses: true }, timeouts: ${t} }
  - { id: chat-only, provider: openai-compatible, base_url: "${url}/v1", api_key: "\${TEST_UPSTREAM_KEY}", timeouts: ${t} }
  - id: claude
    provider: anthropic
    base_url: ${url}/v1
    api_key: \${TEST_UPSTREAM_KEY}
    options: { anthropic_version: "2023-06-01", default_max_tokens: 1000 }
    timeouts: ${t}
models:
  - { name: m-oai, price: ${PRICE}, targets: [{ upstream: oai, model: up-oai }] }
  - { name: m-chat, price: ${PRICE}, targets: [{ upstream: chat-only, model: up-chat }] }
  - { name: m-claude, price: ${PRICE}, targets: [{ upstream: claude, model: up-claude }] }
keys:
  - { name: team-a, key_sha256: ${hashKey(CLIENT_KEY)} }
`;
}

/** The recording for the wire API a request was sent on (by its path), every event, then `tail`. */
function replayThen(tail: Step[], opts: { pauseBeforeLast?: number } = {}) {
  return (req: ReceivedRequest) => {
    const events = req.url.endsWith('/responses')
      ? sseEvents(RESPONSES.file)
      : req.url.endsWith('/messages')
        ? anthropicEvents(MESSAGES.file)
        : sseEvents(CHAT.file);
    const steps: Step[] = [...events];
    if (opts.pauseBeforeLast) steps.splice(steps.length - 1, 0, { delayMs: opts.pauseBeforeLast });
    return { status: 200, headers: { 'content-type': 'text/event-stream; charset=utf-8' }, steps: [...steps, ...tail] };
  };
}

const PATHS = { chat: '/v1/chat/completions', responses: '/v1/responses', messages: '/v1/messages' } as const;
type Api = keyof typeof PATHS;

function bodyFor(api: Api, model: string): Record<string, unknown> {
  if (api === 'responses') return { model, input: 'hi', stream: true };
  if (api === 'messages') return { model, max_tokens: 100, messages: [{ role: 'user', content: 'hi' }], stream: true };
  return { model, messages: [{ role: 'user', content: 'hi' }], stream: true };
}

/**
 * Streams a request with raw fetch and reads until `until` occurs followed by the end of its
 * event, then closes the connection at once (or reads to the end when `until` is null).
 */
async function stream(gw: TestGateway, api: Api, model: string, until: string | null): Promise<{ id: string; text: string; ms: number }> {
  const t0 = Date.now();
  const ac = new AbortController();
  const res = await fetch(`${gw.url}${PATHS[api]}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${CLIENT_KEY}`, 'content-type': 'application/json' },
    body: JSON.stringify(bodyFor(api, model)),
    signal: ac.signal,
  });
  assert.equal(res.status, 200);
  const reader = res.body!.getReader();
  let text = '';
  const seen = (): boolean => until !== null && text.includes(until) && text.indexOf('\n\n', text.indexOf(until)) >= 0;
  while (!seen()) {
    const { value, done } = await reader.read();
    if (done) break;
    text += Buffer.from(value).toString('utf8');
  }
  if (until !== null) {
    assert.ok(seen(), `the client read ${until}`);
    ac.abort();
  }
  return { id: res.headers.get('x-request-id')!, text, ms: Date.now() - t0 };
}

/** Asserts the request's line: delivered, with the upstream's own counts and their cost. */
async function assertDelivered(gw: TestGateway, id: string, want: { input: number; output: number }): Promise<void> {
  const line = await finishedLine(gw, id);
  assert.equal(line['status'], 200, JSON.stringify(line));
  assert.equal(line['outcome'], 'ok');
  assert.equal(line['error_class'], null);
  const tokens = line['tokens'] as Record<string, number>;
  assert.equal(tokens['input'], want.input);
  assert.equal(tokens['output'], want.output);
  assert.equal(line['tokens_estimated'], false);
  assert.ok(Math.abs((line['cost_usd'] as number) - (want.input + 2 * want.output) / 1e6) < 1e-12, `cost ${String(line['cost_usd'])}`);
}

describe('a client that leaves right after the terminal event has a completed request', () => {
  let upstream: FakeUpstream;
  let gw: TestGateway;
  before(async () => {
    upstream = await new FakeUpstream().start();
    gw = await startGateway(yaml(upstream.url));
  });
  after(async () => {
    await gw?.close();
    await upstream?.close();
  });

  for (const [api, model, until, want] of [
    ['chat', 'm-oai', 'data: [DONE]', CHAT],
    ['responses', 'm-oai', 'event: response.completed', RESPONSES],
    ['messages', 'm-claude', 'event: message_stop', MESSAGES],
    // Bridged: the gateway makes `response.completed` / `message_stop` from the chat finish and usage chunk.
    ['responses', 'm-chat', 'event: response.completed', CHAT],
    ['messages', 'm-chat', 'event: message_stop', CHAT],
    ['chat', 'm-claude', 'data: [DONE]', MESSAGES],
  ] as const) {
    test(`${api} client on ${model}: closes at ${until}, the upstream ends its body 300 ms later`, async () => {
      upstream.on(replayThen([{ delayMs: 300 }]));
      const n = upstream.requests.length;
      const ok0 = metricValue(await gw.metricsText(), 'switchyard_requests_total', { model, status: '200', outcome: 'ok' }) ?? 0;
      const { id } = await stream(gw, api, model, until);
      await assertDelivered(gw, id, want);
      assert.equal(metricValue(await gw.metricsText(), 'switchyard_requests_total', { model, status: '200', outcome: 'ok' }), ok0 + 1);
      // The rest of the upstream body was read, not cut: its connection can serve another call.
      const up = await waitFor(() => (upstream.requests[n]?.finished ? upstream.requests[n] : null), 2000, 'the upstream to end its body');
      assert.equal(up.abortedAt, null);
    });
  }

  test('the Responses SDK breaking out at response.completed (Codex-style), on a chat upstream', async () => {
    upstream.on(replayThen([{ delayMs: 300 }]));
    const client = gw.client();
    const { data, response } = await client.responses.create({ model: 'm-chat', input: 'hi', stream: true }).withResponse();
    let completed = false;
    for await (const ev of data) {
      if (ev.type === 'response.completed') {
        completed = true;
        break;
      }
    }
    assert.ok(completed);
    await assertDelivered(gw, response.headers.get('x-request-id')!, CHAT);
  });

  test('the Anthropic SDK breaking out at message_stop', async () => {
    upstream.on(replayThen([{ delayMs: 300 }]));
    const client = new Anthropic({ apiKey: CLIENT_KEY, baseURL: gw.url, maxRetries: 0 });
    const { data, response } = await client.messages
      .create({ model: 'm-claude', max_tokens: 100, messages: [{ role: 'user', content: 'hi' }], stream: true })
      .withResponse();
    let stopped = false;
    for await (const ev of data) {
      if (ev.type === 'message_stop') {
        stopped = true;
        break;
      }
    }
    assert.ok(stopped);
    await assertDelivered(gw, response.headers.get('x-request-id')!, MESSAGES);
  });

  test('an upstream that resets its connection after [DONE]: no error event after it, ok', async () => {
    upstream.on(replayThen([{ delayMs: 50 }, { destroy: true }]));
    const { id, text } = await stream(gw, 'chat', 'm-oai', null);
    assert.ok(text.endsWith('data: [DONE]\n\n'), `nothing after [DONE]: ${JSON.stringify(text.slice(-200))}`);
    await assertDelivered(gw, id, CHAT);
  });

  test('an upstream that never ends its body after response.completed: the client is not held; the chat SDK finishes at once', async () => {
    upstream.on(replayThen([{ delayMs: 4000 }]));
    const raw = await stream(gw, 'responses', 'm-oai', null);
    assert.ok(raw.ms < 1500, `the response ended ${raw.ms} ms in, not when the upstream did`);
    await assertDelivered(gw, raw.id, RESPONSES);

    const t0 = Date.now();
    const { data, response } = await gw
      .client()
      .chat.completions.create({ model: 'm-oai', messages: [{ role: 'user', content: 'hi' }], stream: true, stream_options: { include_usage: true } })
      .withResponse();
    let promptTokens: number | null = null;
    for await (const chunk of data) promptTokens = chunk.usage?.prompt_tokens ?? promptTokens;
    assert.ok(Date.now() - t0 < 1500, `the SDK's stream ended ${Date.now() - t0} ms in`);
    assert.equal(promptTokens, CHAT.input);
    await assertDelivered(gw, response.headers.get('x-request-id')!, CHAT);
  });
});

describe('a client that leaves before the terminal event is still a 499', () => {
  let upstream: FakeUpstream;
  let gw: TestGateway;
  before(async () => {
    upstream = await new FakeUpstream().start();
    gw = await startGateway(yaml(upstream.url));
  });
  after(async () => {
    await gw?.close();
    await upstream?.close();
  });

  for (const [api, model, until] of [
    ['responses', 'm-oai', 'event: response.output_item.added'],
    ['responses', 'm-chat', 'event: response.output_item.added'],
    ['chat', 'm-oai', '"finish_reason":"'],
  ] as const) {
    test(`${api} client on ${model} leaving at its first ${until} while the upstream pauses before its last event`, async () => {
      upstream.on(replayThen([], { pauseBeforeLast: 1500 }));
      const { id } = await stream(gw, api, model, until);
      // Generous: the first estimate loads the tokenizer's tables (seconds on a loaded machine).
      const line = await finishedLine(gw, id, 10_000);
      assert.equal(line['status'], 499);
      assert.equal(line['outcome'], 'client_aborted');
      assert.equal(line['tokens_estimated'], true);
    });
  }
});
