/**
 * SseFramer (src/sse/parse.ts): incremental SSE framing that keeps each event's raw bytes.
 *
 * Property, on every SSE recording in test/fixtures (`.sse` verbatim, `.chunks.jsonl`
 * re-framed by test/helpers/recording-catalog.ts `sseBody`), each also with multi-byte
 * UTF-8 characters added to its data lines: written with LF, CRLF, CR and seeded mixes of
 * the three line endings, and cut into reads whole, byte by byte, at seeded random points,
 * inside every CRLF pair and inside every multi-byte character, the framer yields the same
 * (data, event) sequence as for the whole input with LF, and the raw bytes of its events
 * plus the end() tail are the input, exactly.
 *
 * Then the grammar, case by case (folded in from the former sse-parse.test.ts).
 */
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { describe, test } from 'node:test';
import { EventTooLarge, MAX_EVENT_BYTES, SseFramer, type SseEvent } from '../../src/sse/parse.js';
import { readSse, sseBody } from '../helpers/recording-catalog.js';
import { FIXTURES, fixture } from '../helpers/recordings.js';
import { seededRandom } from '../helpers/random.js';
import { byteByByte, cutAt, randomPieces } from '../helpers/splits.js';

interface Plain {
  raw: string;
  data: string | null;
  event: string | null;
}

/** Feeds the pieces (each copied, so no piece shares memory with another) and calls end(). */
function frame(pieces: Buffer[]): { events: SseEvent[]; tail: SseEvent | null } {
  const framer = new SseFramer();
  const events: SseEvent[] = [];
  for (const p of pieces) events.push(...framer.push(Buffer.from(p)));
  const tail = framer.end();
  return { events, tail };
}

function all(pieces: Buffer[]): SseEvent[] {
  const { events, tail } = frame(pieces);
  return tail ? [...events, tail] : events;
}

function plain(events: SseEvent[]): Plain[] {
  return events.map((e) => ({ raw: e.raw.toString('latin1'), data: e.data, event: e.event }));
}

const fields = (events: readonly { data: string | null; event: string | null }[]): { data: string | null; event: string | null }[] =>
  events.map((e) => ({ data: e.data, event: e.event }));

// Every SSE recording, whatever its API (the framer knows none).
const RECORDINGS = readdirSync(FIXTURES)
  .filter((f) => f.endsWith('.sse') || f.endsWith('.chunks.jsonl'))
  .sort();

/** Appends multi-byte characters (2, 3 and 4 bytes in UTF-8) to every data line. */
function withMultiByte(lf: string): string {
  return lf.replace(/^data:.*$/gm, (line) => `${line} é€🙂`);
}

type Eol = '\n' | '\r\n' | '\r';

/**
 * `lf` with each line ending replaced: one ending for all, or a seeded mix. A CR followed by
 * an empty line ending in LF would read as one CRLF (one line ending, not two): the mix
 * writes CRLF there instead, so the text still has the same lines.
 */
function withEndings(lf: string, eol: Eol | number): string {
  const r = typeof eol === 'number' ? seededRandom(eol) : null;
  const lines = lf.split('\n');
  const last = lines.pop();
  assert.equal(last, '', 'the recording ends with a line ending');
  let prev: Eol | null = null;
  let out = '';
  for (const line of lines) {
    let e: Eol = r ? (['\n', '\r\n', '\r'] as const)[Math.floor(r() * 3)]! : (eol as Eol);
    if (prev === '\r' && line === '' && e === '\n') e = '\r\n';
    out += line + e;
    prev = e;
  }
  return out;
}

/** Every index just after a CR that an LF follows: a cut there splits a CRLF pair. */
function insideCrlf(b: Buffer): number[] {
  const out: number[] = [];
  for (let i = 1; i < b.length; i++) if (b[i - 1] === 0x0d && b[i] === 0x0a) out.push(i);
  return out;
}

/** Every index of a UTF-8 continuation byte: a cut there splits a multi-byte character. */
function insideChars(b: Buffer): number[] {
  const out: number[] = [];
  for (let i = 0; i < b.length; i++) if ((b[i]! & 0xc0) === 0x80) out.push(i);
  return out;
}

const RANDOM_SEEDS = [1, 2, 3, 4, 5, 6, 7, 8, 42, 0xc0ffee, 0xdecade, 20_250_101];
const MIX_SEEDS = [11, 12, 13];

