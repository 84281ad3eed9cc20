/**
 * SseFramer: incremental SSE framing that keeps each event's raw bytes. Every split of the
 * input (one piece, byte by byte, random pieces) must give the same events, whose raw bytes
 * concatenate back to the input exactly.
 */
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { describe, test } from 'node:test';
import { SseFramer, type SseEvent } from '../../src/sse/parse.js';
import { FIXTURES, fixture } from '../helpers/recordings.js';
import { seededRandom } from '../helpers/random.js';

interface Plain {
  raw: string;
  data: string | null;
  event: string | null;
}

function splitAt(input: Buffer, sizes: () => number): Buffer[] {
  const out: Buffer[] = [];
  for (let i = 0; i < input.length; ) {
    const n = Math.max(1, sizes());
    out.push(input.subarray(i, i + n));
    i += n;
  }
  return out;
}

function onePiece(input: Buffer): Buffer[] {
  return [input];
}

function byteByByte(input: Buffer): Buffer[] {
  return splitAt(input, () => 1);
}

function randomSplits(input: Buffer, seed: number): Buffer[] {
  const r = seededRandom(seed);
  // Mostly small pieces, sometimes large ones.
  return splitAt(input, () => (r() < 0.1 ? 1 + Math.floor(r() * 2000) : 1 + Math.floor(r() * 40)));
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

/**
 * An independent reading of an LF-only recording: blocks split on blank lines, `data:`
 * lines (one optional space) joined with \n, comment-only blocks give null.
 */
function expectedData(text: string): (string | null)[] {
  const blocks = text.split(/(?<=\n\n)/).filter((b) => b !== '');
  return blocks.map((b) => {
    const data = b
      .split('\n')
      .filter((l) => l.startsWith('data:'))
      .map((l) => l.slice(5).replace(/^ /, ''));
    return data.length > 0 ? data.join('\n') : null;
  });
}

const RECORDINGS = readdirSync(FIXTURES)
  // OpenAI-dialect streams (they end in [DONE]); the Anthropic and Responses ones have their own tests.
  .filter((f) => f.endsWith('.sse') && !f.startsWith('anthropic-') && !f.startsWith('openai-responses-'))
  .sort();

describe('SseFramer on recorded streams', () => {
  test('there are recordings to test', () => {
    assert.ok(RECORDINGS.length >= 5, `found ${RECORDINGS.join(', ')}`);
    assert.ok(RECORDINGS.includes('deepseek-reasoner-stream.sse'));
  });

  for (const name of RECORDINGS) {
    test(`${name}: one piece, byte by byte and random splits give identical events`, () => {
      const input = fixture(name);
      const want = expectedData(input.toString('utf8'));
      assert.ok(want.length > 1);

      const whole = frame(onePiece(input));
      assert.equal(whole.tail, null, 'a complete recording leaves nothing for end()');
      assert.deepEqual(
        whole.events.map((e) => e.data),
        want,
      );
      assert.ok(Buffer.concat(whole.events.map((e) => e.raw)).equals(input), 'raw bytes concatenate to the input');
      assert.equal(whole.events.at(-1)!.data, '[DONE]');

      const ref = plain(whole.events);
      const splits: [string, Buffer[]][] = [
        ['byte by byte', byteByByte(input)],
        ['random seed 1', randomSplits(input, 1)],
        ['random seed 42', randomSplits(input, 42)],
        ['random seed 0xC0FFEE', randomSplits(input, 0xc0ffee)],
      ];
      for (const [how, pieces] of splits) {
        const got = all(pieces);
        assert.ok(Buffer.concat(got.map((e) => e.raw)).equals(input), `${how}: raw bytes concatenate to the input`);
        assert.deepEqual(plain(got), ref, `${how}: same events as in one piece`);
      }
    });

    test(`${name}: CRLF and lone-CR versions give the same data, raw bytes kept`, () => {
      const lf = fixture(name).toString('utf8');
      const want = expectedData(lf);
      for (const [label, eol] of [
        ['CRLF', '\r\n'],
        ['CR', '\r'],
      ] as const) {
        const input = Buffer.from(lf.replace(/\n/g, eol), 'utf8');
        for (const [how, pieces] of [
          ['one piece', onePiece(input)],
          ['byte by byte', byteByByte(input)],
          ['random', randomSplits(input, 7)],
        ] as const) {
          const got = all(pieces);
          assert.deepEqual(
            got.map((e) => e.data),
            want,
            `${label} ${how}: data`,
          );
          assert.ok(Buffer.concat(got.map((e) => e.raw)).equals(input), `${label} ${how}: raw bytes`);
          for (const e of got) assert.ok(e.raw.toString('latin1').endsWith(eol + eol), `${label} ${how}: each event ends with a blank line`);
        }
      }
    });
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
