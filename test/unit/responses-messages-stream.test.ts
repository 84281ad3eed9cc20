/**
 * responses -> messages, the stream side (src/translate/responses-messages/stream.ts), event
 * by event, on the Anthropic recordings and streams derived from them (a stop reason, a
 * usage, a tool name or an error event changed): the exact Responses event sequence of each
 * kind of block, the preamble held, the terminal step marked `done`, the usage, and failures.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { codexBody } from '../helpers/codex-request.js';
import { anthropicEvents, anthropicPayloads } from '../helpers/recordings.js';
import { drive, makeTranslator } from '../helpers/translate.js';
import { SseFramer } from '../../src/sse/parse.js';
import type { StreamStep } from '../../src/translate/types.js';

type Obj = Record<string, unknown>;

const frame = (p: Obj): string => `event: ${String(p['type'])}\ndata: ${JSON.stringify(p)}\n\n`;

/** A translator for a Responses body (default: a plain prompt) and the events its steps give. */
function run(
  events: readonly string[],
  body: Obj = { model: 'claude-upstream-id', input: 'hi' },
): { events: Obj[]; steps: StreamStep[]; error: ReturnType<typeof drive>['error'] } {
  const tr = makeTranslator('responses', 'messages');
  tr.request(body);
  const framer = new SseFramer();
  const steps = framer.push(Buffer.from(events.join(''))).map((ev) => tr.event(ev));
  steps.push(tr.end());
  const text = steps
    .flatMap((s) => s.frames ?? [])
    .map((b) => b.toString('utf8'))
    .join('');
  const parsed = text
    .split('\n')
    .filter((l) => l.startsWith('data: '))
    .map((l) => JSON.parse(l.slice(6)) as Obj);
  return { events: parsed, steps, error: steps.find((s) => s.error)?.error ?? null };
}

const types = (events: Obj[]): string[] => events.map((e) => String(e['type']).replace(/^response\./, ''));

/** Collapses runs of one event type (`x.delta` ×n -> `x.delta*`). */
const runs = (names: string[]): string[] =>
  names.filter((n, i) => n !== names[i - 1]).map((n) => (names.filter((m) => m === n).length > 1 && n.endsWith('.delta') ? `${n}*` : n));

