/**
 * fast-check arbitraries for what an upstream sends back, per wire API, for the translator
 * property tests (test/hostile): JSON answers and error bodies from the recordings with
 * fields removed or replaced by junk, and SSE streams built from the recorded streams'
 * events: in order and cut anywhere, with events dropped, shuffled, repeated, their fields
 * removed or replaced, and odd frames (`[DONE]` early, data that is not JSON) put in.
 */
import fc from 'fast-check';
import type { ApiName } from '../../src/apis/names.js';
import { junk, oddKey } from './hostile-bodies.js';
import { ERROR_RECORDINGS, JSON_RECORDINGS, readSse, STREAM_RECORDINGS, streamsOf, type Obj } from './recording-catalog.js';
import { fixture } from './recordings.js';

const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/** One recorded event: its `event:` name (null: none) and its parsed data. */
interface Event {
  readonly name: string | null;
  readonly data: unknown;
}

/** The recorded streams of `wire`, each as its events (`[DONE]` as the string). */
function recordedStreams(wire: ApiName): Event[][] {
  return STREAM_RECORDINGS[wire].flatMap((name) =>
    streamsOf(name, wire).map((s) =>
      readSse(s.body.toString('utf8'))
        .filter((e) => e.data !== null)
        .map((e) => ({ name: e.event, data: e.data === '[DONE]' ? '[DONE]' : (JSON.parse(e.data!) as unknown) })),
    ),
  );
}

/** JSON answers of `wire`: the recordings, and for Responses (none recorded) the completed responses of its streams. */
function recordedAnswers(wire: ApiName): Obj[] {
  if (wire !== 'responses') return JSON_RECORDINGS[wire].map((n) => JSON.parse(fixture(n).toString('utf8')) as Obj);
  return recordedStreams(wire)
    .flat()
    .flatMap((e) => (isObj(e.data) && e.data['type'] === 'response.completed' && isObj(e.data['response']) ? [e.data['response']] : []));
}

/** An edit of a JSON value: at the `at`-th container (walk order, modulo), remove or replace the `key`-th member, or add `name`. */
interface Edit {
  readonly at: number;
  readonly key: number;
  readonly op: 'remove' | 'replace' | 'add';
  readonly name: string;
  readonly value: unknown;
}

const edit: fc.Arbitrary<Edit> = fc.record({ at: fc.nat(), key: fc.nat(), op: fc.constantFrom('remove', 'replace', 'add'), name: oddKey, value: junk });

/** The containers (objects, arrays) of `v`, outermost first. */
function containers(v: unknown, out: (Obj | unknown[])[] = []): (Obj | unknown[])[] {
  if (Array.isArray(v) || isObj(v)) {
    out.push(v);
    for (const c of Array.isArray(v) ? v : Object.values(v)) containers(c, out);
  }
  return out;
}

/** `v` (deep-copied) with `edits` applied. */
export function applyEdits(v: unknown, edits: readonly Edit[]): unknown {
  const copy = structuredClone(v);
  for (const e of edits) {
    const all = containers(copy);
    if (all.length === 0) return copy;
    const c = all[e.at % all.length]!;
    if (Array.isArray(c)) {
      const i = c.length === 0 ? 0 : e.key % c.length;
      if (e.op === 'remove') c.splice(i, 1);
      else if (e.op === 'replace') c[i] = e.value;
      else c.push(e.value);
    } else {
      const keys = Object.keys(c);
      const k = e.op === 'add' || keys.length === 0 ? e.name : keys[e.key % keys.length]!;
      if (e.op === 'remove') delete c[k];
      else Object.defineProperty(c, k, { value: e.value, enumerable: true, writable: true, configurable: true });
    }
  }
  return copy;
}

const edits = (max: number) => fc.array(edit, { maxLength: max });

/** A JSON answer of `wire`: a recording with up to three edits, or junk. */
export function jsonAnswer(wire: ApiName): fc.Arbitrary<unknown> {
  const answers = recordedAnswers(wire);
  return fc.oneof({ weight: 6, arbitrary: fc.tuple(fc.constantFrom(...answers), edits(3)).map(([a, e]) => applyEdits(a, e)) }, junk);
}