describe('SseFramer on every recording: any line endings, any reads', () => {
  test('there are recordings to test, CRLF captures and jsonl ones among them', () => {
    assert.ok(RECORDINGS.length >= 15, RECORDINGS.join(', '));
    assert.ok(
      RECORDINGS.some((f) => fixture(f).includes('\r\n')),
      'a CRLF capture',
    );
    assert.ok(RECORDINGS.some((f) => f.endsWith('.chunks.jsonl')));
  });

  for (const name of RECORDINGS) {
    for (const multiByte of [false, true]) {
      const original = sseBody(name).toString('utf8');
      const lf = multiByte ? withMultiByte(original.replace(/\r\n?/g, '\n')) : original.replace(/\r\n?/g, '\n');
      test(`${name}${multiByte ? ' with multi-byte characters added' : ''}: LF, CRLF, CR and mixed endings, cut anywhere, give the events of the whole LF input and keep every byte`, () => {
        const ref = all([Buffer.from(lf, 'utf8')]);
        // The reference itself, against an independent reading of the LF text.
        assert.deepEqual(fields(ref), fields(readSse(lf)));
        assert.ok(ref.length > 1);
        if (multiByte) assert.ok(insideChars(Buffer.from(lf)).length > ref.length, 'multi-byte characters to cut inside');
        const want = fields(ref);

        const variants: [string, Buffer][] = [
          ['LF', Buffer.from(lf, 'utf8')],
          ['CRLF', Buffer.from(withEndings(lf, '\r\n'), 'utf8')],
          ['CR', Buffer.from(withEndings(lf, '\r'), 'utf8')],
          ...MIX_SEEDS.map((s): [string, Buffer] => [`mix ${s}`, Buffer.from(withEndings(lf, s), 'utf8')]),
        ];
        for (const [eol, input] of variants) {
          const reads: [string, Buffer[]][] = [
            ['whole', [input]],
            ['byte by byte', byteByByte(input)],
            ['inside every CRLF', cutAt(input, insideCrlf(input))],
            ['inside every multi-byte character', cutAt(input, insideChars(input))],
            ...RANDOM_SEEDS.map((s): [string, Buffer[]] => [`random ${s}`, randomPieces(input, s)]),
          ];
          if (eol === 'CRLF') assert.ok(insideCrlf(input).length > ref.length, 'CRLF pairs to cut inside');
          for (const [how, pieces] of reads) {
            const { events, tail } = frame(pieces);
            const got = tail ? [...events, tail] : events;
            assert.deepEqual(fields(got), want, `${eol}, ${how}: events`);
            assert.ok(Buffer.concat(got.map((e) => e.raw)).equals(input), `${eol}, ${how}: raw bytes are the input`);
          }
        }
      });
    }
  }
});

