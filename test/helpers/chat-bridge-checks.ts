/**
 * What a chat client or a chat upstream's bridge must give, checked against the recording
 * (read here, not by src/): the stream client-output checks of the chat -> responses,
 * responses -> chat, messages -> chat and chat -> messages pairs of
 * test/unit/translators-streams.test.ts, and the usage and finish-reason shapes that file's
 * and test/unit/translators-json.test.ts's checks share.
 */
import assert from 'node:assert/strict';
import type { Usage } from '../../src/usage/usage.js';
import { readSse, type Obj, type StreamFacts } from './recording-catalog.js';

/** chat -> messages stamps `created` from the clock: the tests pin it here, so every run gives the same bytes. */
export const NOW_MS = 1_760_000_000_000;

export const FINISH: Readonly<Record<string, string>> = {
  end_turn: 'stop',
  stop_sequence: 'stop',
  pause_turn: 'stop',
  max_tokens: 'length',
  tool_use: 'tool_calls',
  refusal: 'content_filter',
};

/** OpenAI's usage object for Anthropic counts (prompt = input + cache reads + cache writes). */
export function openAIUsage(u: Usage): Obj {
  return {
    prompt_tokens: u.input,
    completion_tokens: u.output,
    total_tokens: u.input + u.output,
    prompt_tokens_details: { cached_tokens: u.cached },
    cache_read_input_tokens: u.cached,
    cache_creation_input_tokens: u.cacheWrite ?? 0,
  };
}

/** Checks the client output of a translating pair against the recording. */
export type ClientCheck = (out: string, facts: StreamFacts, wantsUsage: boolean) => void;

/** What a recorded chat stream says the client must see: content, reasoning, tool calls (in index order), the finish reason. */
function chatAnswer(facts: StreamFacts): { content: string; reasoning: string; calls: { id: unknown; name: unknown; args: string }[]; finish: string | null } {
  let content = '';
  let reasoning = '';
  const calls: { id: unknown; name: unknown; args: string }[] = [];
  let finish: string | null = null;
  for (const p of facts.payloads) {
    for (const c of Array.isArray(p?.['choices']) ? (p['choices'] as Obj[]) : []) {
      if (typeof c['finish_reason'] === 'string') finish = c['finish_reason'];
      const d = (c['delta'] ?? {}) as Obj;
      if (typeof d['content'] === 'string') content += d['content'];
      const r = d['reasoning_content'] ?? d['reasoning'];
      if (typeof r === 'string') reasoning += r;
      for (const tc of (d['tool_calls'] as Obj[] | undefined) ?? []) {
        const fn = (tc['function'] ?? {}) as Obj;
        const i = tc['index'] as number;
        calls[i] ??= { id: tc['id'], name: fn['name'], args: '' };
        if (typeof fn['arguments'] === 'string') calls[i].args += fn['arguments'];
      }
    }
  }
  return { content, reasoning, calls, finish };
}

/** Typed SSE frames (`event: <type>` naming the data's `type`), parsed; comments (an upstream's keep-alives, passed on) left out. */
function typedFrames(out: string): Obj[] {
  const frames = readSse(out).filter((f) => {
    if (f.data !== null) return true;
    assert.ok(f.raw.startsWith(':'), `a frame that is neither data nor a comment: ${f.raw}`);
    return false;
  });
  for (const f of frames) assert.equal(f.event, (JSON.parse(f.data!) as Obj)['type'], 'the event name is the data type');
  return frames.map((f) => JSON.parse(f.data!) as Obj);
}

/** The Responses usage object for a usage in gateway terms. */
export function responsesUsageOf(u: Usage): Obj {
  return {
    input_tokens: u.input,
    input_tokens_details: { cached_tokens: u.cached },
    output_tokens: u.output,
    output_tokens_details: { reasoning_tokens: u.reasoning },
    total_tokens: u.input + u.output,
  };
}

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

export const STOP_OF: Readonly<Record<string, string>> = { stop: 'end_turn', length: 'max_tokens', tool_calls: 'tool_use', content_filter: 'refusal' };

