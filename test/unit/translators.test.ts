/**
 * Every translator of the support matrix (`supportedPairs()`), fed every recording of its
 * wire API, driven as the relay drives it (test/helpers/translate.ts). Expected values come
 * from the recording itself, read by test/helpers/recording-catalog.ts (no src/ readers).
 *
 * Streams: one piece, byte by byte and seeded random reads give identical client bytes,
 * usage and generated text; a passthrough's client bytes are the upstream's (minus chat's
 * usage-only chunk when the client did not ask for usage, plus a missing `[DONE]` /
 * `message_stop` after a complete answer); usage is the recording's; a mid-stream error is
 * one failure of the expected class, and nothing follows its error frame.
 * JSON answers through `json()`, error bodies through `error()`.
 */
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { after, before, describe, mock, test } from 'node:test';
import type { ApiName } from '../../src/apis/names.js';
import type { FailureClass } from '../../src/errors/classify.js';
import { GatewayError } from '../../src/errors/codes.js';
import { supportedPairs } from '../../src/translate/table.js';
import type { Usage } from '../../src/usage/usage.js';
import {
  ERROR_RECORDINGS,
  expectedUsage,
  JSON_RECORDINGS,
  NOT_SPOKEN,
  readSse,
  statusOf,
  STREAM_RECORDINGS,
  streamFacts,
  streamsOf,
  streamWithUsageCounts,
  VARIANT_COUNTS,
  withUsageCounts,
  type Obj,
  type StreamFacts,
} from '../helpers/recording-catalog.js';
import { checkMessagesOverResponses } from '../helpers/anthropic-client-checks.js';
import { FIXTURES, fixture } from '../helpers/recordings.js';
import { checkResponsesJson, checkResponsesStream } from '../helpers/responses-checks.js';
import { byteByByte, randomPieces, SEEDS } from '../helpers/splits.js';
import { drive, makeTranslator, sameIds, type Driven } from '../helpers/translate.js';

const PAIRS = supportedPairs();
const pairName = (p: { client: ApiName; wire: ApiName }): string => `${p.client} -> ${p.wire}`;

// chat -> messages stamps `created` from the clock: pinned, so every run gives the same bytes.
const NOW_MS = 1_760_000_000_000;
before(() => mock.method(Date, 'now', () => NOW_MS));
after(() => mock.restoreAll());

/** The class a recorded mid-stream failure must get (what the router acts on), and why. */
const STREAM_ERROR_CLASS: Readonly<Record<string, FailureClass>> = {
  // error.code 400 "Token limit reached": the request's own limit, no other target does better.
  'openrouter-chat-stream-midstream-error.sse': 'bad_request',
  // error.type/code insufficient_quota: the account's balance is spent.
  'openai-responses-stream-midstream-error-insufficient-quota.chunks.jsonl': 'quota',
};

/** The class of an error answer by HTTP status (the recordings' statuses). */
const ERROR_CLASS_BY_STATUS: Readonly<Record<number, FailureClass>> = { 400: 'bad_request', 404: 'not_found', 429: 'rate_limited' };

/** Recordings whose body says more than their status (see test/unit/classify.test.ts). */
const ERROR_CLASS_BY_NAME: Readonly<Record<string, FailureClass>> = {
  // HTTP 400 with code model_not_found: this upstream cannot serve the model, another may.
  'openai-responses-error-400.json': 'not_found',
};

const DONE = 'data: [DONE]\n\n';
const MESSAGE_STOP = 'event: message_stop\ndata: {"type":"message_stop"}\n\n';

