/**
 * The request translators at the sizes a client can send: work linear in the request
 * (measured by test/helpers/array-work.ts, not by a clock) and the same answer as for a
 * small request.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { arrayWork } from '../helpers/array-work.js';
import { makeTranslator } from '../helpers/translate.js';

type Obj = Record<string, unknown>;

const toMessages = (client: 'chat' | 'responses', body: Obj): Obj =>
  makeTranslator(client, 'messages', { stream: false, options: { default_max_tokens: 1000 } }).request(body).body;

/** A chat request: an assistant turn calling `n` tools, then `lead` user messages, then the `n` tool results. */
function chatToolResults(n: number, lead: Obj[] = []): Obj {
  const calls = Array.from({ length: n }, (_, i) => ({ id: `c${i}`, type: 'function', function: { name: 'f', arguments: '{}' } }));
  const results = Array.from({ length: n }, (_, i) => ({ role: 'tool', tool_call_id: `c${i}`, content: `r${i}` }));
  return { model: 'claude', messages: [{ role: 'user', content: 'go' }, { role: 'assistant', content: null, tool_calls: calls }, ...lead, ...results] };
}

/** A Responses request: `n` function calls, `lead` user items, then their `n` outputs. */
function responsesToolResults(n: number, lead: Obj[] = []): Obj {
  const calls = Array.from({ length: n }, (_, i) => ({ type: 'function_call', call_id: `c${i}`, name: 'f', arguments: '{}' }));
  const outputs = Array.from({ length: n }, (_, i) => ({ type: 'function_call_output', call_id: `c${i}`, output: `r${i}` }));
  return { model: 'claude', input: [{ role: 'user', content: 'go' }, ...calls, ...lead, ...outputs] };
}

/** The work of converting `build(n)` and of `build(4n)`: linear work grows about 4 times, quadratic 16. */
function growth(build: (n: number) => Obj, convert: (body: Obj) => Obj, n: number): number {
  const small = build(n);
  const large = build(4 * n);
  return arrayWork(() => convert(large)).work / arrayWork(() => convert(small)).work;
}

describe('many tool results in a row', () => {
  const N = 50_000;
  /** Results after user text: correctness does not depend on size, linearity is measured by growth(). */
  const M = 2_000;

  test('chat -> messages: 50,000 tool results become one user turn, in order', () => {
    const messages = toMessages('chat', chatToolResults(N))['messages'] as { role: string; content: Obj[] }[];
    assert.equal(messages.length, 3);
    assert.equal(messages[2]!.role, 'user');
    assert.equal(messages[2]!.content.length, N);
    assert.ok(messages[2]!.content.every((b, i) => b['type'] === 'tool_result' && b['tool_use_id'] === `c${i}` && b['content'] === `r${i}`));
  });

  test('chat -> messages: the work grows linearly with the number of results', () => {
    const ratio = growth(
      (n) => chatToolResults(n),
      (b) => toMessages('chat', b),
      5_000,
    );
    assert.ok(ratio < 6, `4x the results cost ${ratio.toFixed(1)}x the work`);
  });

  test('chat -> messages: results after user text still lead the turn, and the work stays linear', () => {
    const lead = [{ role: 'user', content: 'and then' }];
    const messages = toMessages('chat', chatToolResults(M, lead))['messages'] as { role: string; content: Obj[] }[];
    const turn = messages[2]!.content;
    assert.equal(turn.length, M + 1);
    assert.ok(turn.slice(0, M).every((b, i) => b['type'] === 'tool_result' && b['tool_use_id'] === `c${i}`));
    assert.deepEqual(turn[M], { type: 'text', text: 'and then' });
    const ratio = growth(
      (n) => chatToolResults(n, lead),
      (b) => toMessages('chat', b),
      2_000,
    );
    assert.ok(ratio < 6, `4x the results cost ${ratio.toFixed(1)}x the work`);
  });

  test('responses -> messages: the same for function_call_output items', () => {
    const lead = [{ role: 'user', content: 'and then' }];
    const messages = toMessages('responses', responsesToolResults(M, lead))['messages'] as { role: string; content: Obj[] }[];
    assert.equal(messages.length, 3);
    assert.equal(messages[1]!.content.length, M);
    const turn = messages[2]!.content;
    assert.equal(turn.length, M + 1);
    assert.ok(turn.slice(0, M).every((b, i) => b['type'] === 'tool_result' && b['tool_use_id'] === `c${i}`));
    assert.deepEqual(turn[M], { type: 'text', text: 'and then' });
    for (const lead2 of [[], lead]) {
      const ratio = growth(
        (n) => responsesToolResults(n, lead2),
        (b) => toMessages('responses', b),
        2_000,
      );
      assert.ok(ratio < 6, `4x the results cost ${ratio.toFixed(1)}x the work`);
    }
  });
});

