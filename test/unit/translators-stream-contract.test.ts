/**
 * What the translator contract (src/translate/types.ts and each translator's header)
 * promises about how a stream ends and about frames it must not forward, one behaviour per
 * test, on streams derived from the recordings (events dropped, cut or inserted):
 * - a complete answer without its terminator gets exactly one (`[DONE]`, `message_stop`);
 * - a stream that ends before the answer completed is a cut-short failure;
 * - chat's usage-only chunk (`choices` missing, null or []) reaches the client only when it asked;
 * - a `data:` frame that is not a JSON object is a `bad_response` failure and is not forwarded;
 * - after the terminator, data is dropped and comments pass.
 */
import assert from 'node:assert/strict';
import { after, before, describe, mock, test } from 'node:test';
import type { ApiName } from '../../src/apis/names.js';
import { SseFramer } from '../../src/sse/parse.js';
import { supportedPairs } from '../../src/translate/table.js';
import { expectedUsage, readSse, sseBody, STREAM_RECORDINGS, streamFacts, streamsOf, type Obj, type RecordedEvent } from '../helpers/recording-catalog.js';
import { byteByByte, randomPieces } from '../helpers/splits.js';
import { drive, makeTranslator, sameIds, type Driven } from '../helpers/translate.js';

const PAIRS = supportedPairs();
const DONE = 'data: [DONE]\n\n';
const MESSAGE_STOP = 'event: message_stop\ndata: {"type":"message_stop"}\n\n';

before(() => mock.method(Date, 'now', () => 1_760_000_000_000));
after(() => mock.restoreAll());

const join = (events: readonly RecordedEvent[]): Buffer => Buffer.from(events.map((e) => e.raw).join(''), 'utf8');
const typeOf = (e: RecordedEvent): unknown => (e.data && e.data !== '[DONE]' ? (JSON.parse(e.data) as Obj)['type'] : undefined);

/** The complete streams (no failure) of each wire API, as events. */
function completeStreams(wire: ApiName): { label: string; events: RecordedEvent[] }[] {
  return STREAM_RECORDINGS[wire].flatMap((name) =>
    streamsOf(name, wire)
      .filter((s) => streamFacts(wire, s.body).errorAt === null)
      .map((s) => ({ label: s.label, events: readSse(s.body.toString('utf8')) })),
  );
}

/** The index of the event that completes the answer (chat: first finish_reason; responses: response.completed; messages: message_delta). */
function completingEvent(wire: ApiName, events: readonly RecordedEvent[]): number {
  const i = events.findIndex((e) => {
    if (e.data === null || e.data === '[DONE]') return false;
    const p = JSON.parse(e.data) as Obj;
    if (wire === 'chat') return Array.isArray(p['choices']) && (p['choices'] as Obj[]).some((c) => typeof c['finish_reason'] === 'string');
    return p['type'] === (wire === 'responses' ? 'response.completed' : 'message_delta');
  });
  assert.ok(i > 0, 'the recording completes its answer');
  return i;
}

/** What a fresh translator writes for `events` alone (event() only, no end()): the frames before a failure. */
function framesOf(client: ApiName, wire: ApiName, events: readonly RecordedEvent[], wantsUsage = true): string {
  const tr = makeTranslator(client, wire, { wantsUsage });
  const framer = new SseFramer();
  const out: Buffer[] = [];
  for (const ev of framer.push(join(events))) {
    const step = tr.event(ev);
    assert.equal(step.error, undefined, 'no failure before the point under test');
    out.push(...(step.frames ?? []));
  }
  return Buffer.concat(out).toString('utf8');
}

