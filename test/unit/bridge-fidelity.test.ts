/**
 * Two things the existing bridges got wrong (issue 29), on streams from the recordings:
 * - chat -> responses: a Responses server that sends a function call's arguments whole (in
 *   `output_item.added`, or only in `function_call_arguments.done` / `output_item.done`)
 *   gave the chat client a tool call with `""` arguments; it gets them once, whole.
 * - messages -> chat: `message_start` announced `input_tokens: 0`; it announces the
 *   gateway's estimate, while `message_delta` keeps the upstream's exact counts.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { SseFramer } from '../../src/sse/parse.js';
import { anthropicStream, anthropicUsageOf } from '../helpers/anthropic-client-checks.js';
import { readSse, sseBody, streamFacts, type Obj } from '../helpers/recording-catalog.js';
import { completedResponse, wholeArgumentVariants } from '../helpers/responses-variants.js';
import { drive, makeTranslator } from '../helpers/translate.js';

const CALL = 'openai-responses-stream-function-call.sse';

/** The tool calls a chat client assembles from a stream's chunks (by index), and the finish reasons. */
function chatCalls(out: string): { calls: { id: unknown; name: unknown; args: string }[]; finish: unknown[] } {
  const calls: { id: unknown; name: unknown; args: string }[] = [];
  const finish: unknown[] = [];
  for (const f of readSse(out)) {
    if (f.data === null || f.data === '[DONE]') continue;
    for (const c of (JSON.parse(f.data) as { choices: Obj[] }).choices) {
      if (c['finish_reason'] !== null) finish.push(c['finish_reason']);
      for (const tc of ((c['delta'] as Obj)['tool_calls'] as Obj[] | undefined) ?? []) {
        const fn = tc['function'] as Obj;
        const i = tc['index'] as number;
        if (tc['id'] !== undefined) {
          assert.equal(calls[i], undefined, 'one entry opens each call');
          calls[i] = { id: tc['id'], name: fn['name'], args: '' };
        }
        calls[i]!.args += String(fn['arguments'] ?? '');
      }
    }
  }
  return { calls, finish };
}

describe('chat -> responses: arguments sent whole', () => {
  const recorded = (completedResponse(CALL)['output'] as Obj[]).filter((i) => i['type'] === 'function_call');
  assert.equal(recorded.length, 1);

  test('the step that writes [DONE] is marked done, and only it', () => {
    const tr = makeTranslator('chat', 'responses');
    const steps = new SseFramer().push(sseBody(CALL)).map((ev) => tr.event(ev));
    const done = steps.filter((s) => s.done === true);
    assert.equal(done.length, 1);
    assert.ok(
      Buffer.concat([...done[0]!.frames!])
        .toString()
        .endsWith('data: [DONE]\n\n'),
    );
    const { calls } = chatCalls(Buffer.concat(steps.flatMap((st) => [...(st.frames ?? [])])).toString());
    assert.deepEqual(
      calls,
      recorded.map((i) => ({ id: i['call_id'], name: i['name'], args: i['arguments'] })),
      'the recording (argument deltas): the arguments, once',
    );
  });

  for (const { label, body } of wholeArgumentVariants(CALL)) {
    test(`${label}: the chat tool call carries the arguments once`, () => {
      const d = drive(makeTranslator('chat', 'responses'), [body]);
      assert.equal(d.error, null);
      const { calls, finish } = chatCalls(d.text);
      assert.deepEqual(
        calls,
        recorded.map((i) => ({ id: i['call_id'], name: i['name'], args: i['arguments'] })),
      );
      assert.deepEqual(finish, ['tool_calls']);
      assert.equal(d.generated, `${String(recorded[0]!['name'])}${String(recorded[0]!['arguments'])}`, 'counted once');
    });
  }
});

describe('messages -> chat: message_start announces the prompt estimate', () => {
  for (const name of ['openai-chat-stream-text-include-usage.sse', 'deepseek-reasoner-stream.sse']) {
    test(`${name}: input_tokens > 0 in message_start; message_delta keeps the upstream's counts`, () => {
      const d = drive(makeTranslator('messages', 'chat', { promptTokens: 321 }), [sseBody(name)]);
      const { events } = anthropicStream(d.text);
      assert.deepEqual((events[0]!['message'] as Obj)['usage'], { input_tokens: 321, output_tokens: 0 });
      assert.deepEqual(events.at(-2)!['usage'], anthropicUsageOf(streamFacts('chat', sseBody(name)).usage));
      assert.notEqual((events.at(-2)!['usage'] as Obj)['input_tokens'], 321);
    });
  }

  test('the step that writes message_stop is marked done, and only it', () => {
    const tr = makeTranslator('messages', 'chat');
    const steps = [...new SseFramer().push(sseBody('openai-chat-stream-text-include-usage.sse')).map((ev) => tr.event(ev)), tr.end()];
    const done = steps.filter((s) => s.done === true);
    assert.equal(done.length, 1);
    assert.ok(
      Buffer.concat([...done[0]!.frames!])
        .toString()
        .endsWith('event: message_stop\ndata: {"type":"message_stop"}\n\n'),
    );
  });
});
