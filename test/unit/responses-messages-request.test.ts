/**
 * responses -> messages, the request side (src/translate/responses-messages/request.ts,
 * input.ts), through `translator.request()` as the pipeline calls it: the conversation as
 * Anthropic `system` and turns, tools, the output cap and thinking, and what is refused
 * with a 400 the client can act on. The thinking round trip starts from the recording
 * `anthropic-messages-thinking-tool-use.json`.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { GatewayError } from '../../src/errors/codes.js';
import { codexBody } from '../helpers/codex-request.js';
import { fixtureJson } from '../helpers/recordings.js';
import { makeTranslator } from '../helpers/translate.js';

type Obj = Record<string, unknown>;

/** The Messages body for a Responses body (JSON answer, default upstream options unless given). */
const convert = (body: Obj, options: Obj = { default_max_tokens: 1000 }, stream = false): Obj =>
  makeTranslator('responses', 'messages', { stream, options }).request(body).body;

const PNG = 'iVBORw0KGgo=';

describe('responses -> messages request: the conversation', () => {
  test('instructions and system/developer items (also mid-conversation) become system; message parts become blocks', () => {
    const sent = convert({
      model: 'claude',
      instructions: 'Be brief.',
      input: [
        {
          role: 'user',
          content: [
            { type: 'input_text', text: 'look' },
            { type: 'input_image', image_url: `data:image/jpg;base64,${PNG}` },
            { type: 'input_image', image_url: 'https://example.com/a.png' },
          ],
        },
        { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'A picture.', annotations: [] }] },
        { type: 'message', role: 'developer', content: [{ type: 'input_text', text: 'Now answer in French.' }] },
        {
          role: 'user',
          content: [
            { type: 'input_file', filename: 'a.pdf', file_data: 'data:application/pdf;base64,JVBERi0=' },
            { type: 'input_text', text: '  ' },
            { type: 'input_text', text: 'and this?' },
          ],
        },
      ],
    });
    assert.deepEqual(sent['system'], [
      { type: 'text', text: 'Be brief.' },
      { type: 'text', text: 'Now answer in French.' },
    ]);
    assert.deepEqual(sent['messages'], [
      {
        role: 'user',
        content: [
          { type: 'text', text: 'look' },
          { type: 'image', source: { type: 'base64', media_type: 'image/jpeg', data: PNG } },
          { type: 'image', source: { type: 'url', url: 'https://example.com/a.png' } },
        ],
      },
      { role: 'assistant', content: [{ type: 'text', text: 'A picture.' }] },
      {
        role: 'user',
        content: [
          { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: 'JVBERi0=' }, title: 'a.pdf' },
          { type: 'text', text: 'and this?' },
        ],
      },
    ]);
    assert.equal(sent['max_tokens'], 1000, 'default_max_tokens');
    assert.equal(convert({ model: 'claude', instructions: 'x', input: 'hi' })['system'], 'x', 'one system text is sent as a string');
  });

  test('function and custom tool calls become tool_use blocks; their outputs tool_result blocks, consecutive ones in one user turn', () => {
    const sent = convert(
      codexBody([
        { type: 'function_call', call_id: 'call_a', name: 'sleep', namespace: 'clock', arguments: '{"duration_ms":5}' },
        { type: 'function_call', call_id: 'call_b', name: 'wait', arguments: '{"cell_id":"1"}' },
        { type: 'function_call_output', call_id: 'call_a', output: 'Sleep completed.' },
        {
          type: 'function_call_output',
          call_id: 'call_b',
          output: [
            { type: 'input_text', text: 'done' },
            { type: 'input_image', image_url: `data:image/png;base64,${PNG}` },
          ],
        },
        { type: 'custom_tool_call', call_id: 'call_c', name: 'exec', input: 'text("hi")' },
        { type: 'custom_tool_call_output', call_id: 'call_c', output: [{ type: 'input_text', text: 'Script completed' }] },
      ]),
    );
    assert.equal(sent['system'], 'You are Codex.');
    assert.deepEqual(sent['messages'], [
      { role: 'user', content: [{ type: 'text', text: 'hi' }] },
      {
        role: 'assistant',
        content: [
          { type: 'tool_use', id: 'call_a', name: 'clock__sleep', input: { duration_ms: 5 } },
          { type: 'tool_use', id: 'call_b', name: 'wait', input: { cell_id: '1' } },
        ],
      },
      {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: 'call_a', content: 'Sleep completed.' },
          {
            type: 'tool_result',
            tool_use_id: 'call_b',
            content: [
              { type: 'text', text: 'done' },
              { type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG } },
            ],
          },
        ],
      },
      { role: 'assistant', content: [{ type: 'tool_use', id: 'call_c', name: 'exec', input: { input: 'text("hi")' } }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'call_c', content: [{ type: 'text', text: 'Script completed' }] }] },
    ]);
  });

  test('what the Messages API cannot take is a 400 naming the field', () => {
    const cases: [Obj, string][] = [
      [{ background: true, input: 'hi' }, 'background'],
      [{ conversation: 'conv_1', input: 'hi' }, 'conversation'],
      [{ input: [{ type: 'item_reference', id: 'msg_1' }] }, 'input[0]'],
      [{ input: [{ role: 'user', content: [{ type: 'input_file', file_data: 'data:text/plain;base64,aGk=' }] }] }, 'input[0].content[0]'],
      [{ input: [{ role: 'user', content: [{ type: 'input_image', file_id: 'file_1' }] }] }, 'input[0].content[0].image_url'],
      [{ input: [{ role: 'user', content: [{ type: 'input_audio', input_audio: {} }] }] }, 'input[0].content[0]'],
      [{ input: [{ type: 'web_search_call', id: 'ws_1' }] }, 'input[0]'],
      [{ instructions: 'only this', input: [] }, 'input'],
      [{ input: 'hi', max_output_tokens: 0 }, 'max_output_tokens'],
    ];
    for (const [body, param] of cases) {
      assert.throws(
        () => convert({ model: 'claude', ...body }),
        (e: unknown) => e instanceof GatewayError && e.status === 400 && e.param === param && e.message.length > 20,
        JSON.stringify(body),
      );
    }
  });
});

