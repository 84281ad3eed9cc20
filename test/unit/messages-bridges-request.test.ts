/**
 * The request side of the Messages bridges (messages -> chat, messages -> responses) through
 * `translator.request()` as the pipeline calls it: every block and field of a Messages
 * request, and the request Claude Code 2.1.332 sends on its default config
 * (test/captures/claude-code-2.1.332-first-request.json: a `system` turn inside `messages`,
 * adaptive thinking, `output_config.effort`, `context_management`, a `defer_loading` tool,
 * `metadata.user_id` holding JSON).
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import { messagesApi } from '../../src/apis/messages.js';
import { GatewayError } from '../../src/errors/codes.js';
import { makeTranslator } from '../helpers/translate.js';

type Obj = Record<string, unknown>;

const CAPTURE = JSON.parse(readFileSync(new URL('../../../test/captures/claude-code-2.1.332-first-request.json', import.meta.url), 'utf8')) as { body: Obj };
const toResponses = (body: Obj, stream = false): Obj => makeTranslator('messages', 'responses', { stream }).request(body).body;
const toChat = (body: Obj, stream = false): Obj => makeTranslator('messages', 'chat', { stream }).request(body).body;

const PNG = { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgo=' };
const SCHEMA = { type: 'object', properties: { command: { type: 'string' } }, required: ['command'] };
const FULL: Obj = {
  model: 'up-model',
  max_tokens: 2048,
  system: [
    { type: 'text', text: 'You are terse.' },
    { type: 'text', text: ' Answer in English.', cache_control: { type: 'ephemeral' } },
  ],
  messages: [
    {
      role: 'user',
      content: [
        { type: 'text', text: 'look' },
        { type: 'image', source: PNG },
        { type: 'document', source: { type: 'text', media_type: 'text/plain', data: 'notes' } },
      ],
    },
    { role: 'system', content: 'The time is noon.' },
    {
      role: 'assistant',
      content: [
        { type: 'thinking', thinking: 'hm', signature: 'sig' },
        { type: 'text', text: 'Running it.' },
        { type: 'tool_use', id: 'toolu_1', name: 'Bash', input: { command: 'ls' } },
      ],
    },
    {
      role: 'user',
      content: [
        {
          type: 'tool_result',
          tool_use_id: 'toolu_1',
          content: [
            { type: 'text', text: 'a.txt' },
            { type: 'image', source: { type: 'url', url: 'https://x.test/s.png' } },
          ],
        },
        { type: 'text', text: 'and?' },
      ],
    },
    { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_2', name: 'Bash', input: {} }] },
    { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_2', is_error: true, content: '' }] },
  ],
  tools: [
    { name: 'Bash', description: 'Runs a command.', input_schema: SCHEMA },
    { name: 'Later', input_schema: { type: 'object', properties: {} }, defer_loading: true },
    { type: 'web_search_20250305', name: 'web_search' },
  ],
  tool_choice: { type: 'any', disable_parallel_tool_use: true },
  thinking: { type: 'adaptive', display: 'omitted' },
  output_config: { effort: 'max' },
  context_management: { edits: [{ type: 'clear_thinking_20251015', keep: 'all' }] },
  metadata: { user_id: '{"device_id":"d0","account_uuid":"","session_id":"s0"}' },
  temperature: 0.5,
  top_k: 5,
};

describe('messages -> responses request', () => {
  test('every block and field, in place and in order', () => {
    assert.deepEqual(toResponses(FULL, true), {
      model: 'up-model',
      instructions: 'You are terse. Answer in English.',
      input: [
        {
          role: 'user',
          content: [
            { type: 'input_text', text: 'look' },
            { type: 'input_image', image_url: 'data:image/png;base64,iVBORw0KGgo=', detail: 'auto' },
            { type: 'input_text', text: 'notes' },
          ],
        },
        { role: 'system', content: 'The time is noon.' },
        { role: 'assistant', content: 'Running it.' },
        { type: 'function_call', call_id: 'toolu_1', name: 'Bash', arguments: '{"command":"ls"}' },
        {
          type: 'function_call_output',
          call_id: 'toolu_1',
          output: [
            { type: 'input_text', text: 'a.txt' },
            { type: 'input_image', image_url: 'https://x.test/s.png', detail: 'auto' },
          ],
        },
        { role: 'user', content: [{ type: 'input_text', text: 'and?' }] },
        { type: 'function_call', call_id: 'toolu_2', name: 'Bash', arguments: '{}' },
        { type: 'function_call_output', call_id: 'toolu_2', output: 'error' },
      ],
      store: false,
      tools: [
        { type: 'function', name: 'Bash', description: 'Runs a command.', parameters: SCHEMA, strict: false },
        { type: 'function', name: 'Later', parameters: { type: 'object', properties: {} }, strict: false },
      ],
      tool_choice: 'required',
      parallel_tool_calls: false,
      max_output_tokens: 2048,
      reasoning: { effort: 'xhigh' },
      temperature: 0.5,
      stream: true,
    });
  });

  test('a PDF document -> input_file; a named tool choice -> the function', () => {
    const body = toResponses({
      model: 'm',
      max_tokens: 5,
      messages: [
        {
          role: 'user',
          content: [
            { type: 'document', title: 'spec.pdf', source: { type: 'base64', media_type: 'application/pdf', data: 'JVBER' } },
            { type: 'document', source: { type: 'url', url: 'https://x.test/a.pdf' } },
          ],
        },
      ],
      tools: [{ name: 'Bash', input_schema: SCHEMA }],
      tool_choice: { type: 'tool', name: 'Bash' },
    });
    assert.deepEqual(body['input'], [
      {
        role: 'user',
        content: [
          { type: 'input_file', filename: 'spec.pdf', file_data: 'data:application/pdf;base64,JVBER' },
          { type: 'input_file', file_url: 'https://x.test/a.pdf' },
        ],
      },
    ]);
    assert.deepEqual(body['tool_choice'], { type: 'function', name: 'Bash' });
    assert.equal(body['reasoning'], undefined, 'no thinking, no effort: none sent');
  });

  test('stop_sequences is refused with 400 naming it (the Responses API has no stop field)', () => {
    assert.throws(
      () => toResponses({ model: 'm', max_tokens: 5, messages: [{ role: 'user', content: 'x' }], stop_sequences: ['END'] }),
      (e: unknown) => e instanceof GatewayError && e.status === 400 && e.param === 'stop_sequences' && /stop/.test(e.message),
    );
    assert.doesNotThrow(() => toResponses({ model: 'm', max_tokens: 5, messages: [{ role: 'user', content: 'x' }], stop_sequences: [] }));
  });

  test('Claude Code 2.1.332 first request: the system turn in place, effort medium, no Anthropic-only field, nothing of metadata', () => {
    const body = toResponses(CAPTURE.body, true);
    const input = body['input'] as Obj[];
    assert.deepEqual(
      input.map((i) => i['role']),
      ['user', 'system'],
    );
    assert.ok(String(input[1]!['content']).startsWith('# Environment'));
    assert.ok(String(body['instructions']).includes('You are a Claude agent'));
    assert.deepEqual(body['reasoning'], { effort: 'medium' });
    assert.equal(body['max_output_tokens'], 128000);
    const tools = body['tools'] as Obj[];
    assert.deepEqual(
      tools.map((t) => t['name']),
      ['Bash', 'Read', 'ToolSearch', 'DeferredToolPlaceholder'],
    );
    assert.ok(tools.every((t) => t['defer_loading'] === undefined && t['strict'] === false));
    assert.deepEqual(Object.keys(body), ['model', 'instructions', 'input', 'store', 'tools', 'max_output_tokens', 'reasoning', 'stream']);
    const sent = JSON.stringify(body);
    for (const k of ['context_management', 'cache_control', 'defer_loading', 'device_id', 'session_id']) assert.ok(!sent.includes(k), `${k} is not sent`);
  });
});

describe('messages -> chat request', () => {
  test('a system turn inside messages -> a system message in place', () => {
    const body = toChat({
      model: 'm',
      max_tokens: 5,
      system: 'top',
      messages: [
        { role: 'user', content: 'hi' },
        { role: 'system', content: [{ type: 'text', text: 'mid' }] },
        { role: 'assistant', content: 'ok' },
      ],
    });
    assert.deepEqual(body['messages'], [
      { role: 'system', content: 'top' },
      { role: 'user', content: 'hi' },
      { role: 'system', content: 'mid' },
      { role: 'assistant', content: 'ok' },
    ]);
    assert.throws(
      () => toChat({ model: 'm', max_tokens: 5, messages: [{ role: 'tool', content: 'x' }] }),
      (e: unknown) => e instanceof GatewayError && e.status === 400 && e.param === 'messages[0].role' && /'user', 'assistant' or 'system'/.test(e.message),
      'another role is still refused, naming the turn',
    );
  });

  test('Claude Code 2.1.332 first request: accepted; effort medium; context_management and the JSON user_id not sent', () => {
    const body = toChat(CAPTURE.body, true);
    const messages = body['messages'] as Obj[];
    assert.deepEqual(
      messages.map((m) => m['role']),
      ['system', 'user', 'system'],
    );
    assert.equal(body['reasoning_effort'], 'medium');
    assert.equal(body['user'], undefined, "longer than OpenAI's 64-character user");
    assert.equal((body['tools'] as Obj[]).length, 4);
    assert.ok(!JSON.stringify(body).includes('context_management') && !JSON.stringify(body).includes('defer_loading'));
    assert.equal(
      toChat({ model: 'm', max_tokens: 5, messages: [{ role: 'user', content: 'x' }], metadata: { user_id: 'u-42' } })['user'],
      'u-42',
      'a short user id is still sent',
    );
    assert.equal(toChat({ ...FULL, messages: [{ role: 'user', content: 'x' }] })['reasoning_effort'], 'high', "max (xhigh) is above chat's levels: high");
  });
});

describe('what the gateway reads of a Messages body', () => {
  test("effort: output_config.effort in the gateway's levels (max stays max, above xhigh), adaptive thinking -> medium", () => {
    assert.equal(messagesApi.effort(CAPTURE.body), 'medium');
    assert.equal(messagesApi.effort({ output_config: { effort: 'max' } }), 'max');
    assert.equal(messagesApi.effort({ output_config: { effort: 'xhigh' } }), 'xhigh');
    assert.equal(messagesApi.effort({ thinking: { type: 'adaptive' } }), 'medium');
    assert.deepEqual(messagesApi.withEffort({ output_config: { effort: 'high' } }, 'minimal')['output_config'], { effort: 'low' }, "Anthropic's lowest level");
  });

  test('the prompt keeps the system turn, and the tools', () => {
    const prompt = messagesApi.prompt(CAPTURE.body);
    assert.deepEqual(
      (prompt.messages as Obj[]).map((m) => m['role']),
      ['system', 'user', 'system'],
    );
    assert.ok(JSON.stringify(prompt.tools).includes('ToolSearch'));
    assert.deepEqual(
      messagesApi.sessionHints(CAPTURE.body),
      { user: (CAPTURE.body['metadata'] as Obj)['user_id'], cacheLifetimeMs: 300_000 },
      "the session, and the 5-minute cache its cache_control breakpoints ask for (no ttl: Anthropic's default)",
    );
  });
});