describe('responses -> messages stream, event shapes', () => {
  test('text: the message item sequence; ping dropped; the preamble held; only the last step done', () => {
    const { events, steps } = run(anthropicEvents('anthropic-messages-stream-text.chunks.jsonl'));
    assert.deepEqual(runs(types(events)), [
      'created',
      'in_progress',
      'output_item.added',
      'content_part.added',
      'output_text.delta*',
      'output_text.done',
      'content_part.done',
      'output_item.done',
      'completed',
    ]);
    const withFrames = steps.filter((s) => s.frames);
    assert.equal(withFrames[0]!.hold, true, 'response.created / in_progress wait for the answer');
    assert.deepEqual(
      steps.map((s) => s.done ?? false).lastIndexOf(true),
      steps.findIndex((s) => s.frames?.some((f) => f.toString().includes('response.completed'))),
    );
    assert.equal(steps.filter((s) => s.done).length, 1);
    const item = events.find((e) => e['type'] === 'response.output_item.done')!['item'] as Obj;
    assert.deepEqual([item['type'], item['role'], item['status']], ['message', 'assistant', 'completed']);
    assert.ok(events.every((e) => !JSON.stringify(e).includes('ping')));
  });

  test('thinking: a reasoning item with a summary part, its deltas, and the signed block in encrypted_content', () => {
    const { events } = run(anthropicEvents('anthropic-messages-stream-thinking.sse'));
    const names = runs(types(events));
    assert.deepEqual(names.slice(0, 9), [
      'created',
      'in_progress',
      'output_item.added',
      'reasoning_summary_part.added',
      'reasoning_summary_text.delta*',
      'reasoning_summary_text.done',
      'reasoning_summary_part.done',
      'output_item.done',
      'output_item.added',
    ]);
    const thinking = anthropicPayloads('anthropic-messages-stream-thinking.sse')
      .filter((p) => (p['delta'] as Obj | undefined)?.['type'] === 'thinking_delta')
      .map((p) => (p['delta'] as Obj)['thinking'])
      .join('');
    const item = events.find((e) => e['type'] === 'response.output_item.done')!['item'] as Obj;
    assert.deepEqual(item['summary'], [{ type: 'summary_text', text: thinking }]);
    assert.equal(typeof item['encrypted_content'], 'string');
    const added = events.find((e) => e['type'] === 'response.output_item.added')!['item'] as Obj;
    assert.equal(added['encrypted_content'], undefined, 'not before the signature is whole');
  });

  test('tools: server tool blocks dropped; a client tool_use block is a function_call with argument deltas; no arguments give {}', () => {
    const { events } = run(anthropicEvents('anthropic-messages-stream-tool-use.sse'));
    const items = events.filter((e) => e['type'] === 'response.output_item.done').map((e) => e['item'] as Obj);
    assert.deepEqual(
      items.map((i) => i['type']),
      ['message', 'message', 'function_call'],
    );
    const call = items[2]!;
    assert.deepEqual(
      [call['name'], call['call_id'], JSON.parse(call['arguments'] as string)],
      ['get_exchange_rate', 'toolu_01EFn5wTNBYA8Reni8rbmnHT', { from_currency: 'USD', to_currency: 'EUR' }],
    );
    assert.ok(!JSON.stringify(events).includes('tool_search_tool_bm25'));
    const noArgs = run(anthropicEvents('anthropic-messages-stream-tool-no-args.chunks.jsonl')).events;
    const done = noArgs.find((e) => e['type'] === 'response.function_call_arguments.done')!;
    assert.equal(done['arguments'], '{}');
  });

  test("a custom tool's call (Codex's exec, in the functions namespace) is a custom_tool_call, its input one delta and done; a namespaced function call carries its namespace", () => {
    const payloads = anthropicPayloads('anthropic-messages-stream-tool-use.sse');
    const input = 'text("hi")\n// "quoted"';
    const json = JSON.stringify({ input });
    const customized = payloads.flatMap((p) => {
      const block = p['content_block'] as Obj | undefined;
      if (block?.['type'] === 'tool_use') return [{ ...p, content_block: { ...block, name: 'exec' } }];
      if (p['index'] === 4 && (p['delta'] as Obj | undefined)?.['type'] === 'input_json_delta') return [];
      if (p['type'] === 'content_block_stop' && p['index'] === 4)
        return [
          ...[json.slice(0, 9), json.slice(9)].map((part): Obj => ({
            type: 'content_block_delta',
            index: 4,
            delta: { type: 'input_json_delta', partial_json: part },
          })),
          p,
        ];
      return [p];
    });
    const { events } = run(customized.map(frame), codexBody([], 'claude-upstream-id'));
    const item = events.find((e) => e['type'] === 'response.output_item.done' && (e['item'] as Obj)['type'] === 'custom_tool_call')!['item'] as Obj;
    assert.deepEqual([item['name'], item['namespace'], item['input'], item['call_id']], ['exec', undefined, input, 'toolu_01EFn5wTNBYA8Reni8rbmnHT']);
    const custom = events.filter((e) => String(e['type']).startsWith('response.custom_tool_call_input'));
    assert.deepEqual(
      custom.map((e) => [e['type'], e['delta'] ?? e['input']]),
      [
        ['response.custom_tool_call_input.delta', input],
        ['response.custom_tool_call_input.done', input],
      ],
    );
    const namespaced = payloads.map((p) =>
      (p['content_block'] as Obj | undefined)?.['type'] === 'tool_use' ? { ...p, content_block: { ...(p['content_block'] as Obj), name: 'clock__sleep' } } : p,
    );
    const call = run(namespaced.map(frame), codexBody([], 'claude-upstream-id')).events.find(
      (e) => e['type'] === 'response.output_item.added' && (e['item'] as Obj)['type'] === 'function_call',
    )!['item'] as Obj;
    assert.deepEqual([call['name'], call['namespace']], ['sleep', 'clock']);
  });

  test('max_tokens ends in response.incomplete with its reason; cache reads and writes count as input, reads as cached', () => {
    const payloads = anthropicPayloads('anthropic-messages-stream-text.chunks.jsonl').map((p) =>
      p['type'] === 'message_delta'
        ? {
            ...p,
            delta: { stop_reason: 'max_tokens', stop_sequence: null },
            usage: { input_tokens: 12, cache_read_input_tokens: 2000, cache_creation_input_tokens: 300, output_tokens: 30 },
          }
        : p,
    );
    const { events, steps } = run(payloads.map(frame));
    const last = events.at(-1)!;
    assert.equal(last['type'], 'response.incomplete');
    const response = last['response'] as Obj;
    assert.deepEqual([response['status'], response['incomplete_details']], ['incomplete', { reason: 'max_output_tokens' }]);
    assert.deepEqual(response['usage'], {
      input_tokens: 2312,
      input_tokens_details: { cached_tokens: 2000 },
      output_tokens: 30,
      output_tokens_details: { reasoning_tokens: 0 },
      total_tokens: 2342,
    });
    assert.deepEqual(steps.filter((s) => s.usage).at(-1)!.usage, { input: 2312, cached: 2000, cacheWrite: 300, output: 30, reasoning: 0 });
  });

  test('an Anthropic error event mid-stream is one failure in OpenAI terms; message_stop missing after message_delta still completes', () => {
    const head = anthropicEvents('anthropic-messages-stream-text.chunks.jsonl').slice(0, 5);
    const d = drive(makeTranslator('responses', 'messages'), [
      Buffer.from([...head, frame({ type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } })].join('')),
    ]);
    assert.ok(d.error);
    assert.deepEqual(
      [d.error.error.message, d.error.error.type, d.error.error.openaiCode, d.error.classified.class],
      ['Overloaded', 'server_error', 'overloaded', 'overloaded'],
    );
    assert.match(d.text, /event: error\ndata: \{"type":"error","code":"overloaded","message":"Overloaded"/);
    assert.doesNotMatch(d.text, /response\.completed/);
    const noStop = anthropicEvents('anthropic-messages-stream-text.chunks.jsonl').filter((e) => !e.includes('"message_stop"'));
    const { events, steps } = run(noStop);
    assert.equal(events.at(-1)!['type'], 'response.completed');
    assert.equal(steps.at(-1)!.done, true, 'the end step carries the terminal event');
  });
});