describe('responses -> messages request: tools and parameters', () => {
  test('function and custom tools (namespaces flattened), hosted tools left out; tool_choice and parallel_tool_calls', () => {
    const body = {
      ...codexBody(),
      tools: [
        { type: 'function', name: 'lookup', description: 'Look up', parameters: { type: 'object', properties: { q: { type: 'string' } } } },
        { type: 'web_search' },
      ],
    };
    const sent = convert(body);
    const tools = sent['tools'] as Obj[];
    assert.deepEqual(
      tools.map((t) => t['name']),
      ['lookup', 'exec', 'wait', 'clock__sleep'],
    );
    assert.deepEqual(tools[0], { name: 'lookup', description: 'Look up', input_schema: { type: 'object', properties: { q: { type: 'string' } } } });
    assert.deepEqual((tools[1]!['input_schema'] as Obj)['required'], ['input']);
    assert.deepEqual(sent['tool_choice'], { type: 'auto', disable_parallel_tool_use: true });
    const choice = (c: unknown, parallel?: boolean): unknown =>
      convert({ ...body, tool_choice: c, ...(parallel === undefined ? {} : { parallel_tool_calls: parallel }) })['tool_choice'];
    assert.deepEqual(choice('required', true), { type: 'any' });
    assert.deepEqual(choice('none', false), { type: 'none' });
    assert.deepEqual(choice({ type: 'function', name: 'sleep', namespace: 'clock' }, true), { type: 'tool', name: 'clock__sleep' });
    assert.deepEqual(choice({ type: 'custom', name: 'exec' }, true), { type: 'tool', name: 'exec' });
    assert.equal(choice({ type: 'web_search' }, true), undefined);
  });

  test('max_output_tokens, stop, temperature and top_p; reasoning.effort becomes a thinking budget as chat -> messages does', () => {
    const plain = convert({
      model: 'claude',
      input: 'hi',
      max_output_tokens: 300,
      temperature: 1.7,
      top_p: 0.5,
      stop: ['END', ' '],
      user: 'u-1',
      reasoning: { effort: 'none' },
    });
    assert.deepEqual(
      [plain['max_tokens'], plain['temperature'], plain['top_p'], plain['stop_sequences'], plain['thinking']],
      [300, 1, 0.5, ['END'], undefined],
    );
    assert.deepEqual(plain['metadata'], { user_id: 'u-1' });
    const thinking = convert({ model: 'claude', input: 'hi', reasoning: { effort: 'high' }, temperature: 0.2 });
    assert.deepEqual(
      [thinking['thinking'], thinking['max_tokens'], thinking['temperature']],
      [{ type: 'enabled', budget_tokens: 16384 }, 16384 + 1000, undefined],
    );
    const capped = convert({ model: 'claude', input: 'hi', reasoning: { effort: 'medium' }, max_output_tokens: 5000 }, { thinking_budgets: { medium: 6000 } });
    assert.deepEqual([capped['thinking'], capped['max_tokens']], [{ type: 'enabled', budget_tokens: 4999 }, 5000]);
    assert.equal(
      convert({ model: 'claude', input: 'hi', reasoning: { effort: 'high' }, tool_choice: 'required', tools: [{ type: 'function', name: 'f' }] })['thinking'],
      undefined,
      'no thinking with a forced tool',
    );
    const schema = { type: 'object', properties: { a: { type: 'string' } } };
    assert.deepEqual(convert({ model: 'claude', input: 'hi', text: { format: { type: 'json_schema', name: 'x', schema } } })['output_config'], {
      format: { type: 'json_schema', schema },
    });
    assert.equal(convert({ model: 'claude', input: 'hi' }, {}, true)['stream'], true);
  });
});