describe('requests with 200,000 blocks or items', () => {
  const N = 200_000;
  const texts = (type: string): Obj[] => Array.from({ length: N }, (_, i) => ({ type, text: `t${i}` }));
  const toolResults = (): Obj[] => Array.from({ length: N }, (_, i) => ({ type: 'tool_result', tool_use_id: `c${i}`, content: `r${i}` }));
  const messagesBody = (): Obj => ({ model: 'm', max_tokens: 100, messages: [{ role: 'user', content: toolResults() }] });

  test('chat -> messages: a developer message of 200,000 parts is the system', () => {
    const body = toMessages('chat', {
      model: 'claude',
      messages: [
        { role: 'developer', content: texts('text') },
        { role: 'user', content: 'hi' },
      ],
    });
    const system = body['system'] as Obj[];
    assert.equal(system.length, N);
    assert.deepEqual(system[N - 1], { type: 'text', text: `t${N - 1}` });
  });

  test('responses -> messages: a developer item of 200,000 parts is the system', () => {
    const body = toMessages('responses', {
      model: 'claude',
      input: [
        { role: 'developer', content: texts('input_text') },
        { role: 'user', content: 'hi' },
      ],
    });
    const system = body['system'] as Obj[];
    assert.equal(system.length, N);
    assert.deepEqual(system[N - 1], { type: 'text', text: `t${N - 1}` });
  });

  test('messages -> responses: 200,000 tool results are 200,000 function_call_output items', () => {
    const input = makeTranslator('messages', 'responses', { stream: false }).request(messagesBody()).body['input'] as Obj[];
    assert.equal(input.length, N);
    assert.deepEqual(input[N - 1], { type: 'function_call_output', call_id: `c${N - 1}`, output: `r${N - 1}` });
  });

  test('messages -> chat: 200,000 tool results are 200,000 tool messages', () => {
    const messages = makeTranslator('messages', 'chat', { stream: false }).request(messagesBody()).body['messages'] as Obj[];
    assert.equal(messages.length, N);
    assert.deepEqual(messages[N - 1], { role: 'tool', tool_call_id: `c${N - 1}`, content: `r${N - 1}` });
  });

  test('responses -> chat: a tool output of 200,000 images follows as one user message', () => {
    const images = Array.from({ length: N }, (_, i) => ({ type: 'input_image', image_url: `https://example.com/${i}.png` }));
    const body = {
      model: 'm',
      input: [
        { type: 'function_call', call_id: 'c', name: 'f', arguments: '{}' },
        { type: 'function_call_output', call_id: 'c', output: images },
      ],
    };
    const messages = makeTranslator('responses', 'chat', { stream: false }).request(body).body['messages'] as Obj[];
    assert.equal(messages.length, 3);
    const content = messages[2]!['content'] as Obj[];
    assert.equal(messages[2]!['role'], 'user');
    assert.equal(content.length, N);
    assert.deepEqual(content[N - 1], { type: 'image_url', image_url: { url: `https://example.com/${N - 1}.png` } });
  });
});

describe('many tool calls in a row', () => {
  /** A Responses request: `n` function calls, then their outputs. */
  const calls = (n: number): Obj => ({
    model: 'm',
    input: [
      ...Array.from({ length: n }, (_, i) => ({ type: 'function_call', call_id: `c${i}`, name: 'f', arguments: '{}' })),
      ...Array.from({ length: n }, (_, i) => ({ type: 'function_call_output', call_id: `c${i}`, output: 'ok' })),
    ],
  });
  const toChat = (body: Obj): Obj => makeTranslator('responses', 'chat', { stream: false }).request(body).body;

  test('responses -> chat: the calls join one assistant message, with work linear in their number', () => {
    const messages = toChat(calls(2_000))['messages'] as Obj[];
    assert.equal(messages.length, 2_001);
    const toolCalls = messages[0]!['tool_calls'] as Obj[];
    assert.equal(toolCalls.length, 2_000);
    assert.ok(toolCalls.every((c, i) => c['id'] === `c${i}`));
    const ratio = growth(calls, toChat, 2_000);
    assert.ok(ratio < 6, `4x the calls cost ${ratio.toFixed(1)}x the work`);
  });
});
