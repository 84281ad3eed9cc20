/**
 * What a Responses client must get from a translated Anthropic answer, read from the
 * recording itself (no src/ readers), for test/unit/translators-streams.test.ts and
 * translators-json.test.ts (`responses -> messages`): the stream's event sequence and the
 * JSON response object.
 */
import assert from 'node:assert/strict';
import type { Usage } from '../../src/usage/usage.js';
import { readSse, type Obj, type StreamFacts } from './recording-catalog.js';

/** What an Anthropic answer holds for the client: text, thinking (with signatures), client tool calls, the stop reason. */
interface Said {
  text: string;
  thinking: { text: string; signed: boolean }[];
  calls: { id: unknown; name: unknown; input: unknown }[];
  stop: unknown;
}

function fromStream(facts: StreamFacts): Said {
  const blocks = new Map<unknown, Obj & { json: string; text: string; sig: string }>();
  let stop: unknown = null;
  for (const p of facts.payloads) {
    if (p?.['type'] === 'content_block_start') blocks.set(p['index'], { ...(p['content_block'] as Obj), json: '', text: '', sig: '' });
    if (p?.['type'] === 'message_delta') stop = (p['delta'] as Obj)['stop_reason'];
    if (p?.['type'] !== 'content_block_delta') continue;
    const b = blocks.get(p['index'])!;
    const d = p['delta'] as Obj;
    if (d['type'] === 'text_delta' || d['type'] === 'thinking_delta') b.text += String(d['text'] ?? d['thinking']);
    if (d['type'] === 'input_json_delta') b.json += String(d['partial_json']);
    if (d['type'] === 'signature_delta') b.sig += String(d['signature']);
  }
  const all = [...blocks.values()];
  return {
    text: all
      .filter((b) => b['type'] === 'text')
      .map((b) => b.text)
      .join(''),
    thinking: all.filter((b) => b['type'] === 'thinking').map((b) => ({ text: b.text, signed: b.sig !== '' })),
    calls: all
      .filter((b) => b['type'] === 'tool_use')
      .map((b) => ({ id: b['id'], name: b['name'], input: b.json === '' ? {} : (JSON.parse(b.json) as unknown) })),
    stop,
  };
}

function fromMessage(msg: Obj): Said {
  const blocks = msg['content'] as Obj[];
  return {
    text: blocks
      .filter((b) => b['type'] === 'text')
      .map((b) => b['text'])
      .join(''),
    thinking: blocks
      .filter((b) => b['type'] === 'thinking')
      .map((b) => ({ text: String(b['thinking']), signed: typeof b['signature'] === 'string' && b['signature'] !== '' })),
    calls: blocks.filter((b) => b['type'] === 'tool_use').map((b) => ({ id: b['id'], name: b['name'], input: b['input'] })),
    stop: msg['stop_reason'],
  };
}

const usageOf = (u: Usage | null): Obj | null =>
  u
    ? {
        input_tokens: u.input,
        input_tokens_details: { cached_tokens: u.cached },
        output_tokens: u.output,
        output_tokens_details: { reasoning_tokens: u.reasoning },
        total_tokens: u.input + u.output,
      }
    : null;

/** The response object's output against what the answer said. */
function checkResponse(response: Obj, said: Said, usage: Usage | null): void {
  assert.match(String(response['id']), /^resp_/);
  assert.equal(response['object'], 'response');
  const incomplete = said.stop === 'max_tokens';
  assert.equal(response['status'], incomplete ? 'incomplete' : 'completed');
  assert.deepEqual(response['incomplete_details'], incomplete ? { reason: 'max_output_tokens' } : null);
  assert.deepEqual(response['usage'], usageOf(usage));
  const output = response['output'] as Obj[];
  const of = (type: string): Obj[] => output.filter((i) => i['type'] === type);
  assert.equal(
    of('message')
      .map((m) => (m['content'] as Obj[])[0]!['text'] as string)
      .join(''),
    said.text,
  );
  const reasoning = of('reasoning');
  assert.deepEqual(
    reasoning.map((r) => ({ text: ((r['summary'] as Obj[])[0]?.['text'] as string | undefined) ?? '', signed: typeof r['encrypted_content'] === 'string' })),
    said.thinking,
    'thinking as reasoning summaries, the signed block in encrypted_content',
  );
  assert.deepEqual(
    of('function_call').map((c) => ({ id: c['call_id'], name: c['name'], input: JSON.parse(c['arguments'] as string) as unknown })),
    said.calls,
  );
  assert.equal(output.length, of('message').length + reasoning.length + said.calls.length, 'nothing else (no server tools)');
}

/** A translated stream: typed events numbered from 0, each item added and done once, the final event holding the whole output. */
export function checkResponsesStream(out: string, facts: StreamFacts): void {
  const frames = readSse(out).filter((f) => f.data !== null);
  for (const f of frames) assert.equal(f.event, (JSON.parse(f.data!) as Obj)['type'], 'the event name is the data type');
  const events = frames.map((f) => JSON.parse(f.data!) as Obj);
  const said = fromStream(facts);
  assert.deepEqual(
    events.map((e) => e['sequence_number']),
    events.map((_e, i) => i),
  );
  assert.deepEqual(
    events.slice(0, 2).map((e) => e['type']),
    ['response.created', 'response.in_progress'],
  );
  const last = events.at(-1)!;
  assert.equal(last['type'], said.stop === 'max_tokens' ? 'response.incomplete' : 'response.completed');
  const response = last['response'] as Obj;
  assert.equal(response['id'], (events[0]!['response'] as Obj)['id']);
  checkResponse(response, said, facts.usage);
  const of = (type: string): Obj[] => events.filter((e) => e['type'] === type);
  assert.equal(
    of('response.output_text.delta')
      .map((e) => e['delta'])
      .join(''),
    said.text,
  );
  assert.equal(
    of('response.reasoning_summary_text.delta')
      .map((e) => e['delta'])
      .join(''),
    said.thinking.map((t) => t.text).join(''),
  );
  assert.equal(of('response.reasoning_summary_part.added').length, said.thinking.length, 'a summary part before its deltas');
  const added = of('response.output_item.added').map((e) => e['output_index']);
  assert.deepEqual(
    added,
    added.map((_x, i) => i),
  );
  const done = of('response.output_item.done');
  assert.deepEqual(
    done.map((e) => e['output_index']),
    added,
    'each item done once, in order',
  );
  assert.deepEqual(
    response['output'],
    done.map((e) => e['item']),
  );
  for (const c of (response['output'] as Obj[]).filter((i) => i['type'] === 'function_call')) {
    const deltas = of('response.function_call_arguments.delta')
      .filter((e) => e['item_id'] === c['id'])
      .map((e) => e['delta'])
      .join('');
    assert.equal(deltas || '{}', c['arguments'], 'the argument deltas add up to the arguments');
  }
}

/** A translated JSON answer. */
export function checkResponsesJson(body: Obj, msg: Obj, usage: Usage): void {
  assert.equal(body['model'], msg['model']);
  checkResponse(body, fromMessage(msg), usage);
}
