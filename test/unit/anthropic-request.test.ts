/**
 * toAnthropicRequest: OpenAI chat bodies -> Anthropic Messages bodies, and the 400s for
 * what Anthropic cannot express.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { GatewayError } from '../../src/errors/codes.js';
import { resolveAnthropicOptions } from '../../src/providers/anthropic/options.js';
import { toAnthropicRequest } from '../../src/translate/chat-messages/request.js';

const OPTS = resolveAnthropicOptions(undefined);
const convert = (body: Record<string, unknown>) => toAnthropicRequest(body, OPTS);
const base = (extra: Record<string, unknown> = {}) => ({ model: 'claude-sonnet-4-5', messages: [{ role: 'user', content: 'hi' }], ...extra });

function rejects(body: Record<string, unknown>, param: string): void {
  assert.throws(
    () => convert(body),
    (err: unknown) => err instanceof GatewayError && err.code === 'GW_ERR_INVALID_REQUEST' && err.status === 400 && err.param === param,
  );
}

describe('options', () => {
  test('defaults', () => {
    assert.deepEqual(OPTS, {
      anthropic_version: '2023-06-01',
      default_max_tokens: 4096,
      thinking_budgets: { minimal: 1024, low: 2048, medium: 8192, high: 16384, xhigh: 32000 },
    });
  });
  test('partial budgets keep the other defaults; bad values are refused', () => {
    assert.equal(resolveAnthropicOptions({ thinking_budgets: { high: 20000 } }).thinking_budgets.medium, 8192);
    assert.throws(() => resolveAnthropicOptions({ thinking_budgets: { low: 100 } }), /thinking_budgets\/low/);
    assert.throws(() => resolveAnthropicOptions({ nope: 1 }));
  });
});

describe('messages', () => {
  test('a plain request', () => {
    assert.deepEqual(convert(base()), {
      model: 'claude-sonnet-4-5',
      messages: [{ role: 'user', content: [{ type: 'text', text: 'hi' }] }],
      max_tokens: 4096,
    });
  });

  test('system and developer messages become the top-level system', () => {
    const one = convert({
      model: 'm',
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'hi' },
      ],
    });
    assert.equal(one['system'], 'Be brief.');
    const two = convert({
      model: 'm',
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'developer', content: [{ type: 'text', text: 'Use French.' }] },
        { role: 'user', content: 'hi' },
      ],
    });
    assert.deepEqual(two['system'], [
      { type: 'text', text: 'Be brief.' },
      { type: 'text', text: 'Use French.' },
    ]);
    assert.equal((two['messages'] as unknown[]).length, 1);
  });

  test('images: data: URLs -> base64 source, http(s) URLs -> url source', () => {
    const out = convert(
      base({
        messages: [
          {
            role: 'user',
            content: [
              { type: 'text', text: 'What is this?' },
              { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=' } },
              { type: 'image_url', image_url: { url: 'https://example.com/cat.jpg', detail: 'high' } },
            ],
          },
        ],
      }),
    );
    assert.deepEqual((out['messages'] as { content: unknown[] }[])[0]!.content, [
      { type: 'text', text: 'What is this?' },
      { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgo=' } },
      { type: 'image', source: { type: 'url', url: 'https://example.com/cat.jpg' } },
    ]);
    rejects(base({ messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'ftp://x/y.png' } }] }] }), 'messages[0].content[0]');
  });

  test('tool calls and tool results round trip, consecutive results merged into one user turn', () => {
    const out = convert({
      model: 'm',
      messages: [
        { role: 'user', content: 'Weather in Paris and Rome?' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [
            { id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } },
            { id: 'call_2', type: 'function', function: { name: 'get_weather', arguments: '{not json' } },
          ],
        },
        { role: 'tool', tool_call_id: 'call_1', content: '18C' },
        { role: 'tool', tool_call_id: 'call_2', content: [{ type: 'text', text: '21C' }] },
        { role: 'user', content: 'Thanks' },
      ],
    });
    assert.deepEqual(out['messages'], [
      { role: 'user', content: [{ type: 'text', text: 'Weather in Paris and Rome?' }] },
      {
        role: 'assistant',
        content: [
          { type: 'tool_use', id: 'call_1', name: 'get_weather', input: { city: 'Paris' } },
          { type: 'tool_use', id: 'call_2', name: 'get_weather', input: {} },
        ],
      },
      {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: 'call_1', content: '18C' },
          { type: 'tool_result', tool_use_id: 'call_2', content: [{ type: 'text', text: '21C' }] },
          { type: 'text', text: 'Thanks' },
        ],
      },
    ]);
  });

  test('consecutive same-role messages are merged; empty ones skipped', () => {
    const out = convert({
      model: 'm',
      messages: [
        { role: 'user', content: 'a' },
        { role: 'user', content: 'b' },
        { role: 'assistant', content: '' },
        { role: 'user', content: 'c' },
        { role: 'assistant', content: 'd' },
      ],
    });
    assert.deepEqual(out['messages'], [
      { role: 'user', content: ['a', 'b', 'c'].map((text) => ({ type: 'text', text })) },
      { role: 'assistant', content: [{ type: 'text', text: 'd' }] },
    ]);
  });

  test('what cannot be expressed is a 400 naming the parameter', () => {
    rejects(base({ n: 2 }), 'n');
    rejects(base({ modalities: ['text', 'audio'] }), 'modalities');
    rejects(base({ messages: [{ role: 'user', content: [{ type: 'input_audio', input_audio: { data: 'AAA', format: 'wav' } }] }] }), 'messages[0].content[0]');
    rejects(
      base({
        messages: [
          { role: 'user', content: 'hi' },
          { role: 'function', name: 'f', content: 'x' },
        ],
      }),
      'messages[1].role',
    );
    rejects(base({ tools: [{ type: 'custom', custom: { name: 'x' } }] }), 'tools[0]');
  });

  test('reasoning_effort above xhigh gets the largest budget; a level the gateway does not know sends no thinking (no 400)', () => {
    for (const level of ['max', 'ultra'])
      assert.deepEqual(convert(base({ reasoning_effort: level }))['thinking'], { type: 'enabled', budget_tokens: 32000 }, level);
    assert.equal(convert(base({ reasoning_effort: 'extreme' }))['thinking'], undefined);
    assert.equal(convert(base({ reasoning_effort: 'extreme' }))['max_tokens'], 4096);
  });

  test('n: 1 is accepted', () => {
    assert.equal(convert(base({ n: 1 }))['max_tokens'], 4096);
  });
});

describe('parameters', () => {
  test('tools and tool_choice', () => {
    const tools = [
      {
        type: 'function',
        function: {
          name: 'get_weather',
          description: 'Weather for a city',
          parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
        },
      },
    ];
    const out = convert(base({ tools }));
    assert.deepEqual(out['tools'], [
      {
        name: 'get_weather',
        description: 'Weather for a city',
        input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
      },
    ]);
    assert.equal(out['tool_choice'], undefined);
    assert.deepEqual(convert(base({ tools, tool_choice: 'auto' }))['tool_choice'], { type: 'auto' });
    assert.deepEqual(convert(base({ tools, tool_choice: 'required' }))['tool_choice'], { type: 'any' });
    assert.deepEqual(convert(base({ tools, tool_choice: 'none' }))['tool_choice'], { type: 'none' });
    assert.deepEqual(convert(base({ tools, tool_choice: { type: 'function', function: { name: 'get_weather' } } }))['tool_choice'], {
      type: 'tool',
      name: 'get_weather',
    });
    assert.deepEqual(convert(base({ tools, parallel_tool_calls: false }))['tool_choice'], { type: 'auto', disable_parallel_tool_use: true });
    assert.deepEqual(convert(base({ tools, tool_choice: 'required', parallel_tool_calls: false }))['tool_choice'], {
      type: 'any',
      disable_parallel_tool_use: true,
    });
    assert.deepEqual(convert(base({ tools: [{ type: 'function', function: { name: 'now' } }] }))['tools'], [
      { name: 'now', input_schema: { type: 'object', properties: {} } },
    ]);
  });

  test('max tokens, stop, sampling, user, stream', () => {
    const out = convert(
      base({
        max_completion_tokens: 500,
        max_tokens: 9,
        stop: 'END',
        temperature: 1.7,
        top_p: 0.9,
        user: 'u-42',
        stream: true,
        seed: 7,
        frequency_penalty: 0.5,
      }),
    );
    assert.equal(out['max_tokens'], 500);
    assert.deepEqual(out['stop_sequences'], ['END']);
    assert.equal(out['temperature'], 1);
    assert.equal(out['top_p'], 0.9);
    assert.deepEqual(out['metadata'], { user_id: 'u-42' });
    assert.equal(out['stream'], true);
    assert.equal(out['seed'], undefined);
    assert.equal(out['frequency_penalty'], undefined);
    assert.equal(convert(base({ max_tokens: 9 }))['max_tokens'], 9);
    assert.deepEqual(convert(base({ stop: ['a', 'b'] }))['stop_sequences'], ['a', 'b']);
    assert.equal(convert(base({ temperature: 0.3 }))['temperature'], 0.3);
  });

  test('reasoning_effort -> thinking budget; sampling dropped; max_tokens raised above the budget', () => {
    const out = convert(base({ reasoning_effort: 'medium', temperature: 0.5, top_p: 0.5 }));
    assert.deepEqual(out['thinking'], { type: 'enabled', budget_tokens: OPTS.thinking_budgets.medium });
    assert.equal(out['temperature'], undefined);
    assert.equal(out['top_p'], undefined);
    assert.equal(out['max_tokens'], OPTS.thinking_budgets.medium + OPTS.default_max_tokens);
    const roomy = convert(base({ reasoning_effort: 'low', max_completion_tokens: 10000 }));
    assert.equal(roomy['max_tokens'], 10000);
    assert.equal((roomy['thinking'] as { budget_tokens: number }).budget_tokens, OPTS.thinking_budgets.low);
    assert.equal(convert(base({ reasoning_effort: 'none' }))['thinking'], undefined);
    assert.equal(convert(base())['thinking'], undefined);
  });

  test('json_schema response_format -> output_config.format', () => {
    const schema = { type: 'object', properties: { a: { type: 'number' } } };
    const out = convert(base({ response_format: { type: 'json_schema', json_schema: { name: 'x', schema } } }));
    assert.deepEqual(out['output_config'], { format: { type: 'json_schema', schema } });
  });

  test('the input body is not mutated', () => {
    const body = base({ tools: [{ type: 'function', function: { name: 'f' } }], parallel_tool_calls: false });
    const before = JSON.stringify(body);
    convert(body);
    assert.equal(JSON.stringify(body), before);
  });
});
