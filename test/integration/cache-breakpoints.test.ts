/**
 * Prompt-cache breakpoints on requests to an Anthropic account (src/translate/messages-cache.ts),
 * end to end: the real gateway on port 0 in front of a real fake Anthropic API on loopback
 * that records what it receives and answers with the recorded Messages answer
 * (test/fixtures/anthropic-messages-text.json). A chat-completions client (the openai SDK)
 * and a Codex-shaped Responses client get markers on the last tool, the system prompt and
 * the turn before the final user turn, at most 4, the prompt otherwise the same as with
 * `cache_breakpoints: off` (which sends none); Claude Code's captured request, which carries
 * its own markers, is forwarded with exactly those.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, beforeEach, describe, test } from 'node:test';
import OpenAI from 'openai';
import { hashKey } from '../../src/auth/keys.js';
import { markers, prompt } from '../helpers/cache-markers.js';
import { codexBody } from '../helpers/codex-request.js';
import { FakeUpstream } from '../helpers/fake-upstream.js';
import { CLIENT_KEY, startGateway, type TestGateway } from '../helpers/gateway.js';
import { fixtureJson } from '../helpers/recordings.js';

type Obj = Record<string, unknown>;
const CAPTURE = JSON.parse(readFileSync(new URL('../../../test/captures/claude-code-2.1.332-first-request.json', import.meta.url), 'utf8')) as {
  headers: Record<string, string>;
  body: Obj;
};
const MARK = { type: 'ephemeral' };
const MAX_BREAKPOINTS = 4;

/** A chat tool loop with a system prompt and two tools, ending in a new user turn. */
const CHAT_BODY = {
  max_tokens: 200,
  messages: [
    { role: 'system', content: 'You are a terse weather assistant.' },
    { role: 'user', content: 'Weather in Paris?' },
    { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'weather', arguments: '{"city":"Paris"}' } }] },
    { role: 'tool', tool_call_id: 'call_1', content: '12C, cloudy' },
    { role: 'assistant', content: 'It is 12C and cloudy.' },
    { role: 'user', content: 'And tomorrow?' },
  ],
  tools: [
    { type: 'function', function: { name: 'weather', description: 'Weather now', parameters: { type: 'object', properties: { city: { type: 'string' } } } } },
    {
      type: 'function',
      function: { name: 'forecast', description: 'Weather tomorrow', parameters: { type: 'object', properties: { city: { type: 'string' } } } },
    },
  ],
};

describe('prompt-cache breakpoints on an Anthropic account', () => {
  const claude = new FakeUpstream();
  let gw: TestGateway;
  let client: OpenAI;

  before(async () => {
    await claude.start();
    claude.on(() => ({ status: 200, body: fixtureJson('anthropic-messages-text.json') }));
    gw = await startGateway(`
routing: { max_attempts: 1 }
upstreams:
  - { id: claude, provider: anthropic, base_url: "${claude.url}/v1", api_key: "\${TEST_UPSTREAM_KEY}" }
models:
  - { name: claude-auto, price: { input: 3, output: 15 }, targets: [{ upstream: claude, model: claude-upstream-id }] }
  - { name: claude-off, cache_breakpoints: off, price: { input: 3, output: 15 }, targets: [{ upstream: claude, model: claude-upstream-id }] }
keys:
  - { name: team-a, key_sha256: ${hashKey(CLIENT_KEY)} }
`);
    client = gw.client();
  });
  after(async () => {
    await gw?.close();
    await claude.close();
  });
  beforeEach(() => {
    claude.requests.length = 0;
  });

  /** The body the fake Anthropic API received on request `i`. */
  const received = (i: number): Obj => claude.requests[i]!.json!;

  test('a chat client: markers on the last tool, the system prompt and the last stable turn; `off` sends none, the prompt is the same', async () => {
    await client.chat.completions.create({ ...CHAT_BODY, model: 'claude-auto' } as never);
    await client.chat.completions.create({ ...CHAT_BODY, model: 'claude-off' } as never);
    const [auto, off] = [received(0), received(1)];
    assert.equal(claude.requests[0]!.url, '/v1/messages');
    assert.equal(markers(auto), 3);
    assert.ok(markers(auto) <= MAX_BREAKPOINTS);
    assert.deepEqual(
      (auto['tools'] as Obj[]).map((t) => [t['name'], t['cache_control']]),
      [
        ['weather', undefined],
        ['forecast', MARK],
      ],
    );
    assert.deepEqual(auto['system'], [{ type: 'text', text: 'You are a terse weather assistant.', cache_control: MARK }]);
    const messages = auto['messages'] as Obj[];
    assert.deepEqual(messages.at(-2), { role: 'assistant', content: [{ type: 'text', text: 'It is 12C and cloudy.', cache_control: MARK }] });
    assert.equal(markers(messages.at(-1)), 0);
    assert.equal(markers(off), 0, 'cache_breakpoints: off sends no marker');
    assert.deepEqual(prompt(auto), prompt(off), 'only the markers differ');
  });

  test('a Codex-shaped Responses client (the Responses -> Messages bridge): the same places, at most 4', async () => {
    const body = codexBody(
      [
        { type: 'custom_tool_call', call_id: 'call_9', name: 'exec', input: 'text("hello")' },
        { type: 'custom_tool_call_output', call_id: 'call_9', output: 'hello' },
      ],
      'claude-auto',
    );
    const res = await fetch(`${gw.url}/v1/responses`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${CLIENT_KEY}` },
      body: JSON.stringify({ ...body, stream: false }),
    });
    assert.equal(res.status, 200, await res.clone().text());
    const sent = received(0);
    assert.equal(markers(sent), 3);
    assert.deepEqual(
      (sent['tools'] as Obj[]).map((t) => t['cache_control'] ?? null),
      [null, null, MARK],
    );
    assert.deepEqual(sent['system'], [{ type: 'text', text: 'You are Codex.', cache_control: MARK }]);
    const messages = sent['messages'] as Obj[];
    const stable = (messages.at(-2)!['content'] as Obj[]).at(-1)!;
    assert.deepEqual([messages.at(-2)!['role'], stable['type'], stable['name'], stable['cache_control']], ['assistant', 'tool_use', 'exec', MARK]);
    assert.equal(markers(messages.at(-1)), 0);
  });

  test("Claude Code's request, with its own markers, is forwarded with exactly those", async () => {
    const res = await fetch(`${gw.url}/v1/messages?beta=true`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-api-key': CLIENT_KEY,
        'anthropic-version': CAPTURE.headers['anthropic-version']!,
        'anthropic-beta': CAPTURE.headers['anthropic-beta']!,
        'x-claude-code-session-id': CAPTURE.headers['x-claude-code-session-id']!,
      },
      body: JSON.stringify({ ...CAPTURE.body, model: 'claude-auto', stream: false }),
    });
    assert.equal(res.status, 200, await res.clone().text());
    const sent = received(0);
    assert.equal(markers(sent), markers(CAPTURE.body));
    for (const part of ['system', 'messages', 'tools']) assert.deepEqual(sent[part], CAPTURE.body[part], `${part} as the client sent it`);
  });
});