/** Asserts `d` is `prefix` then one error frame, and returns the failure. */
function failsAfter(d: Driven, before: string): NonNullable<Driven['error']> {
  assert.ok(d.error, 'a failure');
  // Ids the translator minted differ between two runs: compared by order of appearance.
  const text = sameIds(d.text);
  const prefix = sameIds(before);
  assert.ok(text.startsWith(prefix), 'the frames before the failure, unchanged');
  const rest = readSse(text.slice(prefix.length));
  assert.equal(rest.length, 1, `one error frame, nothing after it: ${JSON.stringify(text.slice(prefix.length, prefix.length + 200))}`);
  assert.ok(JSON.stringify(JSON.parse(rest[0]!.data!)).includes(JSON.stringify(d.error.error.message)), 'the frame carries the failure');
  return d.error;
}

describe('a complete answer without its terminator gets exactly one', () => {
  for (const { label, events } of completeStreams('chat')) {
    const withoutDone = events.filter((e) => e.data !== '[DONE]');
    // Also cut right after the finish chunk: no usage chunk, no [DONE].
    const afterFinish = events.slice(0, completingEvent('chat', events) + 1);
    for (const [how, evs] of [
      ['[DONE] missing', withoutDone],
      ['ends at the finish chunk', afterFinish],
    ] as const) {
      test(`chat -> chat, ${label}, ${how}: one [DONE] appended`, () => {
        for (const wantsUsage of [true, false]) {
          for (const pieces of [[join(evs)], byteByByte(join(evs)), randomPieces(join(evs), 5)]) {
            const d = drive(makeTranslator('chat', 'chat', { wantsUsage }), pieces);
            assert.equal(d.error, null);
            assert.equal(d.text, framesOf('chat', 'chat', evs, wantsUsage) + DONE);
            assert.equal(d.text.split(DONE).length - 1, 1, 'exactly one [DONE]');
          }
        }
      });
    }
  }

  for (const { label, events } of completeStreams('messages')) {
    const withoutStop = events.filter((e) => typeOf(e) !== 'message_stop');
    test(`messages -> messages, ${label}, message_stop missing: one message_stop appended`, () => {
      assert.equal(withoutStop.length, events.length - 1);
      const d = drive(makeTranslator('messages', 'messages'), [join(withoutStop)]);
      assert.equal(d.error, null);
      assert.equal(d.text, join(withoutStop).toString('utf8') + MESSAGE_STOP);
    });

    test(`chat -> messages, ${label}, message_stop missing: the same chat stream as with it (usage chunk, one [DONE])`, () => {
      for (const wantsUsage of [true, false]) {
        const full = drive(makeTranslator('chat', 'messages', { wantsUsage }), [join(events)]);
        const cut = drive(makeTranslator('chat', 'messages', { wantsUsage }), [join(withoutStop)]);
        assert.equal(cut.error, null);
        assert.equal(cut.text, full.text);
        assert.equal(cut.text.split(DONE).length - 1, 1);
      }
    });
  }
});

describe('a stream that ends before its answer completed is cut short', () => {
  for (const { client, wire } of PAIRS) {
    for (const { label, events } of completeStreams(wire)) {
      test(`${client} -> ${wire}, ${label}, ended before the ${wire === 'chat' ? 'finish_reason' : wire === 'responses' ? 'response.completed' : 'message_delta'}: one failure of class stream`, () => {
        const cut = events.slice(0, completingEvent(wire, events));
        for (const pieces of [[join(cut)], randomPieces(join(cut), 9)]) {
          const d = drive(makeTranslator(client, wire), pieces);
          const prefix = framesOf(client, wire, cut);
          if (client === wire) assert.equal(prefix, join(cut).toString('utf8'), 'a passthrough forwarded every byte before the cut');
          assert.equal(failsAfter(d, prefix).classified.class, 'stream');
        }
      });
    }
  }
});