/** chat -> responses: a chat client over a recorded Responses stream. */
export const checkChatOverResponses: ClientCheck = (out, facts, wantsUsage) => {
  const frames = readSse(out).filter((f) => f.data !== null);
  assert.ok(
    frames.every((f) => f.event === null && f.raw === `data: ${f.data}\n\n`),
    'chat frames only',
  );
  assert.equal(frames.at(-1)!.data, '[DONE]');
  const chunks = frames.slice(0, -1).map((f) => JSON.parse(f.data!) as Obj);
  const created = facts.payloads.find((p) => p?.['type'] === 'response.created')!['response'] as Obj;
  const final = facts.payloads.find((p) => p?.['type'] === 'response.completed' || p?.['type'] === 'response.incomplete')!['response'] as Obj;
  let content = '';
  let reasoning = '';
  const calls: { id: unknown; name: unknown; args: string }[] = [];
  const finish: unknown[] = [];
  const usageChunks: Obj[] = [];
  for (const c of chunks) {
    assert.deepEqual([c['id'], c['object'], c['model']], [created['id'], 'chat.completion.chunk', created['model']]);
    const choices = c['choices'] as Obj[];
    if (choices.length === 0) {
      usageChunks.push(c['usage'] as Obj);
      continue;
    }
    if (choices[0]!['finish_reason'] !== null) finish.push(choices[0]!['finish_reason']);
    const d = choices[0]!['delta'] as Obj;
    if (typeof d['content'] === 'string') content += d['content'];
    if (typeof d['reasoning_content'] === 'string') reasoning += d['reasoning_content'];
    for (const tc of (d['tool_calls'] as Obj[] | undefined) ?? []) {
      const fn = tc['function'] as Obj;
      if (tc['id'] !== undefined) calls[tc['index'] as number] = { id: tc['id'], name: fn['name'], args: fn['arguments'] as string };
      else calls[tc['index'] as number]!.args += fn['arguments'] as string;
    }
  }
  // What the recording says: text and reasoning deltas, function calls in order, usage.
  const of = (type: string) => facts.payloads.filter((p) => p?.['type'] === type) as Obj[];
  assert.equal(
    content,
    of('response.output_text.delta')
      .map((p) => p['delta'])
      .join(''),
  );
  assert.equal(reasoning, [...of('response.reasoning_summary_text.delta'), ...of('response.reasoning_text.delta')].map((p) => p['delta']).join(''));
  const recorded = (final['output'] as Obj[]).filter((i) => i['type'] === 'function_call');
  assert.deepEqual(
    calls.map((c) => ({ id: c.id, name: c.name, args: c.args })),
    recorded.map((i) => ({ id: i['call_id'], name: i['name'], args: i['arguments'] })),
  );
  const reason = (final['incomplete_details'] as Obj | null)?.['reason'];
  assert.deepEqual(finish, [reason === 'max_output_tokens' ? 'length' : recorded.length > 0 ? 'tool_calls' : 'stop']);
  const u = facts.usage;
  assert.deepEqual(
    usageChunks,
    wantsUsage && u
      ? [
          {
            prompt_tokens: u.input,
            completion_tokens: u.output,
            total_tokens: u.input + u.output,
            prompt_tokens_details: { cached_tokens: u.cached },
            completion_tokens_details: { reasoning_tokens: u.reasoning },
          },
        ]
      : [],
  );
};