describe('SseFramer grammar', () => {
  const text = (s: string, split: 'whole' | 'bytes' = 'whole'): Plain[] => {
    const b = Buffer.from(s, 'utf8');
    return plain(all(split === 'whole' ? [b] : byteByByte(b)));
  };

  test('LF, CRLF and lone CR line endings', () => {
    for (const split of ['whole', 'bytes'] as const) {
      assert.deepEqual(text('data: a\n\ndata: b\n\n', split), [
        { raw: 'data: a\n\n', data: 'a', event: null },
        { raw: 'data: b\n\n', data: 'b', event: null },
      ]);
      assert.deepEqual(text('data: a\r\n\r\ndata: b\r\n\r\n', split), [
        { raw: 'data: a\r\n\r\n', data: 'a', event: null },
        { raw: 'data: b\r\n\r\n', data: 'b', event: null },
      ]);
      assert.deepEqual(text('data: a\r\rdata: b\r\r', split), [
        { raw: 'data: a\r\r', data: 'a', event: null },
        { raw: 'data: b\r\r', data: 'b', event: null },
      ]);
      // Mixed endings in one stream.
      assert.deepEqual(text('data: a\r\ndata: b\rdata: c\n\r\n', split), [{ raw: 'data: a\r\ndata: b\rdata: c\n\r\n', data: 'a\nb\nc', event: null }]);
    }
  });

  test('data: with and without the space; only one space is removed', () => {
    assert.deepEqual(
      text('data:{"x":1}\n\ndata: {"x":1}\n\ndata:  two\n\n').map((e) => e.data),
      ['{"x":1}', '{"x":1}', ' two'],
    );
    assert.deepEqual(
      text('data:[DONE]\n\n').map((e) => e.data),
      ['[DONE]'],
    );
  });

  test('a data line without a colon counts as empty data', () => {
    assert.deepEqual(
      text('data\n\n').map((e) => e.data),
      [''],
    );
  });

  test('multi-line data is joined with \\n', () => {
    assert.deepEqual(text('data: a\ndata: b\ndata:\ndata: c\n\n'), [{ raw: 'data: a\ndata: b\ndata:\ndata: c\n\n', data: 'a\nb\n\nc', event: null }]);
    assert.deepEqual(
      text('data: {\r\ndata: "k": 1\r\ndata: }\r\n\r\n', 'bytes').map((e) => e.data),
      ['{\n"k": 1\n}'],
    );
  });

  test('comment lines give data-null events whose raw bytes are kept', () => {
    const s = ': keep-alive\n\ndata: a\n\n: keep-alive\r\n\r\n:\n\ndata: b\n\n';
    for (const split of ['whole', 'bytes'] as const) {
      assert.deepEqual(text(s, split), [
        { raw: ': keep-alive\n\n', data: null, event: null },
        { raw: 'data: a\n\n', data: 'a', event: null },
        { raw: ': keep-alive\r\n\r\n', data: null, event: null },
        { raw: ':\n\n', data: null, event: null },
        { raw: 'data: b\n\n', data: 'b', event: null },
      ]);
    }
    // A comment inside an event is skipped for data but kept in raw.
    assert.deepEqual(text('data: a\n: note: data: x\ndata: b\n\n'), [{ raw: 'data: a\n: note: data: x\ndata: b\n\n', data: 'a\nb', event: null }]);
  });

  test('event: field, other fields ignored, fields reset between events', () => {
    assert.deepEqual(text('event: error\ndata: {"error":{"message":"boom"}}\n\nid: 7\nretry: 100\ndata: next\n\nevent:ping\n\n'), [
      { raw: 'event: error\ndata: {"error":{"message":"boom"}}\n\n', data: '{"error":{"message":"boom"}}', event: 'error' },
      { raw: 'id: 7\nretry: 100\ndata: next\n\n', data: 'next', event: null },
      { raw: 'event:ping\n\n', data: null, event: 'ping' },
    ]);
  });

  test('a stray blank line becomes its own data-null event', () => {
    assert.deepEqual(text('data: a\n\n\ndata: b\n\n'), [
      { raw: 'data: a\n\n', data: 'a', event: null },
      { raw: '\n', data: null, event: null },
      { raw: 'data: b\n\n', data: 'b', event: null },
    ]);
  });

  test('multi-byte UTF-8 characters split across pushes at every position decode correctly', () => {
    const value = '价格 5 €, ok 🙂 — 深度求索';
    const s = `data: {"content":"${value}"}\n\n`;
    const bytes = Buffer.from(s, 'utf8');
    assert.ok(bytes.length > s.length, 'the sample really has multi-byte characters');
    for (let k = 0; k <= bytes.length; k++) {
      const got = all([bytes.subarray(0, k), bytes.subarray(k)]);
      assert.equal(got.length, 1, `split at ${k}`);
      assert.equal(got[0]!.data, `{"content":"${value}"}`, `split at ${k}`);
      assert.ok(got[0]!.raw.equals(bytes), `raw at split ${k}`);
    }
    // Three-way splits inside '€' (3 bytes) and '🙂' (4 bytes).
    for (const ch of ['€', '🙂', '价']) {
      const at = bytes.indexOf(Buffer.from(ch, 'utf8'));
      assert.ok(at > 0);
      const got = all([bytes.subarray(0, at + 1), bytes.subarray(at + 1, at + 2), bytes.subarray(at + 2)]);
      assert.equal(got[0]!.data, `{"content":"${value}"}`, `three-way split inside ${ch}`);
    }
    const one = all(byteByByte(bytes));
    assert.equal(one[0]!.data, `{"content":"${value}"}`);
  });

  test('the 😊 in the DeepSeek recording decodes when split in any position', () => {
    const input = fixture('deepseek-reasoner-stream.sse');
    const emoji = Buffer.from('😊', 'utf8');
    const at = input.indexOf(emoji);
    assert.ok(at > 0, 'the recording contains 😊');
    const want = frame([input]).events.map((e) => e.data);
    const withEmoji = want.findIndex((d) => d !== null && d.includes('😊'));
    assert.ok(withEmoji >= 0);
    for (let k = 1; k < emoji.length; k++) {
      const got = all([input.subarray(0, at + k), input.subarray(at + k)]);
      assert.deepEqual(
        got.map((e) => e.data),
        want,
        `split ${k} bytes into 😊`,
      );
      assert.ok(!got[withEmoji]!.data!.includes('\ufffd'));
    }
  });

  test('a CR at the end of one push and LF at the start of the next is one CRLF', () => {
    const f = new SseFramer();
    assert.deepEqual(f.push(Buffer.from('data: a\r')), []);
    // If the CR had ended the line on its own, this LF would be a blank line and end the event early.
    const got = f.push(Buffer.from('\ndata: b\r'));
    assert.deepEqual(got, []);
    const done = f.push(Buffer.from('\n\r'));
    assert.deepEqual(done, [], 'the blank line CR may still be half of a CRLF');
    const last = f.push(Buffer.from('\n'));
    assert.deepEqual(plain(last), [{ raw: 'data: a\r\ndata: b\r\n\r\n', data: 'a\nb', event: null }]);
    assert.equal(f.end(), null);
  });

  test('a CR at the end of a push followed by something else is a lone CR', () => {
    const f = new SseFramer();
    assert.deepEqual(f.push(Buffer.from('data: a\r')), []);
    assert.deepEqual(plain(f.push(Buffer.from('\rdata: b\r'))), [{ raw: 'data: a\r\r', data: 'a', event: null }]);
    assert.deepEqual(plain(f.push(Buffer.from('\r'))), []);
    assert.deepEqual(plain([f.end()!]), [{ raw: 'data: b\r\r', data: 'b', event: null }]);
  });

  test('end() flushes an unterminated final event', () => {
    const f = new SseFramer();
    assert.deepEqual(plain(f.push(Buffer.from('data: a\n\ndata: b'))), [{ raw: 'data: a\n\n', data: 'a', event: null }]);
    assert.deepEqual(plain([f.end()!]), [{ raw: 'data: b', data: 'b', event: null }]);
    assert.equal(f.end(), null, 'nothing left after the flush');

    const g = new SseFramer();
    assert.deepEqual(g.push(Buffer.from('event: x\ndata: {"a":1}\n')), []);
    assert.deepEqual(plain([g.end()!]), [{ raw: 'event: x\ndata: {"a":1}\n', data: '{"a":1}', event: 'x' }]);

    const h = new SseFramer();
    h.push(Buffer.from(': ping'));
    assert.deepEqual(plain([h.end()!]), [{ raw: ': ping', data: null, event: null }]);

    // Bytes of '🙂' split over two pushes and never terminated.
    const u = new SseFramer();
    const b = Buffer.from('data: 🙂');
    assert.deepEqual(u.push(b.subarray(0, 8)), []);
    assert.deepEqual(u.push(b.subarray(8)), []);
    assert.deepEqual(plain([u.end()!]), [{ raw: b.toString('latin1'), data: '🙂', event: null }]);

    assert.equal(new SseFramer().end(), null, 'empty stream');
  });

  test('end() after a final line ending in a lone CR does not keep the CR in data', () => {
    const f = new SseFramer();
    assert.deepEqual(plain(f.push(Buffer.from('data: a\r\rdata: b\r'))), [{ raw: 'data: a\r\r', data: 'a', event: null }]);
    const tail = f.end();
    assert.ok(tail);
    assert.equal(tail.data, 'b', `got ${JSON.stringify(tail.data)}`);
    assert.equal(tail.raw.toString('latin1'), 'data: b\r');
  });
});

