/**
 * The request Claude Code 2.1.332 sends on its default config (captured:
 * test/captures/claude-code-2.1.332-first-request.json, trimmed; a `system` turn inside
 * `messages`, adaptive thinking, `output_config.effort`, `context_management`, a
 * `defer_loading` tool, `metadata.user_id` holding JSON, its `anthropic-beta` list), sent as
 * Claude Code sends it (`POST /v1/messages?beta=true`) to a model on each wire API: what the
 * upstream received, and what the client got back (`message_start` announcing the prompt's
 * estimate, the final usage the upstream's).
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, beforeEach, describe, test } from 'node:test';
import { hashKey } from '../../src/auth/keys.js';
import { FakeUpstream } from '../helpers/fake-upstream.js';
import { CLIENT_KEY, startGateway, waitFor, type TestGateway } from '../helpers/gateway.js';
import { readSse, type Obj } from '../helpers/recording-catalog.js';
import { anthropicPayloads, replay, replayAnthropic } from '../helpers/recordings.js';
import { completedResponse } from '../helpers/responses-variants.js';

const CAPTURE = JSON.parse(readFileSync(new URL('../../../test/captures/claude-code-2.1.332-first-request.json', import.meta.url), 'utf8')) as {
  headers: Record<string, string>;
  body: Obj;
};
const BETA = CAPTURE.headers['anthropic-beta']!;

/** The captured request, to `model`, with Claude Code's headers; the SSE events that came back, parsed. */
async function send(gw: TestGateway, model: string): Promise<{ status: number; events: Obj[] }> {
  const res = await fetch(`${gw.url}/v1/messages?beta=true`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-api-key': CLIENT_KEY,
      'anthropic-version': CAPTURE.headers['anthropic-version']!,
      'anthropic-beta': BETA,
      'user-agent': CAPTURE.headers['user-agent']!,
    },
    body: JSON.stringify({ ...CAPTURE.body, model }),
  });
  const text = await res.text();
  return {
    status: res.status,
    events: readSse(text)
      .filter((e) => e.data !== null)
      .map((e) => JSON.parse(e.data!) as Obj),
  };
}

/** The gateway's own estimate of the captured prompt (count_tokens on a model without an Anthropic account). */
async function estimate(gw: TestGateway, model: string): Promise<number> {
  const res = await fetch(`${gw.url}/v1/messages/count_tokens`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': CLIENT_KEY },
    body: JSON.stringify({ ...CAPTURE.body, model }),
  });
  assert.equal(res.headers.get('x-switchyard-estimated'), 'true');
  return ((await res.json()) as { input_tokens: number }).input_tokens;
}

const startUsage = (events: Obj[]): Obj => (events[0]!['message'] as Obj)['usage'] as Obj;