/** responses -> chat: a Responses client over a recorded chat stream. */
export const checkResponsesOverChat: ClientCheck = (out, facts) => {
  const want = chatAnswer(facts);
  const events = typedFrames(out);
  assert.deepEqual(
    events.map((e) => e['sequence_number']),
    events.map((_e, i) => i),
    'sequence numbers count from 0',
  );
  assert.deepEqual(
    events.slice(0, 2).map((e) => e['type']),
    ['response.created', 'response.in_progress'],
  );
  const last = events.at(-1)!;
  assert.equal(last['type'], want.finish === 'length' || want.finish === 'content_filter' ? 'response.incomplete' : 'response.completed');
  const response = last['response'] as Obj;
  assert.equal(response['id'], (events[0]!['response'] as Obj)['id']);
  assert.match(String(response['id']), /^resp_/);
  assert.deepEqual(response['usage'], facts.usage ? responsesUsageOf(facts.usage) : null);
  const of = (type: string): Obj[] => events.filter((e) => e['type'] === type);
  assert.equal(
    of('response.output_text.delta')
      .map((e) => e['delta'])
      .join(''),
    want.content,
  );
  assert.equal(
    of('response.reasoning_text.delta')
      .map((e) => e['delta'])
      .join(''),
    want.reasoning,
  );
  // Every added item is done once, in output order, and the final output is the done items.
  const added = of('response.output_item.added').map((e) => e['output_index']);
  const done = of('response.output_item.done');
  assert.deepEqual(
    added,
    added.map((_x, i) => i),
  );
  assert.deepEqual(done.map((e) => e['output_index']).sort(), added);
  const output = response['output'] as Obj[];
  assert.deepEqual(
    output,
    [...done].sort((a, b) => (a['output_index'] as number) - (b['output_index'] as number)).map((e) => e['item']),
  );
  const message = output.filter((i) => i['type'] === 'message');
  assert.equal(message.map((m) => (m['content'] as Obj[])[0]!['text'] as string).join(''), want.content);
  const reasoning = output.filter((i) => i['type'] === 'reasoning');
  assert.equal(reasoning.map((r) => (r['content'] as Obj[])[0]!['text'] as string).join(''), want.reasoning);
  assert.ok(
    reasoning.every((r) => Array.isArray(r['summary']) && (r['summary'] as unknown[]).length === 0 && r['encrypted_content'] === undefined),
    'no summary or encrypted reasoning is invented',
  );
  const calls = output.filter((i) => i['type'] === 'function_call');
  assert.deepEqual(
    calls.map((c) => ({ id: c['call_id'], name: c['name'], input: JSON.parse(c['arguments'] as string) as unknown })),
    want.calls.map((c) => ({ id: c.id, name: c.name, input: JSON.parse(c.args || '{}') as unknown })),
  );
  for (const c of calls) {
    const deltas = of('response.function_call_arguments.delta')
      .filter((e) => e['item_id'] === c['id'])
      .map((e) => e['delta'])
      .join('');
    assert.equal(deltas || '{}', c['arguments'], 'the argument deltas add up to the arguments');
  }
};

/** messages -> chat: a Messages client over a recorded chat stream. */
export const checkMessagesOverChat: ClientCheck = (out, facts) => {
  const want = chatAnswer(facts);
  const events = typedFrames(out);
  assert.equal(events[0]!['type'], 'message_start');
  assert.deepEqual(
    events.slice(-2).map((e) => e['type']),
    ['message_delta', 'message_stop'],
  );
  const delta = events.at(-2)!;
  assert.deepEqual(delta['delta'], { stop_reason: STOP_OF[want.finish ?? 'stop'] ?? 'end_turn', stop_sequence: null });
  assert.deepEqual(delta['usage'], anthropicUsageOf(facts.usage));
  // Blocks open one at a time, in index order, each closed before the next.
  let open: number | null = null;
  let next = 0;
  const blocks: (Obj & { text: string })[] = [];
  for (const e of events.slice(1, -2)) {
    if (e['type'] === 'content_block_start') {
      assert.equal(open, null, 'one block at a time');
      assert.equal(e['index'], next++);
      open = e['index'] as number;
      blocks.push({ ...(e['content_block'] as Obj), text: '' });
    } else if (e['type'] === 'content_block_delta') {
      assert.equal(e['index'], open);
      const d = e['delta'] as Obj;
      blocks[open!]!.text += String(d['text'] ?? d['thinking'] ?? d['partial_json'] ?? '');
    } else {
      assert.deepEqual([e['type'], e['index']], ['content_block_stop', open]);
      open = null;
    }
  }
  assert.equal(open, null);
  const of = (type: string) => blocks.filter((b) => b['type'] === type);
  assert.equal(
    of('text')
      .map((b) => b.text)
      .join(''),
    want.content,
  );
  assert.equal(
    of('thinking')
      .map((b) => b.text)
      .join(''),
    want.reasoning,
  );
  assert.ok(
    of('thinking').every((b) => b['signature'] === ''),
    'no signature is invented',
  );
  assert.deepEqual(
    of('tool_use').map((b) => ({ id: b['id'], name: b['name'], input: JSON.parse(b.text || '{}') as unknown })),
    want.calls.map((c) => ({ id: c.id, name: c.name, input: JSON.parse(c.args || '{}') as unknown })),
  );
};

