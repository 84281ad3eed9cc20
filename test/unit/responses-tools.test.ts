/**
 * The tools of a Responses request (src/translate/responses-tools.ts) and how the chat
 * bridge uses them: Codex CLI 0.171.0 sends its tools only in an `additional_tools` input
 * item, grouped in namespaces (test/helpers/codex-request.ts). The tools reach the
 * wire under flat unique names, the item is not sent as a message, and a call comes back
 * under the tool's own name and namespace (none for the `functions` namespace: Codex runs
 * those unqualified, and refuses another namespace's tool without its namespace).
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ResponsesTools } from '../../src/translate/responses-tools.js';
import { codexBody } from '../helpers/codex-request.js';
import { drive, makeTranslator } from '../helpers/translate.js';

type Obj = Record<string, unknown>;

const params = (prop: string): Obj => ({ type: 'object', properties: { [prop]: { type: 'string' } }, required: [prop], additionalProperties: false });

describe('ResponsesTools', () => {
  test('collects top-level tools and additional_tools items; functions keep their names, other namespaces are flattened', () => {
    const tools = ResponsesTools.of({ ...codexBody(), tools: [{ type: 'function', name: 'lookup', parameters: params('q') }, { type: 'web_search' }] });
    assert.deepEqual(
      tools.list.map((t) => [t.wire, t.name, t.namespace, t.kind]),
      [
        ['lookup', 'lookup', null, 'function'],
        ['exec', 'exec', null, 'custom'],
        ['wait', 'wait', null, 'function'],
        ['clock__sleep', 'sleep', 'clock', 'function'],
      ],
    );
    assert.deepEqual(tools.back('clock__sleep'), tools.list[3]);
    assert.equal(tools.back('exec').kind, 'custom');
    assert.deepEqual(tools.back('never_offered'), { name: 'never_offered', namespace: null, kind: 'function' });
    assert.equal(tools.list[2]!.parameters?.['required'] instanceof Array, true);
  });

  test('a call in the conversation is named as offered, with or without its namespace', () => {
    const tools = ResponsesTools.of(codexBody());
    assert.equal(tools.wireName('sleep', 'clock'), 'clock__sleep');
    assert.equal(tools.wireName('exec', undefined), 'exec');
    assert.equal(tools.wireName('exec', 'functions'), 'exec');
    assert.equal(tools.wireName('gone', 'mcp'), 'mcp__gone', 'a tool no longer offered keeps the name it would have');
    assert.equal(tools.chosen({ type: 'function', name: 'sleep', namespace: 'clock' })?.wire, 'clock__sleep');
    assert.equal(tools.chosen({ type: 'custom', name: 'exec' })?.wire, 'exec');
    assert.equal(tools.chosen({ type: 'function', name: 'nope' }), undefined);
  });

  test('names the wire would refuse or that collide get unique wire-safe names, and map back', () => {
    const long = 'x'.repeat(80);
    const tools = ResponsesTools.of({
      tools: [
        { type: 'function', name: 'exec' },
        { type: 'namespace', name: 'functions', tools: [{ type: 'custom', name: 'exec' }] },
        {
          type: 'namespace',
          name: 'mcp.srv',
          tools: [
            { type: 'function', name: long },
            { type: 'function', name: 'a b' },
          ],
        },
        { type: 'function', name: 'exec' },
      ],
    });
    const wires = tools.list.map((t) => t.wire);
    assert.equal(new Set(wires).size, wires.length, 'unique');
    assert.equal(tools.list.length, 4, 'a tool declared twice is offered once');
    for (const w of wires) assert.match(w, /^[A-Za-z0-9_-]{1,64}$/);
    const fnExec = tools.list.find((t) => t.kind === 'custom')!;
    assert.deepEqual([fnExec.wire, fnExec.namespace], ['functions__exec', 'functions'], 'the colliding functions tool is called back qualified');
    const longTool = tools.list.find((t) => t.name === long)!;
    const back = tools.back(longTool.wire);
    assert.deepEqual([back.name, back.namespace, back.kind], [long, 'mcp.srv', 'function']);
    assert.equal(tools.back('mcp_srv__a_b').name, 'a b');
  });
});

describe('responses -> chat with namespaced tools', () => {
  test('the additional_tools item is not a message; every tool is offered under its wire name; calls in the input use it', () => {
    const body = codexBody([
      { type: 'function_call', call_id: 'call_1', name: 'sleep', namespace: 'clock', arguments: '{"duration_ms":5}' },
      { type: 'function_call_output', call_id: 'call_1', output: 'Sleep completed.' },
      { type: 'custom_tool_call', call_id: 'call_2', name: 'exec', input: 'text("hi")' },
      { type: 'custom_tool_call_output', call_id: 'call_2', output: [{ type: 'input_text', text: 'Script completed' }] },
    ]);
    const sent = makeTranslator('responses', 'chat').request(body).body;
    const messages = sent['messages'] as Obj[];
    assert.deepEqual(
      messages.map((m) => m['role']),
      ['system', 'user', 'assistant', 'tool', 'assistant', 'tool'],
    );
    assert.ok(!JSON.stringify(messages).includes('additional_tools'));
    assert.deepEqual(((messages[2]!['tool_calls'] as Obj[])[0]!['function'] as Obj)['name'], 'clock__sleep');
    assert.deepEqual((messages[4]!['tool_calls'] as Obj[])[0]!['function'], { name: 'exec', arguments: JSON.stringify({ input: 'text("hi")' }) });
    assert.deepEqual(messages[5], { role: 'tool', tool_call_id: 'call_2', content: 'Script completed' });
    const offered = (sent['tools'] as Obj[]).map((t) => (t['function'] as Obj)['name']);
    assert.deepEqual(offered, ['exec', 'wait', 'clock__sleep']);
    assert.deepEqual(((sent['tools'] as Obj[])[0]!['function'] as Obj)['parameters'], {
      type: 'object',
      properties: { input: { type: 'string', description: 'The raw input of the tool, exactly as the tool description asks for it.' } },
      required: ['input'],
      additionalProperties: false,
    });
    assert.equal(sent['parallel_tool_calls'], false);
  });

  test('a streamed call of a namespaced tool comes back with its namespace; a functions custom tool without one, its input streamed', () => {
    const chunk = (delta: Obj, finish: string | null = null): string =>
      `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
    const tr = makeTranslator('responses', 'chat');
    tr.request(codexBody());
    const d = drive(tr, [
      Buffer.from(
        chunk({
          role: 'assistant',
          tool_calls: [{ index: 0, id: 'call_a', type: 'function', function: { name: 'clock__sleep', arguments: '{"duration_ms"' } }],
        }) +
          chunk({ tool_calls: [{ index: 0, function: { arguments: ':5}' } }] }) +
          chunk({ tool_calls: [{ index: 1, id: 'call_b', type: 'function', function: { name: 'exec', arguments: '{"input":"text(1)"}' } }] }) +
          chunk({}, 'tool_calls') +
          'data: [DONE]\n\n',
      ),
    ]);
    assert.equal(d.error, null);
    const events = d.text
      .split('\n')
      .filter((l) => l.startsWith('data: '))
      .map((l) => JSON.parse(l.slice(6)) as Obj);
    const output = (events.at(-1)!['response'] as Obj)['output'] as Obj[];
    assert.deepEqual(
      output.map((i) => [i['type'], i['name'], i['namespace'], i['arguments'] ?? i['input']]),
      [
        ['function_call', 'sleep', 'clock', '{"duration_ms":5}'],
        ['custom_tool_call', 'exec', undefined, 'text(1)'],
      ],
    );
    const custom = events.filter((e) => String(e['type']).startsWith('response.custom_tool_call_input'));
    assert.deepEqual(
      custom.map((e) => [e['type'], e['delta'] ?? e['input']]),
      [
        ['response.custom_tool_call_input.delta', 'text(1)'],
        ['response.custom_tool_call_input.done', 'text(1)'],
      ],
    );
    const added = events.find((e) => e['type'] === 'response.output_item.added' && (e['item'] as Obj)['type'] === 'function_call')!;
    assert.equal((added['item'] as Obj)['namespace'], 'clock');
  });
});
