/**
 * isJsonObjectText (translate/json-check.ts) says exactly what JSON.parse says: for every
 * data frame of every recording, for random mutations of them (characters deleted,
 * inserted, replaced with JSON's structural characters, escapes, control characters),
 * for random JSON values, and for the grammar's corners (numbers, escapes, literals,
 * nesting, whitespace, trailing text).
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { isJsonObjectText, MAX_JSON_DEPTH } from '../../src/translate/json-check.js';
import { seededRandom } from '../helpers/random.js';
import { readSse, sseBody, STREAM_RECORDINGS } from '../helpers/recording-catalog.js';

/** The reference: one JSON object, as JSON.parse reads it. */
function reference(s: string): boolean {
  try {
    const v: unknown = JSON.parse(s);
    return typeof v === 'object' && v !== null && !Array.isArray(v);
  } catch {
    return false;
  }
}

const frames: string[] = Object.values(STREAM_RECORDINGS)
  .flat()
  .flatMap((name) => readSse(sseBody(name).toString('utf8')).map((e) => e.data))
  .filter((d): d is string => typeof d === 'string' && d !== '[DONE]');

const ALPHABET = [
  '{',
  '}',
  '[',
  ']',
  '"',
  ':',
  ',',
  '\\',
  ' ',
  '\n',
  '\t',
  '0',
  '1',
  '-',
  '+',
  '.',
  'e',
  'E',
  't',
  'n',
  'f',
  'u',
  'a',
  '\u0001',
  '\u001f',
  'é',
  '😀',
  '\\u00e9',
  '\\x',
  '\\"',
];

function mutate(s: string, r: () => number): string {
  let out = s;
  const edits = 1 + Math.floor(r() * 3);
  for (let k = 0; k < edits; k++) {
    const at = Math.floor(r() * (out.length + 1));
    const piece = ALPHABET[Math.floor(r() * ALPHABET.length)]!;
    const op = r();
    out =
      op < 0.34 ? out.slice(0, at) + out.slice(at + 1) : op < 0.67 ? out.slice(0, at) + piece + out.slice(at) : out.slice(0, at) + piece + out.slice(at + 1);
  }
  return out;
}

function randomValue(r: () => number, depth: number): unknown {
  const kind = depth > 4 ? Math.floor(r() * 4) : Math.floor(r() * 6);
  switch (kind) {
    case 0:
      return Math.floor(r() * 3) === 0 ? null : r() < 0.5;
    case 1:
      return [0, -0, 1.5, -2e-7, 123456789012, 1e300, 3.14e10][Math.floor(r() * 7)];
    case 2:
      return ['', 'a', 'é', '"quoted"', 'back\\slash', 'line\nbreak', '\u0000', '😀', '\u2028'][Math.floor(r() * 9)];
    case 3:
      return 'text';
    case 4:
      return Array.from({ length: Math.floor(r() * 4) }, () => randomValue(r, depth + 1));
    default: {
      const o: Record<string, unknown> = {};
      for (let i = Math.floor(r() * 4); i > 0; i--) o[`k${Math.floor(r() * 10)}`] = randomValue(r, depth + 1);
      return o;
    }
  }
}

describe('isJsonObjectText agrees with JSON.parse', () => {
  test('on every data frame of every recording', () => {
    assert.ok(frames.length > 100, `${frames.length} frames`);
    for (const f of frames) assert.equal(isJsonObjectText(f), reference(f), f.slice(0, 120));
  });

  test('on 200,000 random mutations of those frames', () => {
    const r = seededRandom(20261201);
    let valid = 0;
    for (let i = 0; i < 200_000; i++) {
      const s = mutate(frames[Math.floor(r() * frames.length)]!, r);
      const want = reference(s);
      if (want) valid++;
      if (isJsonObjectText(s) !== want) assert.fail(`disagrees on ${JSON.stringify(s)} (JSON.parse: ${want})`);
    }
    assert.ok(valid > 10_000 && valid < 190_000, `both outcomes are exercised (${valid} valid)`);
  });

  test('on random JSON values, compact and pretty-printed', () => {
    const r = seededRandom(7);
    for (let i = 0; i < 20_000; i++) {
      const v = randomValue(r, 0);
      for (const s of [JSON.stringify(v), JSON.stringify(v, null, 2), ` \r\n${JSON.stringify(v)}\t`]) assert.equal(isJsonObjectText(s), reference(s), s);
    }
  });

  test('on the grammar corners', () => {
    const cases = [
      '{}',
      ' {} ',
      '{"a":1}',
      '{"a":1,}',
      '{,"a":1}',
      '{"a" 1}',
      '{"a":}',
      '{a:1}',
      "{'a':1}",
      '{"a":1}}',
      '{"a":1} x',
      '{"a":1}{}',
      '{"a":01}',
      '{"a":-0}',
      '{"a":-}',
      '{"a":1.}',
      '{"a":.5}',
      '{"a":1e}',
      '{"a":1e+}',
      '{"a":1E-5}',
      '{"a":+1}',
      '{"a":0x1}',
      '{"a":Infinity}',
      '{"a":NaN}',
      '{"a":true}',
      '{"a":tru}',
      '{"a":truex}',
      '{"a":nul}',
      '{"a":null}',
      '{"a":false}',
      '{"a":False}',
      '{"a":"\\u00e9"}',
      '{"a":"\\u00g9"}',
      '{"a":"\\u00e"}',
      '{"a":"\\/"}',
      '{"a":"\\x"}',
      '{"a":"\t"}',
      '{"a":"\\t"}',
      '{"a":"unterminated}',
      '{"a":"\\"}',
      '{"a":[]}',
      '{"a":[,]}',
      '{"a":[1,]}',
      '{"a":[1 2]}',
      '{"a":[[[]]]}',
      '{"a":{"b":{}}}',
      '{"a":{"b":}}',
      '[]',
      '"s"',
      '1',
      'null',
      '',
      ' ',
      '{',
      '}',
    ];
    for (const s of cases) assert.equal(isJsonObjectText(s), reference(s), s);
  });

  test('nesting up to the depth limit, and not beyond', () => {
    const nest = (d: number) => '{"a":'.repeat(d - 1) + '{}' + '}'.repeat(d - 1);
    assert.equal(isJsonObjectText(nest(MAX_JSON_DEPTH)), true);
    assert.equal(isJsonObjectText(nest(MAX_JSON_DEPTH + 1)), false);
  });
});