/** An error answer: a status, and a body (an error recording of any wire API, edited; junk; or not JSON). */
export const errorAnswer: fc.Arbitrary<{ status: number; body: Buffer; retryAfter: string | undefined }> = fc.record({
  status: fc.oneof(fc.constantFrom(400, 401, 403, 404, 408, 409, 413, 422, 429, 500, 502, 503, 504, 529), fc.integer({ min: 400, max: 599 })),
  body: fc.oneof(
    {
      weight: 4,
      arbitrary: fc
        .tuple(fc.constantFrom(...Object.values(ERROR_RECORDINGS).flat()), edits(2))
        .map(([n, e]) => Buffer.from(JSON.stringify(applyEdits(JSON.parse(fixture(n).toString('utf8')), e)))),
    },
    junk.map((j) => Buffer.from(JSON.stringify(j) ?? '')),
    fc.string({ maxLength: 40 }).map((s) => Buffer.from(s)),
  ),
  retryAfter: fc.option(fc.oneof(fc.constantFrom('0', '1', '30', '-5', '1e9', 'NaN', 'Wed, 21 Oct 2015 07:28:00 GMT'), fc.string({ maxLength: 8 })), {
    nil: undefined,
  }),
});

/** One SSE frame: the event in the wire's framing, or an odd frame. */
function frame(e: Event | string): string {
  if (typeof e === 'string') return e;
  const data = typeof e.data === 'string' ? e.data : JSON.stringify(e.data);
  return `${e.name !== null ? `event: ${e.name}\n` : ''}data: ${data}\n\n`;
}

const ODD_FRAMES = [
  'data: [DONE]\n\n',
  'data: {"truncated":\n\n',
  'data: not json\n\n',
  ': keep-alive\n\n',
  'event: ping\ndata: {"type":"ping"}\n\n',
  'data: null\n\n',
  'data: []\n\n',
  'data: 42\n\n',
];

/**
 * An upstream SSE body of `wire`: a recorded stream cut at a random point, with events
 * dropped, repeated or moved, some of them edited, and odd frames inserted; or events of
 * all its recordings in random order.
 */
export function streamAnswer(wire: ApiName): fc.Arbitrary<string> {
  const streams = recordedStreams(wire);
  const pool = streams.flat();
  const item: fc.Arbitrary<Event | string> = fc.oneof(
    { weight: 8, arbitrary: fc.tuple(fc.constantFrom(...pool), edits(2)).map(([e, ed]) => ({ name: e.name, data: applyEdits(e.data, ed) })) },
    fc.constantFrom(...ODD_FRAMES),
  );
  const recorded = fc
    .tuple(
      fc.constantFrom(...streams),
      fc.nat(),
      fc.array(fc.tuple(fc.nat(), fc.oneof(fc.constant(null), item)), { maxLength: 4 }),
      fc.array(fc.tuple(fc.nat(), edits(2)), { maxLength: 3 }),
    )
    .map(([events, cut, changes, editsAt]) => {
      const out: (Event | string)[] = events.slice(0, 1 + (cut % events.length));
      for (const [at, ed] of editsAt) {
        const i = at % out.length;
        const e = out[i]!;
        if (typeof e !== 'string') out[i] = { name: e.name, data: applyEdits(e.data, ed) };
      }
      // null: drop the event at `at`; else insert the item there.
      for (const [at, change] of changes) {
        if (change === null) out.splice(at % Math.max(out.length, 1), 1);
        else out.splice(at % (out.length + 1), 0, change);
      }
      return out.map(frame).join('');
    });
  const shuffled = fc.array(item, { maxLength: 25 }).map((evs) => evs.map(frame).join(''));
  return fc.oneof({ weight: 3, arbitrary: recorded }, shuffled);
}

/** `{"toString":null}` as JSON.parse makes it: an object `String()` throws on. */
export const NO_TO_STRING = (): unknown => JSON.parse('{"toString":null}');

/**
 * Answers that made translators throw before the fixes of issue 30 (run first, every time):
 * a JSON answer whose `model` is `{"toString":null}`, and a stream event with a tool-call
 * entry that is `null` (chat) or a name / id `String()` throws on.
 */
export function knownBad(wire: ApiName): { json: unknown; stream: string } {
  const json = { ...recordedAnswers(wire)[0]!, model: NO_TO_STRING() };
  const streams: Record<ApiName, Event> = {
    chat: {
      name: null,
      data: {
        id: 'c',
        object: 'chat.completion.chunk',
        choices: [{ index: 0, delta: { tool_calls: [{ index: 0, function: { arguments: '{}' } }, null] }, finish_reason: null }],
      },
    },
    responses: {
      name: 'response.output_item.added',
      data: {
        type: 'response.output_item.added',
        output_index: 0,
        item: { id: 'fc_1', type: 'function_call', arguments: '', call_id: 'call_1', name: NO_TO_STRING() },
      },
    },
    messages: {
      name: 'content_block_start',
      data: { type: 'content_block_start', index: 0, content_block: { type: 'tool_use', id: NO_TO_STRING(), name: 'f', input: {} } },
    },
  };
  return { json, stream: frame(streams[wire]) };
}
