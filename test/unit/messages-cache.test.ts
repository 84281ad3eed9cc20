/**
 * Prompt-cache breakpoints on Messages wire requests (src/translate/messages-cache.ts), on
 * the bodies the translators make (chat -> messages, responses -> messages with Codex's
 * request shape) and on Claude Code's captured request: where the markers go, that there are
 * never more than Anthropic's 4, that the prompt is otherwise the same, and that a request
 * with its own markers is left alone.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import { hasCacheControl, MAX_BREAKPOINTS, withCacheBreakpoints } from '../../src/translate/messages-cache.js';
import { markers, prompt } from '../helpers/cache-markers.js';
import { codexBody } from '../helpers/codex-request.js';
import { makeTranslator } from '../helpers/translate.js';

type Obj = Record<string, unknown>;
const CAPTURE = JSON.parse(readFileSync(new URL('../../../test/captures/claude-code-2.1.332-first-request.json', import.meta.url), 'utf8')) as { body: Obj };
const MARK = { type: 'ephemeral' };

/** A chat tool loop: system, two tools, a call and its result, then the final user turn. */
const CHAT = {
  model: 'claude-x',
  max_tokens: 100,
  messages: [
    { role: 'system', content: 'You are terse.' },
    { role: 'user', content: 'Weather in Paris?' },
    { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'weather', arguments: '{"city":"Paris"}' } }] },
    { role: 'tool', tool_call_id: 'call_1', content: '12C' },
    { role: 'assistant', content: 'It is 12C.' },
    { role: 'user', content: 'And tomorrow?' },
  ],
  tools: [
    { type: 'function', function: { name: 'weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } } },
    { type: 'function', function: { name: 'clock', parameters: { type: 'object', properties: {} } } },
  ],
};

const wire = (client: 'chat' | 'responses', body: Obj, auto: boolean): Obj =>
  makeTranslator(client, 'messages', { stream: false, cacheBreakpoints: auto ? 'auto' : 'off' }).request(body).body;

describe('prompt-cache breakpoints on Messages wire requests', () => {
  test('chat -> messages: the last tool, the system prompt and the turn before the final user turn; nothing else changes', () => {
    const off = wire('chat', CHAT, false);
    const on = wire('chat', CHAT, true);
    assert.equal(markers(off), 0);
    assert.equal(markers(on), 3);
    assert.deepEqual(
      (on['tools'] as Obj[]).map((t) => t['cache_control']),
      [undefined, MARK],
    );
    assert.deepEqual(on['system'], [{ type: 'text', text: 'You are terse.', cache_control: MARK }]);
    const messages = on['messages'] as Obj[];
    assert.deepEqual(messages.at(-2), { role: 'assistant', content: [{ type: 'text', text: 'It is 12C.', cache_control: MARK }] });
    assert.equal(markers(messages.at(-1)), 0, 'the final user turn is not marked');
    assert.deepEqual(prompt(on), prompt(off));
  });

  test("responses -> messages, Codex's request shape in a tool loop: the same three places", () => {
    const body = codexBody([
      { type: 'custom_tool_call', call_id: 'call_9', name: 'exec', input: 'text("hi")' },
      { type: 'custom_tool_call_output', call_id: 'call_9', output: 'hi' },
    ]);
    const on = wire('responses', body, true);
    assert.equal(markers(on), 3);
    assert.deepEqual((on['tools'] as Obj[]).at(-1)!['cache_control'], MARK);
    assert.deepEqual(on['system'], [{ type: 'text', text: 'You are Codex.', cache_control: MARK }]);
    const messages = on['messages'] as Obj[];
    assert.equal(messages.at(-1)!['role'], 'user');
    const stable = messages.at(-2)!['content'] as Obj[];
    assert.deepEqual([stable.at(-1)!['type'], stable.at(-1)!['cache_control']], ['tool_use', MARK]);
    assert.deepEqual(prompt(on), prompt(wire('responses', body, false)));
  });

  test('thinking, empty text and unknown blocks are never marked; a deferred tool is not either', () => {
    const body: Obj = {
      system: [
        { type: 'text', text: 'A' },
        { type: 'text', text: '' },
      ],
      tools: [
        { name: 'a', input_schema: {} },
        { name: 'b', input_schema: {}, defer_loading: true },
      ],
      messages: [
        { role: 'user', content: 'q1' },
        {
          role: 'assistant',
          content: [
            { type: 'text', text: 'a1' },
            { type: 'future_block', x: 1 },
          ],
        },
        { role: 'user', content: 'q2' },
        { role: 'assistant', content: [{ type: 'thinking', thinking: 't', signature: 's' }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'x', content: 'r' }] },
      ],
    };
    const out = withCacheBreakpoints(body);
    assert.deepEqual(out['system'], [
      { type: 'text', text: 'A', cache_control: MARK },
      { type: 'text', text: '' },
    ]);
    assert.deepEqual(
      (out['tools'] as Obj[]).map((t) => t['cache_control']),
      [MARK, undefined],
    );
    const messages = out['messages'] as Obj[];
    // The thinking-only turn cannot hold one: the last markable block before it does.
    assert.equal(markers(messages[3]), 0);
    assert.deepEqual(messages[2], { role: 'user', content: [{ type: 'text', text: 'q2', cache_control: MARK }] });
    assert.equal(markers(out), 3);
    assert.equal(markers(body), 0, 'the input is not modified');
  });

  test('a request with cache_control anywhere is returned as it is', () => {
    assert.equal(markers(CAPTURE.body), 3);
    assert.ok(hasCacheControl(CAPTURE.body));
    assert.equal(withCacheBreakpoints(CAPTURE.body), CAPTURE.body);
    for (const body of [
      { cache_control: MARK, messages: [{ role: 'user', content: 'q' }] },
      { tools: [{ name: 'a', input_schema: {}, cache_control: MARK }], messages: [] },
      { messages: [{ role: 'user', content: [{ type: 'tool_result', tool_use_id: 'x', content: [{ type: 'text', text: 'r', cache_control: MARK }] }] }] },
    ]) {
      assert.equal(withCacheBreakpoints(body), body);
    }
  });

  test('a one-turn request with a string system prompt and no tools gets one marker; never more than the limit', () => {
    const out = withCacheBreakpoints({ system: 'S', messages: [{ role: 'user', content: 'q' }] });
    assert.equal(markers(out), 1);
    assert.deepEqual(out['messages'], [{ role: 'user', content: 'q' }]);
    assert.ok(markers(wire('chat', CHAT, true)) <= MAX_BREAKPOINTS);
  });
});