describe('the recordings', () => {
  const used = [...Object.values(STREAM_RECORDINGS), ...Object.values(JSON_RECORDINGS), ...Object.values(ERROR_RECORDINGS)].flat();
  const excluded = NOT_SPOKEN.map((n) => n.name);

  test('every file in test/fixtures is used by these tests or listed as an API the gateway does not speak', () => {
    const files = readdirSync(FIXTURES).sort();
    assert.ok(files.length >= 30, `found ${files.length}`);
    const unaccounted = files.filter((f) => !used.includes(f) && !excluded.includes(f));
    assert.deepEqual(unaccounted, []);
  });

  test('no recording is listed twice, and every listed one exists', () => {
    const all = [...used, ...excluded];
    assert.equal(new Set(all).size, all.length);
    const files = new Set(readdirSync(FIXTURES));
    assert.deepEqual(
      all.filter((f) => !files.has(f)),
      [],
    );
    for (const n of NOT_SPOKEN) assert.ok(n.reason.length > 20, `${n.name} says why`);
  });

  test('every supported pair has stream and error recordings of its wire API', () => {
    assert.ok(PAIRS.length >= 4);
    for (const p of PAIRS) {
      assert.ok(STREAM_RECORDINGS[p.wire].length > 0, `${pairName(p)}: streams`);
      assert.ok(ERROR_RECORDINGS[p.wire].length > 0, `${pairName(p)}: errors`);
      if (!p.passthrough) assert.ok(CLIENT_CHECKS[pairName(p)], `${pairName(p)}: a client-output check in this file`);
    }
  });

  test('every recorded mid-stream failure has its expected class here', () => {
    const failing = Object.entries(STREAM_RECORDINGS).flatMap(([wire, names]) =>
      names.filter((n) => streamsOf(n, wire as ApiName).some((s) => streamFacts(wire as ApiName, s.body).errorAt !== null)),
    );
    assert.deepEqual(failing.sort(), Object.keys(STREAM_ERROR_CLASS).sort());
  });
});

// ---------------------------------------------------------------------------------------
// Streams

/** What drive() gives, in comparable form. */
function comparable(d: Driven): unknown {
  return { text: sameIds(d.text), usage: d.usage, generated: d.generated, reasoning: d.reasoning, failure: d.error ? { classified: d.error.classified, message: d.error.error.message } : null };
}

/** The client bytes a passthrough must write before any error frame. */
function passthroughBytes(client: ApiName, facts: StreamFacts, wantsUsage: boolean): string {
  const end = facts.errorAt ?? facts.events.length;
  let out = '';
  for (let i = 0; i < end; i++) {
    if (client === 'chat' && !wantsUsage && facts.usageOnly.has(i)) continue;
    out += facts.events[i]!.raw;
  }
  if (facts.errorAt === null && facts.complete && !facts.terminated) out += client === 'chat' ? DONE : client === 'messages' ? MESSAGE_STOP : '';
  return out;
}

/** The one SSE event after `prefix` in `text`: the client API's error frame, parsed. */
function errorFrame(text: string, prefix: string): { event: string | null; data: Obj } {
  assert.ok(text.startsWith(prefix), 'the client got every frame before the failure, unchanged');
  const rest = readSse(text.slice(prefix.length));
  assert.equal(rest.length, 1, `exactly one frame after the failure: ${text.slice(prefix.length, prefix.length + 300)}`);
  assert.ok(rest[0]!.raw.endsWith('\n\n'));
  return { event: rest[0]!.event, data: JSON.parse(rest[0]!.data!) as Obj };
}

/** The message the client's error frame carries, in each client API's dialect. */
function frameMessage(client: ApiName, frame: { event: string | null; data: Obj }): unknown {
  if (client === 'messages') {
    assert.equal(frame.event, 'error');
    assert.equal(frame.data['type'], 'error');
  }
  if (client === 'responses') assert.equal(frame.event, 'error');
  return (frame.data['error'] as Obj)['message'];
}

const FINISH: Readonly<Record<string, string>> = { end_turn: 'stop', stop_sequence: 'stop', pause_turn: 'stop', max_tokens: 'length', tool_use: 'tool_calls', refusal: 'content_filter' };

