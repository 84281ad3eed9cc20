/**
 * server/http/json-pieces.ts: a big body parsed piece by piece gives exactly what JSON.parse
 * gives for the whole text, refuses exactly what it refuses, and lets the event loop turn.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { parseJsonInPieces } from '../../src/server/http/json-pieces.js';

/** JSON.parse's verdict on `text`: the value, or 'throws'. */
const whole = (text: string): unknown => {
  try {
    return { ok: JSON.parse(text) as unknown };
  } catch {
    return 'throws';
  }
};
const pieces = async (text: string): Promise<unknown> => {
  try {
    return { ok: await parseJsonInPieces(text) };
  } catch (err) {
    assert.ok(err instanceof SyntaxError, `a SyntaxError, not ${String(err)}`);
    return 'throws';
  }
};

/** A request-like body: top-level keys holding arrays and other values, with odd spacing and keys. */
const body = fc.dictionary(
  fc.oneof(fc.string(), fc.constantFrom('__proto__', 'constructor', 'messages', 'a\\"b', 'é✓')),
  fc.oneof(fc.array(fc.jsonValue({ maxDepth: 3 })), fc.jsonValue({ maxDepth: 3 })),
  { maxKeys: 6 },
);
const spaced = (v: unknown, indent: number): string => JSON.stringify(v, null, indent);

describe('parseJsonInPieces', () => {
  test('any body, any spacing: the same value and key order as JSON.parse', async () => {
    await fc.assert(
      fc.asyncProperty(body, fc.constantFrom(0, 1, 2, '\t' as unknown as number), async (v, indent) => {
        const text = spaced(v, indent);
        assert.deepStrictEqual(await pieces(text), whole(text));
        const parsed = (await parseJsonInPieces(text)) as Record<string, unknown>;
        assert.deepStrictEqual(Object.keys(parsed), Object.keys(JSON.parse(text) as object));
      }),
      { numRuns: 400 },
    );
  });

  test('a valid text cut, widened or with one character changed: refused exactly when JSON.parse refuses it, the same value otherwise', async () => {
    const noise = fc.constantFrom('', ',', ']', '}', '[', '{', '"', '\\', ':', ' ', '1', 'x', 'null', '\u0001', '\n');
    await fc.assert(
      fc.asyncProperty(body, fc.nat(), noise, fc.boolean(), async (v, at, insert, drop) => {
        const text = spaced(v, 0);
        const pos = text.length === 0 ? 0 : at % text.length;
        const mutated = text.slice(0, pos) + insert + text.slice(pos + (drop ? 1 : 0));
        assert.deepStrictEqual(await pieces(mutated), whole(mutated), mutated);
      }),
      { numRuns: 1500 },
    );
  });

  test('edge texts agree with JSON.parse', async () => {
    const texts = [
      '',
      ' ',
      '{}',
      ' { } ',
      '{"a":[]}',
      '{"a":[ ]}',
      '{"a":[1,]}',
      '{"a":[,1]}',
      '{"a":1,}',
      '{,"a":1}',
      '{"a" 1}',
      '{"a":1 "b":2}',
      '{"a":1}}',
      '{"a":1} x',
      '[1,2]',
      '"s"',
      '3',
      '{"a":"\\\\"}',
      '{"a":"\\\\\\""}',
      '{"a":"x\\"]}"}',
      '{"a":[{"b":"]"},"}"]}',
      '{"a":tru}',
      '{"a":-}',
      '{"a":1e}',
      '{"a":[1 2]}',
      '{"a":{"b":1}',
      '{"a":"unterminated}',
      '{"a":1,"a":2,"b":3}',
      '\uFEFF{}',
    ];
    for (const text of texts) assert.deepStrictEqual(await pieces(text), whole(text), text);
  });

  test('a big history parses over several turns of the event loop', async () => {
    const messages = Array.from({ length: 3000 }, (_v, i) => ({
      role: i % 2 ? 'assistant' : 'user',
      content: `turn ${i} ${'lorem ipsum dolor "sit" amet \\ é✓ '.repeat(200)}`,
    }));
    const text = JSON.stringify({ model: 'm', messages, stream: true });
    let ticks = 0;
    const timer = setInterval(() => ticks++, 0);
    const out = await parseJsonInPieces(text);
    clearInterval(timer);
    assert.deepStrictEqual(out, JSON.parse(text));
    assert.ok(ticks > 0, 'the event loop had turns while the body was parsed');
  });

  test('each piece is handed to onPiece: every top-level array element and every other top-level value', async () => {
    const seen: unknown[] = [];
    await parseJsonInPieces('{"a":[1,{"b":2}],"c":{"d":3},"e":"s"}', (p) => seen.push(p));
    assert.deepStrictEqual(seen, [1, { b: 2 }, { d: 3 }, 's']);
  });
});
