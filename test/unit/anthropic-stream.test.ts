/**
 * The chat -> messages translator's stream side: recorded Anthropic SSE streams in, OpenAI
 * chat chunks out (driven as the relay drives it: test/helpers/translate.ts). Expected
 * values are read from each fixture (not typed in), every split of the input must give the
 * same bytes out, and each event is translated as soon as it arrives.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { SseFramer } from '../../src/sse/parse.js';
import { fixture } from '../helpers/recordings.js';
import { drive, makeTranslator } from '../helpers/translate.js';

type Obj = Record<string, unknown>;

/** A `.chunks.jsonl` fixture (one data payload a line) rebuilt into SSE bytes. */
function fromJsonl(name: string): Buffer {
  const lines = fixture(name)
    .toString('utf8')
    .split('\n')
    .filter((l) => l.trim() !== '');
  return Buffer.from(lines.map((l) => `event: ${(JSON.parse(l) as { type: string }).type}\ndata: ${l}\n\n`).join(''));
}

/** The fixture's data payloads, read independently of the code under test (one `data:` line per event). */
function payloads(input: Buffer): Obj[] {
  return input
    .toString('utf8')
    .split('\n')
    .filter((l) => l.startsWith('data: '))
    .map((l) => JSON.parse(l.slice(6)) as Obj);
}

const INPUTS: Record<string, Buffer> = {
  'anthropic-messages-stream-thinking.sse': fixture('anthropic-messages-stream-thinking.sse'),
  'anthropic-messages-stream-tool-use.sse': fixture('anthropic-messages-stream-tool-use.sse'),
  'anthropic-messages-stream-text.chunks.jsonl': fromJsonl('anthropic-messages-stream-text.chunks.jsonl'),
  'anthropic-messages-stream-tool-no-args.chunks.jsonl': fromJsonl('anthropic-messages-stream-tool-no-args.chunks.jsonl'),
};

/**
 * Feeds the pieces through a fresh chat -> messages translator; the client's bytes, with
 * `created` (the translator's clock, Unix seconds) set to 0 so runs compare byte for byte.
 */
async function run(pieces: Buffer[]): Promise<string> {
  return drive(makeTranslator('chat', 'messages'), pieces).text.replace(/"created":\d+/g, '"created":0');
}

function byteByByte(b: Buffer): Buffer[] {
  const out: Buffer[] = [];
  for (let i = 0; i < b.length; i++) out.push(b.subarray(i, i + 1));
  return out;
}

function randomPieces(b: Buffer, seed: number): Buffer[] {
  let a = seed >>> 0;
  const r = (): number => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const out: Buffer[] = [];
  for (let i = 0; i < b.length;) {
    const n = 1 + Math.floor(r() * 97);
    out.push(b.subarray(i, i + n));
    i += n;
  }
  return out;
}

/** Splits output into frames; every frame must be `data: ...\n\n`. */
function frames(text: string): string[] {
  assert.ok(text.endsWith('\n\n'), 'output ends with a blank line');
  const parts = text.slice(0, -2).split('\n\n');
  for (const f of parts) assert.match(f, /^data: [^\n]+$/);
  return parts.map((f) => f.slice(6));
}

interface Assembled {
  chunks: Obj[];
  content: string;
  reasoning: string;
  tools: { id: string; name: string; arguments: string }[];
  finish: unknown[];
  usage: Obj | undefined;
  done: boolean;
}

function assemble(text: string): Assembled {
  const fs = frames(text);
  const done = fs[fs.length - 1] === '[DONE]';
  const chunks = (done ? fs.slice(0, -1) : fs).map((f) => JSON.parse(f) as Obj);
  let content = '';
  let reasoning = '';
  const tools: Assembled['tools'] = [];
  const finish: unknown[] = [];
  let usage: Obj | undefined;
  for (const c of chunks) {
    const choices = c['choices'] as Obj[];
    if (choices.length === 0) {
      usage = c['usage'] as Obj;
      continue;
    }
    const choice = choices[0]!;
    if (choice['finish_reason'] !== null) finish.push(choice['finish_reason']);
    const delta = choice['delta'] as Obj;
    if (typeof delta['content'] === 'string') content += delta['content'];
    if (typeof delta['reasoning_content'] === 'string') reasoning += delta['reasoning_content'];
    for (const tc of (delta['tool_calls'] as Obj[] | undefined) ?? []) {
      const i = tc['index'] as number;
      const fn = tc['function'] as Obj;
      if (tc['id'] !== undefined) {
        assert.equal(i, tools.length, 'tool call indexes count up from 0');
        tools.push({ id: tc['id'] as string, name: fn['name'] as string, arguments: fn['arguments'] as string });
      } else {
        assert.ok(tools[i], `argument delta for a started tool call ${i}`);
        tools[i]!.arguments += fn['arguments'] as string;
      }
    }
  }
  return { chunks, content, reasoning, tools, finish, usage, done };
}

