/**
 * What an Anthropic Messages client must get from a bridge, checked against a recorded
 * Responses stream or response object (read here, not by src/): for the messages ->
 * responses pair of test/unit/translators-streams.test.ts and the bridge's own unit tests.
 */
import assert from 'node:assert/strict';
import type { Usage } from '../../src/usage/usage.js';
import { readSse, type Obj, type StreamFacts } from './recording-catalog.js';

/** The Anthropic usage object for a usage in gateway terms (input apart from cache reads and writes). */
export function anthropicUsageOf(u: Usage | null): Obj {
  if (!u) return { input_tokens: 0, output_tokens: 0 };
  return {
    input_tokens: u.input - u.cached - (u.cacheWrite ?? 0),
    cache_creation_input_tokens: u.cacheWrite ?? 0,
    cache_read_input_tokens: u.cached,
    output_tokens: u.output,
  };
}

/** A content block as the client assembles it: the start's block and the text of its deltas. */
export type Block = Obj & { deltas: string };

/**
 * The typed frames of an Anthropic stream (`event:` naming the data's `type`), parsed, and
 * its content blocks, checked to open one at a time in index order, each closed before the
 * next; comments are left out.
 */
export function anthropicStream(out: string): { events: Obj[]; blocks: Block[] } {
  const frames = readSse(out).filter((f) => f.data !== null);
  for (const f of frames) assert.equal(f.event, (JSON.parse(f.data!) as Obj)['type'], 'the event name is the data type');
  const events = frames.map((f) => JSON.parse(f.data!) as Obj);
  assert.equal(events[0]!['type'], 'message_start');
  assert.deepEqual(
    events.slice(-2).map((e) => e['type']),
    ['message_delta', 'message_stop'],
  );
  let open: number | null = null;
  const blocks: Block[] = [];
  for (const e of events.slice(1, -2)) {
    if (e['type'] === 'content_block_start') {
      assert.equal(open, null, 'one block at a time');
      assert.equal(e['index'], blocks.length);
      open = e['index'] as number;
      blocks.push({ ...(e['content_block'] as Obj), deltas: '' });
    } else if (e['type'] === 'content_block_delta') {
      assert.equal(e['index'], open);
      const d = e['delta'] as Obj;
      blocks[open!]!.deltas += String(d['text'] ?? d['thinking'] ?? d['partial_json'] ?? '');
    } else {
      assert.deepEqual([e['type'], e['index']], ['content_block_stop', open]);
      open = null;
    }
  }
  assert.equal(open, null, 'every block closed');
  return { events, blocks };
}

/** What a finished response object says an Anthropic client must see. */
export function expectedMessage(response: Obj): {
  text: string;
  thinking: string[];
  calls: { id: unknown; name: unknown; input: unknown; args: string }[];
  stop: string;
} {
  const output = (response['output'] as Obj[] | undefined) ?? [];
  let text = '';
  const thinking: string[] = [];
  const calls: { id: unknown; name: unknown; input: unknown; args: string }[] = [];
  for (const item of output) {
    if (item['type'] === 'message') for (const p of item['content'] as Obj[]) text += String(p['text'] ?? p['refusal'] ?? '');
    if (item['type'] === 'reasoning') {
      const parts = [...((item['summary'] as Obj[] | undefined) ?? []), ...((item['content'] as Obj[] | undefined) ?? [])].map((p) => String(p['text']));
      if (parts.join('') !== '') thinking.push(parts.join('\n\n'));
    }
    if (item['type'] === 'function_call')
      calls.push({ id: item['call_id'], name: item['name'], input: JSON.parse(item['arguments'] as string) as unknown, args: item['arguments'] as string });
  }
  const reason = (response['incomplete_details'] as Obj | null | undefined)?.['reason'];
  const stop = reason === 'max_output_tokens' ? 'max_tokens' : reason === 'content_filter' ? 'refusal' : calls.length > 0 ? 'tool_use' : 'end_turn';
  return { text, thinking, calls, stop };
}

/** The client output of messages -> responses for a complete recorded stream. */
export function checkMessagesOverResponses(out: string, facts: StreamFacts): void {
  const { events, blocks } = anthropicStream(out);
  const final = facts.payloads.find((p) => p?.['type'] === 'response.completed' || p?.['type'] === 'response.incomplete')!['response'] as Obj;
  const want = expectedMessage(final);
  const message = events[0]!['message'] as Obj;
  assert.deepEqual([message['role'], message['model'], message['content']], ['assistant', final['model'], []]);
  assert.match(String(message['id']), /^msg_01/);
  const delta = events.at(-2)!;
  assert.deepEqual(delta['delta'], { stop_reason: want.stop, stop_sequence: null });
  assert.deepEqual(delta['usage'], anthropicUsageOf(facts.usage));
  const of = (type: string): Block[] => blocks.filter((b) => b['type'] === type);
  assert.equal(
    of('text')
      .map((b) => b.deltas)
      .join(''),
    want.text,
  );
  assert.deepEqual(
    of('thinking').map((b) => b.deltas),
    want.thinking,
  );
  assert.ok(
    of('thinking').every((b) => b['signature'] === '' && b['thinking'] === ''),
    'no signature is invented',
  );
  assert.deepEqual(
    of('tool_use').map((b) => ({ id: b['id'], name: b['name'], input: b['input'], args: b.deltas })),
    want.calls.map((c) => ({ id: c.id, name: c.name, input: {}, args: c.args })),
    'each call once, its arguments exactly once',
  );
}