/** OpenAI's usage object for Anthropic counts (prompt = input + cache reads + cache writes). */
function openAIUsage(u: Usage): Obj {
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
type ClientCheck = (out: string, facts: StreamFacts, wantsUsage: boolean) => void;

/** What a recorded chat stream says the client must see: content, reasoning, tool calls (in index order), the finish reason. */
function chatAnswer(facts: StreamFacts): { content: string; reasoning: string; calls: { id: unknown; name: unknown; args: string }[]; finish: string | null } {
  let content = '';
  let reasoning = '';
  const calls: { id: unknown; name: unknown; args: string }[] = [];
  let finish: string | null = null;
  for (const p of facts.payloads) {
    for (const c of (Array.isArray(p?.['choices']) ? (p['choices'] as Obj[]) : [])) {
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
function responsesUsageOf(u: Usage): Obj {
  return { input_tokens: u.input, input_tokens_details: { cached_tokens: u.cached }, output_tokens: u.output, output_tokens_details: { reasoning_tokens: u.reasoning }, total_tokens: u.input + u.output };
}

/** The Anthropic usage object for a usage in gateway terms (input apart from cache reads and writes). */
function anthropicUsageOf(u: Usage | null): Obj {
  if (!u) return { input_tokens: 0, output_tokens: 0 };
  return { input_tokens: u.input - u.cached - (u.cacheWrite ?? 0), cache_creation_input_tokens: u.cacheWrite ?? 0, cache_read_input_tokens: u.cached, output_tokens: u.output };
}

const STOP_OF: Readonly<Record<string, string>> = { stop: 'end_turn', length: 'max_tokens', tool_calls: 'tool_use', content_filter: 'refusal' };

const CLIENT_CHECKS: Readonly<Record<string, ClientCheck>> = {
  'responses -> messages': (out, facts) => checkResponsesStream(out, facts),
  'messages -> responses': (out, facts) => checkMessagesOverResponses(out, facts),
  'chat -> responses': (out, facts, wantsUsage) => {
    const frames = readSse(out).filter((f) => f.data !== null);
    assert.ok(frames.every((f) => f.event === null && f.raw === `data: ${f.data}\n\n`), 'chat frames only');
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
    assert.equal(content, of('response.output_text.delta').map((p) => p['delta']).join(''));
    assert.equal(reasoning, [...of('response.reasoning_summary_text.delta'), ...of('response.reasoning_text.delta')].map((p) => p['delta']).join(''));
    const recorded = (final['output'] as Obj[]).filter((i) => i['type'] === 'function_call');
    assert.deepEqual(calls.map((c) => ({ id: c.id, name: c.name, args: c.args })), recorded.map((i) => ({ id: i['call_id'], name: i['name'], args: i['arguments'] })));
    const reason = (final['incomplete_details'] as Obj | null)?.['reason'];
    assert.deepEqual(finish, [reason === 'max_output_tokens' ? 'length' : recorded.length > 0 ? 'tool_calls' : 'stop']);
    const u = facts.usage;
    assert.deepEqual(
      usageChunks,
      wantsUsage && u ? [{ prompt_tokens: u.input, completion_tokens: u.output, total_tokens: u.input + u.output, prompt_tokens_details: { cached_tokens: u.cached }, completion_tokens_details: { reasoning_tokens: u.reasoning } }] : [],
    );
  },
  'responses -> chat': (out, facts) => {
    const want = chatAnswer(facts);
    const events = typedFrames(out);
    assert.deepEqual(events.map((e) => e['sequence_number']), events.map((_e, i) => i), 'sequence numbers count from 0');
    assert.deepEqual(events.slice(0, 2).map((e) => e['type']), ['response.created', 'response.in_progress']);
    const last = events.at(-1)!;
    assert.equal(last['type'], want.finish === 'length' || want.finish === 'content_filter' ? 'response.incomplete' : 'response.completed');
    const response = last['response'] as Obj;
    assert.equal(response['id'], (events[0]!['response'] as Obj)['id']);
    assert.match(String(response['id']), /^resp_/);
    assert.deepEqual(response['usage'], facts.usage ? responsesUsageOf(facts.usage) : null);
    const of = (type: string): Obj[] => events.filter((e) => e['type'] === type);
    assert.equal(of('response.output_text.delta').map((e) => e['delta']).join(''), want.content);
    assert.equal(of('response.reasoning_text.delta').map((e) => e['delta']).join(''), want.reasoning);
    // Every added item is done once, in output order, and the final output is the done items.
    const added = of('response.output_item.added').map((e) => e['output_index']);
    const done = of('response.output_item.done');
    assert.deepEqual(added, added.map((_x, i) => i));
    assert.deepEqual(done.map((e) => e['output_index']).sort(), added);
    const output = response['output'] as Obj[];
    assert.deepEqual(output, [...done].sort((a, b) => (a['output_index'] as number) - (b['output_index'] as number)).map((e) => e['item']));
    const message = output.filter((i) => i['type'] === 'message');
    assert.equal(message.map((m) => ((m['content'] as Obj[])[0]!['text'] as string)).join(''), want.content);
    const reasoning = output.filter((i) => i['type'] === 'reasoning');
    assert.equal(reasoning.map((r) => ((r['content'] as Obj[])[0]!['text'] as string)).join(''), want.reasoning);
    assert.ok(reasoning.every((r) => Array.isArray(r['summary']) && (r['summary'] as unknown[]).length === 0 && r['encrypted_content'] === undefined), 'no summary or encrypted reasoning is invented');
    const calls = output.filter((i) => i['type'] === 'function_call');
    assert.deepEqual(
      calls.map((c) => ({ id: c['call_id'], name: c['name'], input: JSON.parse(c['arguments'] as string) as unknown })),
      want.calls.map((c) => ({ id: c.id, name: c.name, input: JSON.parse(c.args || '{}') as unknown })),
    );
    for (const c of calls) {
      const deltas = of('response.function_call_arguments.delta').filter((e) => e['item_id'] === c['id']).map((e) => e['delta']).join('');
      assert.equal(deltas || '{}', c['arguments'], 'the argument deltas add up to the arguments');
    }
  },
  'messages -> chat': (out, facts) => {
    const want = chatAnswer(facts);
    const events = typedFrames(out);
    assert.equal(events[0]!['type'], 'message_start');
    assert.deepEqual(events.slice(-2).map((e) => e['type']), ['message_delta', 'message_stop']);
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
    assert.equal(of('text').map((b) => b.text).join(''), want.content);
    assert.equal(of('thinking').map((b) => b.text).join(''), want.reasoning);
    assert.ok(of('thinking').every((b) => b['signature'] === ''), 'no signature is invented');
    assert.deepEqual(
      of('tool_use').map((b) => ({ id: b['id'], name: b['name'], input: JSON.parse(b.text || '{}') as unknown })),
      want.calls.map((c) => ({ id: c.id, name: c.name, input: JSON.parse(c.args || '{}') as unknown })),
    );
  },
  'chat -> messages': (out, facts, wantsUsage) => {
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
      if (p?.['type'] === 'content_block_start' && (p['content_block'] as Obj)['type'] === 'tool_use') blocks.set(p['index'], { ...(p['content_block'] as Obj), args: '' });
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
  },
};

for (const pair of PAIRS) {
  const { client, wire, passthrough } = pair;
  describe(`${pairName(pair)} on recorded streams`, () => {
    for (const name of STREAM_RECORDINGS[wire]) {
      for (const { label, body } of streamsOf(name, wire)) {
        const facts = streamFacts(wire, body);
        // Only chat clients choose whether they get the usage event.
        for (const wantsUsage of client === 'chat' ? [true, false] : [true]) {
          const run = (pieces: Buffer[]): Driven => drive(makeTranslator(client, wire, { wantsUsage }), pieces);
          const tag = client === 'chat' ? `${label} (include_usage ${wantsUsage})` : label;

          test(`${tag}: one piece, byte by byte and ${SEEDS.length} seeded splits give the same output, usage and text`, () => {
            const whole = comparable(run([body]));
            assert.deepEqual(comparable(run(byteByByte(body))), whole, 'byte by byte');
            for (const seed of SEEDS) assert.deepEqual(comparable(run(randomPieces(body, seed))), whole, `seed ${seed}`);
          });

          test(`${tag}: client output`, () => {
            const d = run([body]);
            if (passthrough) {
              const want = passthroughBytes(client, facts, wantsUsage);
              if (facts.errorAt === null) assert.equal(d.text, want);
              else errorFrame(d.text, want);
            } else if (facts.errorAt === null) {
              CLIENT_CHECKS[pairName(pair)]!(d.text, facts, wantsUsage);
            } else {
              assert.ok(d.error, 'a recording that fails mid-stream fails the translated stream (its frames: the test below)');
            }
          });

          test(`${tag}: usage is the recording's`, () => {
            assert.deepEqual(run([body]).usage, facts.usage);
          });

          if (facts.usage !== null) {
            test(`${tag}: usage is read in full (a copy of the recording reporting cached, reasoning and cache-write tokens)`, () => {
              for (const dialect of wire === 'chat' ? (['openai', 'deepseek'] as const) : (['openai'] as const)) {
                const variant = streamWithUsageCounts(wire, body, dialect);
                const want = streamFacts(wire, variant).usage!;
                assert.equal(want.cached, VARIANT_COUNTS.cached, 'the variant reports cached tokens');
                assert.equal(want.cacheWrite, wire === 'responses' || dialect === 'deepseek' ? undefined : VARIANT_COUNTS.written);
                const d = run([variant]);
                assert.deepEqual(d.usage, want, dialect);
                if (!passthrough && facts.errorAt === null) CLIENT_CHECKS[pairName(pair)]!(d.text, streamFacts(wire, variant), wantsUsage);
              }
            });
          }

          test(`${tag}: generated text and reasoning are the recording's (content, tool names and arguments; reasoning apart)`, () => {
            const d = run([body]);
            assert.ok(facts.text !== '' || facts.reasoning !== '' || facts.errorAt !== null, 'the recording generated something');
            assert.equal(d.generated, facts.text, 'text');
            assert.equal(d.reasoning, facts.reasoning, 'reasoning');
          });

          if (facts.errorAt !== null) {
            test(`${tag}: the mid-stream error is one failure of class ${STREAM_ERROR_CLASS[name]}, and nothing follows its error frame`, () => {
              const d = run([body]);
              assert.ok(d.error, 'a failure');
              assert.equal(d.error.classified.class, STREAM_ERROR_CLASS[name]);
              // The client got what came before the error event (a passthrough: those bytes), then one error frame.
              const events = readSse(d.text);
              const prefix = passthrough ? passthroughBytes(client, facts, wantsUsage) : events.slice(0, -1).map((e) => e.raw).join('');
              const frame = errorFrame(d.text, prefix);
              assert.equal(frameMessage(client, frame), facts.errorFields!['message']);
            });
          }
        }
      }
    }
  });
}

// ---------------------------------------------------------------------------------------
// JSON answers

/** Checks a translated JSON body against the wire's answer. */
/** A chat completion's message: content, reasoning, tool calls. */
function chatMessage(answer: Obj): { content: string; reasoning: string; calls: { id: unknown; name: unknown; input: unknown }[]; finish: string } {
  const choice = (answer['choices'] as Obj[])[0]!;
  const m = choice['message'] as Obj;
  const calls = ((m['tool_calls'] as Obj[] | undefined) ?? []).map((c) => ({ id: c['id'], name: (c['function'] as Obj)['name'], input: JSON.parse(((c['function'] as Obj)['arguments'] as string) || '{}') as unknown }));
  return { content: typeof m['content'] === 'string' ? m['content'] : '', reasoning: String(m['reasoning_content'] ?? m['reasoning'] ?? ''), calls, finish: String(choice['finish_reason']) };
}

const JSON_CHECKS: Readonly<Record<string, (body: Obj, answer: Obj, usage: Usage) => void>> = {
  'responses -> messages': checkResponsesJson,
  'responses -> chat': (body, answer, usage) => {
    const want = chatMessage(answer);
    assert.deepEqual([body['object'], body['model'], body['status']], ['response', answer['model'], want.finish === 'length' ? 'incomplete' : 'completed']);
    assert.match(String(body['id']), /^resp_/);
    const output = body['output'] as Obj[];
    const of = (type: string) => output.filter((i) => i['type'] === type);
    assert.equal(of('message').map((m) => (m['content'] as Obj[])[0]!['text']).join(''), want.content);
    assert.equal(of('reasoning').map((m) => (m['content'] as Obj[])[0]!['text']).join(''), want.reasoning);
    assert.deepEqual(of('function_call').map((c) => ({ id: c['call_id'], name: c['name'], input: JSON.parse(c['arguments'] as string) as unknown })), want.calls);
    assert.deepEqual(body['usage'], responsesUsageOf(usage));
  },
  'messages -> chat': (body, answer, usage) => {
    const want = chatMessage(answer);
    assert.deepEqual([body['type'], body['role'], body['model'], body['stop_reason']], ['message', 'assistant', answer['model'], STOP_OF[want.finish] ?? 'end_turn']);
    const blocks = body['content'] as Obj[];
    const of = (type: string) => blocks.filter((b) => b['type'] === type);
    assert.equal(of('text').map((b) => b['text']).join(''), want.content);
    assert.equal(of('thinking').map((b) => b['thinking']).join(''), want.reasoning);
    assert.deepEqual(of('tool_use').map((b) => ({ id: b['id'], name: b['name'], input: b['input'] })), want.calls);
    assert.deepEqual(body['usage'], anthropicUsageOf(usage));
  },
  'chat -> messages': (body, msg, usage) => {
    const blocks = msg['content'] as Obj[];
    const of = (type: string): Obj[] => blocks.filter((b) => b['type'] === type);
    assert.deepEqual([body['id'], body['object'], body['model']], [msg['id'], 'chat.completion', msg['model']]);
    const choices = body['choices'] as Obj[];
    assert.equal(choices.length, 1);
    assert.equal(choices[0]!['finish_reason'], FINISH[msg['stop_reason'] as string]);
    const message = choices[0]!['message'] as Obj;
    assert.equal(message['role'], 'assistant');
    const texts = of('text').map((b) => b['text'] as string);
    assert.equal(message['content'], texts.length > 0 ? texts.join('') : null);
    const thinking = of('thinking').map((b) => b['thinking'] as string);
    assert.equal(message['reasoning_content'], thinking.length > 0 ? thinking.join('') : undefined);
    assert.deepEqual(
      ((message['tool_calls'] as Obj[] | undefined) ?? []).map((c) => ({ id: c['id'], type: c['type'], name: (c['function'] as Obj)['name'], input: JSON.parse((c['function'] as Obj)['arguments'] as string) as unknown })),
      of('tool_use').map((b) => ({ id: b['id'], type: 'function', name: b['name'], input: b['input'] })),
    );
    assert.deepEqual(body['usage'], openAIUsage(usage));
  },
};

for (const pair of PAIRS) {
  const { client, wire, passthrough } = pair;
  describe(`${pairName(pair)} on recorded JSON answers`, () => {
    test('a body that is JSON but not an object is a bad response', () => {
      for (const v of [[], 'text', 42, null, true]) {
        const raw = Buffer.from(JSON.stringify(v));
        assert.throws(
          () => makeTranslator(client, wire, { stream: false }).json(raw, v),
          (e: unknown) => e instanceof GatewayError && e.code === 'GW_ERR_UPSTREAM_BAD_RESPONSE',
          JSON.stringify(v),
        );
      }
    });

    for (const name of JSON_RECORDINGS[wire]) {
      for (const variant of [false, true]) {
        const tag = variant ? `${name} reporting cached, reasoning and cache-write tokens` : name;
        test(`${tag}: ${passthrough ? 'body bytes unchanged' : 'translated body'}, usage the answer's`, () => {
          const recorded = fixture(name);
          const parsed = variant ? withUsageCounts(wire, JSON.parse(recorded.toString('utf8')) as Obj) : (JSON.parse(recorded.toString('utf8')) as Obj);
          const raw = variant ? Buffer.from(JSON.stringify(parsed)) : recorded;
          const want = expectedUsage(wire, parsed['usage'] as Obj);
          if (variant) assert.equal(want.cached, VARIANT_COUNTS.cached);
          const out = makeTranslator(client, wire, { stream: false }).json(raw, JSON.parse(raw.toString('utf8')));
          assert.deepEqual(out.usage, want);
          if (passthrough) assert.ok(out.body.equals(raw), 'the upstream bytes, unchanged');
          else JSON_CHECKS[pairName(pair)]!(JSON.parse(out.body.toString('utf8')) as Obj, parsed, want);
        });
      }
    }
  });
}

// ---------------------------------------------------------------------------------------
// Error answers

/** Anthropic error types as an OpenAI client gets them (what OpenAI answers for the same condition). */
const ANTHROPIC_AS_OPENAI: Readonly<Record<string, { status: number; type: string; code: string | null }>> = {
  invalid_request_error: { status: 400, type: 'invalid_request_error', code: null },
  not_found_error: { status: 404, type: 'invalid_request_error', code: null },
  rate_limit_error: { status: 429, type: 'rate_limit_error', code: 'rate_limit_exceeded' },
};

const HEADERS = { 'retry-after': '17', 'x-request-id': 'req_upstream', 'content-type': 'application/json' };

for (const pair of PAIRS) {
  const { client, wire } = pair;
  describe(`${pairName(pair)} on recorded error answers`, () => {
    for (const name of ERROR_RECORDINGS[wire]) {
      const status = statusOf(name);
      test(`${name}: the client gets the status, type, code and message, Retry-After kept; class ${ERROR_CLASS_BY_NAME[name] ?? ERROR_CLASS_BY_STATUS[status]}`, () => {
        const body = fixture(name);
        const err = (JSON.parse(body.toString('utf8')) as Obj)['error'] as Obj;
        const f = makeTranslator(client, wire).error(status, HEADERS, body);
        assert.equal(f.classified.class, ERROR_CLASS_BY_NAME[name] ?? ERROR_CLASS_BY_STATUS[status]);
        assert.equal(f.error.message, err['message']);
        assert.equal(f.error.headers['retry-after'], '17');
        assert.equal(f.error.headers['x-request-id'], undefined, 'only retry headers are kept');
        if (client === wire || wire !== 'messages') {
          // The same error object on both sides (OpenAI's); a Messages client gets it in Anthropic's shape by status.
          assert.equal(f.error.status, status);
          assert.equal(f.error.type, err['type'] ?? 'invalid_request_error');
          if (wire !== 'messages') assert.equal(f.error.openaiCode, err['code'] === undefined || err['code'] === null ? null : String(err['code']));
          assert.equal(f.error.param, typeof err['param'] === 'string' ? err['param'] : null);
        } else {
          const want = ANTHROPIC_AS_OPENAI[err['type'] as string]!;
          const code = err['type'] === 'not_found_error' && /\bmodel\b/.test(err['message'] as string) ? 'model_not_found' : want.code;
          assert.deepEqual([f.error.status, f.error.type, f.error.openaiCode], [want.status, want.type, code]);
        }
      });
    }
  });
}