describe("chat's usage-only chunk", () => {
  const name = 'openai-chat-stream-text-include-usage.sse';
  const events = readSse(sseBody(name).toString('utf8'));
  const at = events.findIndex(
    (e) =>
      e.data !== null &&
      e.data !== '[DONE]' &&
      Array.isArray((JSON.parse(e.data) as Obj)['choices']) &&
      ((JSON.parse(e.data) as Obj)['choices'] as unknown[]).length === 0,
  );
  const usageChunk = JSON.parse(events[at]!.data!) as Obj;
  const usage = usageChunk['usage'] as Obj;

  for (const [how, choices] of [
    ['choices: []', []],
    ['choices: null', null],
    ['choices missing', undefined],
  ] as const) {
    const chunk = { ...usageChunk, choices };
    if (choices === undefined) delete chunk['choices'];
    const frame: RecordedEvent = { raw: `data: ${JSON.stringify(chunk)}\n\n`, data: JSON.stringify(chunk), event: null };
    const stream = [...events.slice(0, at), frame, ...events.slice(at + 1)];

    test(`${how}: held back when the client did not ask for usage, forwarded when it did; usage read either way`, () => {
      const want = expectedUsage('chat', usage);
      const asked = drive(makeTranslator('chat', 'chat', { wantsUsage: true }), [join(stream)]);
      assert.equal(asked.text, join(stream).toString('utf8'));
      assert.deepEqual(asked.usage, want);
      const notAsked = drive(makeTranslator('chat', 'chat', { wantsUsage: false }), [join(stream)]);
      assert.equal(notAsked.text, join(stream.filter((e) => e !== frame)).toString('utf8'));
      assert.ok(!notAsked.text.includes('"usage":{'), 'no usage object reaches the client');
      assert.deepEqual(notAsked.usage, want);
    });
  }
});

describe('a data frame that is not a JSON object is a bad response and is not forwarded', () => {
  const BAD = ['{"choices": [', 'not json', '[1,2]', '"text"', '42', 'null', 'true'];
  for (const { client, wire } of PAIRS) {
    const { label, events } = completeStreams(wire)[0]!;
    // After the first data event, so frames already went out.
    const at = events.findIndex((e) => e.data !== null) + 1;
    for (const bad of BAD) {
      for (const typed of wire === 'chat' ? [false] : [false, true]) {
        const raw = `${typed ? `event: ${String(typeOf(events[at]!))}\n` : ''}data: ${bad}\n\n`;
        test(`${client} -> ${wire}, ${label}: ${JSON.stringify(raw)}`, () => {
          const stream = Buffer.concat([join(events.slice(0, at)), Buffer.from(raw), join(events.slice(at))]);
          const d = drive(makeTranslator(client, wire), [stream]);
          assert.equal(failsAfter(d, framesOf(client, wire, events.slice(0, at))).classified.class, 'bad_response');
          assert.ok(!d.text.includes(raw), 'the frame is not forwarded');
        });
      }
    }
  }
});

describe('after the terminator, data is dropped and comments pass', () => {
  for (const { client, wire } of PAIRS.filter((p) => p.passthrough)) {
    // A recording that has its terminator ([DONE], message_stop, response.completed).
    const { label, events } = completeStreams(wire).find((s) => streamFacts(wire, join(s.events)).terminated)!;
    test(`${client} -> ${wire}, ${label}`, () => {
      const firstData = events.find((e) => e.data !== null)!;
      const extra = `: keep-alive\n\n${firstData.raw}: keep-alive 2\n\n`;
      const d = drive(makeTranslator(client, wire), [Buffer.concat([join(events), Buffer.from(extra)])]);
      assert.equal(d.error, null);
      assert.equal(d.text, join(events).toString('utf8') + ': keep-alive\n\n: keep-alive 2\n\n');
    });
  }

  test('responses -> responses, the recorder-concatenated openai-responses-stream-reasoning-encrypted.chunks.jsonl: only the first response reaches the client', () => {
    const name = 'openai-responses-stream-reasoning-encrypted.chunks.jsonl';
    const streams = streamsOf(name, 'responses');
    assert.equal(streams.length, 4);
    const d = drive(makeTranslator('responses', 'responses'), [sseBody(name)]);
    assert.equal(d.error, null);
    assert.equal(d.text, streams[0]!.body.toString('utf8'));
  });
});