const FINISH: Record<string, string> = {
  end_turn: 'stop',
  stop_sequence: 'stop',
  max_tokens: 'length',
  tool_use: 'tool_calls',
  refusal: 'content_filter',
  pause_turn: 'stop',
};

/** What the fixture says the translation must contain. */
function expected(input: Buffer) {
  const events = payloads(input);
  const start = events.find((e) => e['type'] === 'message_start')!['message'] as Obj;
  const startUsage = start['usage'] as Obj;
  const delta = events.find((e) => e['type'] === 'message_delta')!;
  const finalUsage = { ...startUsage, ...(delta['usage'] as Obj) };
  const blockTypes = new Map<number, Obj>();
  let text = '';
  let thinking = '';
  const toolArgs = new Map<number, string>();
  for (const e of events) {
    if (e['type'] === 'content_block_start') blockTypes.set(e['index'] as number, e['content_block'] as Obj);
    if (e['type'] !== 'content_block_delta') continue;
    const d = e['delta'] as Obj;
    if (d['type'] === 'text_delta') text += d['text'] as string;
    if (d['type'] === 'thinking_delta') thinking += d['thinking'] as string;
    if (d['type'] === 'input_json_delta' && blockTypes.get(e['index'] as number)?.['type'] === 'tool_use') {
      toolArgs.set(e['index'] as number, (toolArgs.get(e['index'] as number) ?? '') + (d['partial_json'] as string));
    }
  }
  const tools = [...blockTypes.entries()]
    .filter(([, b]) => b['type'] === 'tool_use')
    .map(([i, b]) => ({ id: b['id'], name: b['name'], input: JSON.parse(toolArgs.get(i) || '{}') as unknown }));
  const inTokens = finalUsage['input_tokens'] as number;
  const cacheRead = finalUsage['cache_read_input_tokens'] as number;
  const cacheCreation = finalUsage['cache_creation_input_tokens'] as number;
  const output = finalUsage['output_tokens'] as number;
  return {
    id: start['id'],
    model: start['model'],
    text,
    thinking,
    tools,
    finish: FINISH[(delta['delta'] as Obj)['stop_reason'] as string],
    usage: {
      prompt_tokens: inTokens + cacheRead + cacheCreation,
      completion_tokens: output,
      total_tokens: inTokens + cacheRead + cacheCreation + output,
      prompt_tokens_details: { cached_tokens: cacheRead },
      cache_read_input_tokens: cacheRead,
      cache_creation_input_tokens: cacheCreation,
    },
    serverTools: [...blockTypes.values()].filter((b) => b['type'] === 'server_tool_use').map((b) => b['id']),
  };
}

describe('chat -> messages on recorded streams', () => {
  for (const [name, input] of Object.entries(INPUTS)) {
    test(name, async () => {
      const whole = await run([input]);
      const exp = expected(input);
      const got = assemble(whole);

      assert.ok(got.done, 'ends with data: [DONE]');
      for (const c of got.chunks) {
        assert.equal(c['id'], exp.id);
        assert.equal(c['model'], exp.model);
        assert.equal(c['created'], got.chunks[0]!['created'], 'one created time per stream');
        assert.equal(c['object'], 'chat.completion.chunk');
      }
      const first = (got.chunks[0]!['choices'] as Obj[])[0]!;
      assert.deepEqual(first['delta'], { role: 'assistant', content: '' });

      assert.equal(got.content, exp.text);
      assert.equal(got.reasoning, exp.thinking);
      assert.equal(got.tools.length, exp.tools.length);
      got.tools.forEach((t, i) => {
        assert.equal(t.id, exp.tools[i]!.id);
        assert.equal(t.name, exp.tools[i]!.name);
        assert.deepEqual(JSON.parse(t.arguments), exp.tools[i]!.input);
      });
      for (const id of exp.serverTools) assert.ok(!whole.includes(id as string), 'server tool calls are not relayed');
      assert.ok(!whole.includes('signature'), 'thinking signatures are dropped');
      assert.deepEqual(got.finish, [exp.finish]);
      assert.deepEqual(got.usage, exp.usage);
      // The usage chunk is last before [DONE], and nothing follows the finish chunk but it.
      const lastTwo = got.chunks.slice(-2);
      assert.deepEqual(lastTwo[1]!['choices'], []);
      assert.notEqual((lastTwo[0]!['choices'] as Obj[])[0]!['finish_reason'], null);

      assert.equal(await run(byteByByte(input)), whole, 'byte-by-byte gives the same output');
      for (const seed of [1, 2, 3]) assert.equal(await run(randomPieces(input, seed)), whole, `random split ${seed}`);
    });
  }

  test('the tool-use stream relays only the client tool, as index 0 (its Anthropic index is 4)', async () => {
    const got = assemble(await run([INPUTS['anthropic-messages-stream-tool-use.sse']!]));
    assert.equal(got.tools.length, 1);
    assert.equal(got.tools[0]!.name, 'get_exchange_rate');
    assert.deepEqual(JSON.parse(got.tools[0]!.arguments), { from_currency: 'USD', to_currency: 'EUR' });
    // message_delta's input count (1591) supersedes message_start's (702).
    assert.equal(got.usage!['prompt_tokens'], 1591);
  });

  test('a tool call with no argument bytes gets "{}"', async () => {
    const got = assemble(await run([INPUTS['anthropic-messages-stream-tool-no-args.chunks.jsonl']!]));
    assert.equal(got.tools.length, 1);
    assert.equal(got.tools[0]!.arguments, '{}');
  });
});