/** chat -> messages: a chat client over a recorded Messages stream. */
export const checkChatOverMessages: ClientCheck = (out, facts, wantsUsage) => {
  // Every frame a chat chunk, then [DONE].
  const frames = readSse(out);
  assert.ok(frames.every((f) => f.event === null && f.data !== null && f.raw === `data: ${f.data}\n\n`));
  assert.equal(frames.at(-1)!.data, '[DONE]');
  const chunks = frames.slice(0, -1).map((f) => JSON.parse(f.data!) as Obj);
  const start = facts.payloads.find((p) => p?.['type'] === 'message_start')!['message'] as Obj;
  let content = '';
  let reasoning = '';
  const finish: unknown[] = [];
  const calls: { id: unknown; name: unknown; args: string }[] = [];
  const usageChunks: Obj[] = [];
  for (const c of chunks) {
    assert.deepEqual([c['id'], c['model'], c['object'], c['created']], [start['id'], start['model'], 'chat.completion.chunk', NOW_MS / 1000]);
    const choices = c['choices'] as Obj[];
    if (choices.length === 0) {
      usageChunks.push(c['usage'] as Obj);
      continue;
    }
    if (choices[0]!['finish_reason'] !== null) finish.push(choices[0]!['finish_reason']);
    const d = choices[0]!['delta'] as Obj;
    if (typeof d['content'] === 'string') content += d['content'];
    if (typeof d['reasoning_content'] === 'string') reasoning += d['reasoning_content'];
    for (const tc of (d['tool_calls'] as Obj[] | undefined) ?? []) {
      const fn = tc['function'] as Obj;
      if (tc['id'] !== undefined) calls.push({ id: tc['id'], name: fn['name'], args: fn['arguments'] as string });
      else calls[tc['index'] as number]!.args += fn['arguments'] as string;
    }
  }
  // What the recording says the client must see: text, thinking, client tool calls.
  let wantContent = '';
  let wantReasoning = '';
  const blocks = new Map<unknown, Obj & { args: string }>();
  let stop: unknown;
  for (const p of facts.payloads) {
    if (p?.['type'] === 'content_block_start' && (p['content_block'] as Obj)['type'] === 'tool_use')
      blocks.set(p['index'], { ...(p['content_block'] as Obj), args: '' });
    if (p?.['type'] === 'message_delta') stop = (p['delta'] as Obj)['stop_reason'];
    if (p?.['type'] !== 'content_block_delta') continue;
    const d = p['delta'] as Obj;
    if (d['type'] === 'text_delta') wantContent += d['text'] as string;
    if (d['type'] === 'thinking_delta') wantReasoning += d['thinking'] as string;
    if (d['type'] === 'input_json_delta' && blocks.has(p['index'])) blocks.get(p['index'])!.args += d['partial_json'] as string;
  }
  assert.equal(content, wantContent);
  assert.equal(reasoning, wantReasoning);
  assert.deepEqual(
    calls.map((c) => ({ id: c.id, name: c.name, input: JSON.parse(c.args) as unknown })),
    [...blocks.values()].map((b) => ({ id: b['id'], name: b['name'], input: JSON.parse(b.args || '{}') as unknown })),
  );
  assert.deepEqual(finish, [FINISH[stop as string]]);
  assert.deepEqual(usageChunks, wantsUsage ? [openAIUsage(facts.usage!)] : []);
  if (wantsUsage) assert.deepEqual(chunks.at(-1)!['choices'], [], 'the usage chunk is the last before [DONE]');
};