describe('SseFramer: an event past the size limit', () => {
  test('an endless data line (read by read, no line end) throws EventTooLarge once past the limit, not at the end', () => {
    const f = new SseFramer(1_000);
    f.push(Buffer.from('data: '));
    assert.throws(() => {
      for (let i = 0; i < 100; i++) f.push(Buffer.from('x'.repeat(100)));
    }, EventTooLarge);
  });

  test('many data lines of one event count together; events under the limit pass, one after another', () => {
    const ok = new SseFramer(1_000);
    for (let i = 0; i < 20; i++) assert.equal(ok.push(Buffer.from(`data: ${'y'.repeat(500)}\n\n`)).length, 1);
    const big = new SseFramer(1_000);
    assert.throws(() => big.push(Buffer.from(`data: ${'z'.repeat(400)}\n`.repeat(5))), EventTooLarge);
  });

  test('an event past the limit that came whole in one read: the events before it are returned, the next push or end throws', () => {
    const f = new SseFramer(1_000);
    const got = f.push(Buffer.from(`data: a\n\ndata: ${'z'.repeat(1_200)}\n\ndata: b\n\n`));
    assert.deepEqual(
      got.map((e) => e.data),
      ['a'],
    );
    assert.throws(() => f.push(Buffer.from('data: c\n\n')), EventTooLarge);
    const g = new SseFramer(1_000);
    g.push(Buffer.from(`data: ${'z'.repeat(1_200)}\n\n`));
    assert.throws(() => g.end(), EventTooLarge);
  });

  test('the default limit is 32 MiB', () => {
    assert.equal(MAX_EVENT_BYTES, 32 * 1024 * 1024);
  });
});