const ERROR_EVENT = 'event: error\ndata: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}\n\n';

describe('chat -> messages stream errors', () => {
  test('an error event mid-stream becomes one OpenAI error frame, then the output ends', async () => {
    const text = INPUTS['anthropic-messages-stream-text.chunks.jsonl']!.toString('utf8');
    const events = text.split(/(?<=\n\n)/);
    const cut = events.findIndex((e) => e.includes('"text":"! I"')) + 1;
    assert.ok(cut > 0);
    const input = Buffer.from([...events.slice(0, cut), ERROR_EVENT, ...events.slice(cut)].join(''));
    const whole = await run([input]);
    assert.equal(await run(byteByByte(input)), whole);

    const fs = frames(whole);
    assert.ok(!fs.includes('[DONE]'));
    assert.deepEqual(JSON.parse(fs[fs.length - 1]!), { error: { message: 'Overloaded', type: 'server_error', param: null, code: 'overloaded' } });
    const before = fs.slice(0, -1).map((f) => JSON.parse(f) as Obj);
    const content = before.map((c) => ((c['choices'] as Obj[])[0]!['delta'] as Obj)['content'] ?? '').join('');
    assert.equal(content, 'Hello! I', 'text before the error is relayed, text after it is not');
  });

  test('an error event as the first event', async () => {
    const fs = frames(await run([Buffer.from(ERROR_EVENT)]));
    assert.equal(fs.length, 1);
    assert.equal((JSON.parse(fs[0]!) as { error: { code: string } }).error.code, 'overloaded');
  });

  test('a stream cut before any stop reason keeps what was translated and ends with one error frame', async () => {
    const text = INPUTS['anthropic-messages-stream-text.chunks.jsonl']!.toString('utf8');
    const cut = Buffer.from(text.slice(0, text.indexOf('event: message_delta')));
    const out = await run([cut]);
    assert.match(out, /"content":"Hello"/);
    const frames = out.split('\n\n').filter((f) => f !== '');
    assert.deepEqual(JSON.parse(frames.at(-1)!.slice(6)), {
      error: { message: 'The upstream stream ended before the response was complete.', type: 'server_error', param: null, code: 'upstream_stream_error' },
    });
    assert.doesNotMatch(out, /\[DONE\]/);
  });

  test('a stream with its stop reason but no message_stop is complete: usage and [DONE]', async () => {
    const text = INPUTS['anthropic-messages-stream-text.chunks.jsonl']!.toString('utf8');
    const out = await run([Buffer.from(text.slice(0, text.indexOf('event: message_stop')))]);
    const got = assemble(out);
    assert.ok(got.done);
    assert.doesNotMatch(out, /"error"/);
  });

  test('a final event without its blank line still completes the stream', async () => {
    const input = INPUTS['anthropic-messages-stream-text.chunks.jsonl']!;
    const got = assemble(await run([input.subarray(0, input.length - 2)]));
    assert.ok(got.done);
  });

  test('non-JSON event data ends the output with an upstream_bad_response frame after what came before', async () => {
    const text = INPUTS['anthropic-messages-stream-text.chunks.jsonl']!.toString('utf8');
    const head = text
      .split(/(?<=\n\n)/)
      .slice(0, 4)
      .join('');
    const out = await run([Buffer.from(head + 'event: content_block_delta\ndata: {not json\n\nevent: message_stop\ndata: {"type":"message_stop"}\n\n')]);
    assert.match(out, /"content":"Hello"/);
    assert.match(out.trimEnd().split('\n\n').at(-1)!, /"code":"upstream_bad_response"/);
    assert.doesNotMatch(out, /\[DONE\]/);
  });
});

test('each event is translated as soon as it arrives', () => {
  const input = INPUTS['anthropic-messages-stream-text.chunks.jsonl']!.toString('utf8');
  const events = input.split(/(?<=\n\n)/);
  const tr = makeTranslator('chat', 'messages');
  const framer = new SseFramer();
  const push = (s: string): string[] => framer.push(Buffer.from(s)).flatMap((ev) => (tr.event(ev).frames ?? []).map((b) => b.toString('utf8')));
  const first = push(events[0]!); // message_start
  assert.equal(first.length, 1);
  assert.match(first[0]!, /"role":"assistant"/);
  assert.deepEqual(push(events[1]!.slice(0, 10)), [], 'half of content_block_start: nothing yet');
  const next = push(events[1]!.slice(10) + events[2]! + events[3]!); // rest + ping + first text delta
  assert.equal(next.length, 1);
  assert.match(next[0]!, /"content":"Hello"/);
});