describe('responses -> messages request: thinking carried in encrypted_content', () => {
  const rec = fixtureJson('anthropic-messages-thinking-tool-use.json');
  const recorded = (rec['content'] as Obj[])[0]!;
  const toolUse = (rec['content'] as Obj[])[2]!;
  const tools = [{ type: 'function', name: 'get_user_country', parameters: { type: 'object', properties: {} } }];
  /** The recorded answer through json(), as a Responses client gets it, with the model `model` asked. */
  const answered = (model: string): Obj[] => {
    const tr = makeTranslator('responses', 'messages', { stream: false });
    tr.request({ model, input: 'Largest city?', tools, reasoning: { effort: 'high' } });
    return JSON.parse(tr.json(Buffer.from(JSON.stringify(rec)), rec).body.toString('utf8'))['output'] as Obj[];
  };
  const followUp = (output: Obj[], model = 'claude-upstream-id'): Obj =>
    convert({
      model,
      tools,
      reasoning: { effort: 'high' },
      input: [{ role: 'user', content: 'Largest city?' }, ...output, { type: 'function_call_output', call_id: toolUse['id'], output: 'France' }],
    });

  test('the reasoning item sent back becomes the signed thinking block first in the tool turn, and thinking stays on', () => {
    const output = answered('claude-upstream-id');
    assert.deepEqual(
      output.map((i) => i['type']),
      ['reasoning', 'message', 'function_call'],
    );
    assert.equal((output[0]!['summary'] as Obj[])[0]!['text'], recorded['thinking']);
    const sent = followUp(output);
    assert.deepEqual(sent['thinking'], { type: 'enabled', budget_tokens: 16384 });
    const turn = (sent['messages'] as Obj[])[1]!;
    assert.equal(turn['role'], 'assistant');
    assert.deepEqual((turn['content'] as Obj[])[0], { type: 'thinking', thinking: recorded['thinking'], signature: recorded['signature'] });
    assert.deepEqual(
      (turn['content'] as Obj[]).map((b) => b['type']),
      ['thinking', 'text', 'tool_use'],
    );
  });

  test('without it (dropped, another provider’s, another model’s), the tool turn goes without thinking and no thinking block is sent', () => {
    const output = answered('claude-upstream-id');
    const without = output.filter((i) => i['type'] !== 'reasoning');
    const foreign = output.map((i) => (i['type'] === 'reasoning' ? { ...i, encrypted_content: 'gAAAAABoyXusnBzv6TRLFFsi09D2XC4A' } : i));
    for (const [label, sent] of [
      ['dropped', followUp(without)],
      ['foreign', followUp(foreign)],
      ['another model', followUp(answered('claude-other-model'))],
    ] as const) {
      assert.equal(sent['thinking'], undefined, label);
      assert.ok(!JSON.stringify(sent['messages']).includes('"thinking"'), `${label}: no thinking block`);
      assert.deepEqual(
        ((sent['messages'] as Obj[])[1]!['content'] as Obj[]).map((b) => b['type']),
        ['text', 'tool_use'],
        label,
      );
    }
  });
});