describe('Claude Code 2.1.332, as installed, on every wire API', () => {
  const chat = new FakeUpstream();
  const responses = new FakeUpstream();
  const claude = new FakeUpstream();
  let gw: TestGateway;

  before(async () => {
    await Promise.all([chat.start(), responses.start(), claude.start()]);
    chat.on(replay('openai-chat-stream-text-include-usage.sse'));
    responses.on(() => ({
      status: 200,
      headers: { 'content-type': 'text/event-stream' },
      steps: readSse(readFileSync(new URL('../../../test/fixtures/openai-responses-stream-text.sse', import.meta.url), 'utf8')).map((e) => e.raw),
    }));
    claude.on(replayAnthropic('anthropic-messages-stream-text.chunks.jsonl'));
    gw = await startGateway(`
routing: { max_attempts: 1 }
upstreams:
  - { id: chat-only, provider: openai-compatible, base_url: "${chat.url}/v1", api_key: "\${TEST_UPSTREAM_KEY}" }
  - { id: responses-only, provider: openai-compatible, base_url: "${responses.url}/v1", api_key: "\${TEST_UPSTREAM_KEY}", options: { chat: false } }
  - { id: claude, provider: anthropic, base_url: "${claude.url}/v1", api_key: "\${TEST_UPSTREAM_KEY}" }
models:
  - { name: on-chat, reasoning: true, price: { input: 1, output: 2 }, targets: [{ upstream: chat-only, model: chat-model }] }
  - { name: on-responses, reasoning: true, price: { input: 1, output: 2 }, targets: [{ upstream: responses-only, model: codex-model }] }
  - { name: on-claude, reasoning: true, price: { input: 1, output: 2 }, targets: [{ upstream: claude, model: claude-opus-5-5 }] }
keys:
  - { name: cc, key_sha256: ${hashKey(CLIENT_KEY)} }
`);
  });
  after(async () => {
    await gw?.close();
    await Promise.all([chat.close(), responses.close(), claude.close()]);
  });
  beforeEach(() => {
    for (const u of [chat, responses, claude]) u.requests.length = 0;
  });

  test('a chat-only account: the system turn as a system message in place, effort medium, nothing Anthropic-only sent', async () => {
    const got = await send(gw, 'on-chat');
    assert.equal(got.status, 200, JSON.stringify(got.events).slice(0, 500));
    const sent = chat.requests[0]!;
    assert.equal(sent.url, '/v1/chat/completions');
    const body = sent.json!;
    const messages = body['messages'] as Obj[];
    assert.deepEqual(
      messages.map((m) => m['role']),
      ['system', 'user', 'system'],
    );
    assert.ok(String(messages[2]!['content']).startsWith('# Environment'));
    assert.equal(body['reasoning_effort'], 'medium');
    assert.deepEqual(
      (body['tools'] as Obj[]).map((t) => (t['function'] as Obj)['name']),
      ['Bash', 'Read', 'ToolSearch', 'DeferredToolPlaceholder'],
    );
    for (const k of ['context_management', 'thinking', 'output_config', 'metadata', 'user']) assert.equal(body[k], undefined, `${k} not sent`);
    assert.ok(!sent.body.includes('defer_loading') && !sent.body.includes('device_id'));
    assert.equal(sent.headers['anthropic-beta'], undefined);
    assert.deepEqual(got.events.map((e) => e['type']).slice(-2), ['message_delta', 'message_stop']);
  });

  test("message_start: the gateway estimate (> 0) over the chat bridge, the upstream count in message_delta; Anthropic's own over an Anthropic account", async () => {
    const got = await send(gw, 'on-chat');
    const announced = startUsage(got.events)['input_tokens'] as number;
    assert.ok(announced > 0, `message_start.usage.input_tokens = ${announced}`);
    assert.equal(announced, await estimate(gw, 'on-chat'), 'the same count as count_tokens');
    const final = got.events.at(-2)!['usage'] as Obj;
    const recorded = readSse(readFileSync(new URL('../../../test/fixtures/openai-chat-stream-text-include-usage.sse', import.meta.url), 'utf8'))
      .map((e) => (e.data && e.data !== '[DONE]' ? (JSON.parse(e.data) as Obj)['usage'] : undefined))
      .find((u) => u) as Obj;
    assert.equal(final['input_tokens'], recorded['prompt_tokens']);

    // An Anthropic account: the request as Claude Code sent it (system turn included), with its
    // anthropic-beta; message_start is Anthropic's own.
    const passed = await send(gw, 'on-claude');
    assert.equal(passed.status, 200);
    assert.deepEqual(claude.requests[0]!.json, { ...CAPTURE.body, model: 'claude-opus-5-5' });
    assert.equal(claude.requests[0]!.headers['anthropic-beta'], BETA);
    assert.deepEqual(startUsage(passed.events), (anthropicPayloads('anthropic-messages-stream-text.chunks.jsonl')[0]!['message'] as Obj)['usage'] as Obj);
    const line = await waitFor(() => gw.finished().find((l) => l['model'] === 'on-claude'), 2000, 'the request line');
    assert.equal(line['status'], 200);
  });

  test('a Responses-only account: instructions, the system turn as a system item in place, reasoning.effort medium, store false, no metadata', async () => {
    const got = await send(gw, 'on-responses');
    assert.equal(got.status, 200, JSON.stringify(got.events).slice(0, 500));
    const sent = responses.requests[0]!;
    assert.equal(sent.url, '/v1/responses');
    const body = sent.json!;
    assert.ok(String(body['instructions']).includes('You are a Claude agent'));
    const input = body['input'] as Obj[];
    assert.deepEqual(
      input.map((i) => i['role']),
      ['user', 'system'],
    );
    assert.ok(String(input[1]!['content']).startsWith('# Environment'));
    assert.deepEqual([body['reasoning'], body['store'], body['max_output_tokens'], body['stream']], [{ effort: 'medium' }, false, 128000, true]);
    for (const k of ['context_management', 'thinking', 'output_config', 'metadata', 'user', 'safety_identifier'])
      assert.equal(body[k], undefined, `${k} not sent`);
    assert.ok(!sent.body.includes('defer_loading') && !sent.body.includes('device_id'));
    assert.equal(sent.headers['anthropic-beta'], undefined);
    assert.ok((startUsage(got.events)['input_tokens'] as number) > 0);
    const usage = completedResponse('openai-responses-stream-text.sse')['usage'] as Obj;
    assert.deepEqual((got.events.at(-2)!['usage'] as Obj)['output_tokens'], usage['output_tokens']);
  });
});
