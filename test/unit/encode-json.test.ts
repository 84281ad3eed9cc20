/**
 * upstream/encode-json.ts: a big request body is written in pieces over several turns of the
 * event loop, and the bytes are exactly JSON.stringify's, whatever the body holds.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { BIG_JSON_BYTES, encodeJson, encodeJsonPieces, longerThan } from '../../src/upstream/encode-json.js';

const text = (v: string | Buffer): string => (typeof v === 'string' ? v : v.toString('utf8'));

describe('encodeJson', () => {
  test('a small body is one JSON.stringify string', async () => {
    const body = { model: 'm', messages: [{ role: 'user', content: 'hi' }] };
    assert.equal(await encodeJson(body), JSON.stringify(body));
  });

  test('a body over the threshold comes back as bytes equal to JSON.stringify, and other callbacks ran meanwhile', async () => {
    const messages = Array.from({ length: 400 }, (_v, i) => ({ role: i % 2 ? 'assistant' : 'user', content: `m${i} ${'é✓ lorem ipsum '.repeat(400)}` }));
    const body = { model: 'm', stream: true, messages, tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'object' } } }] };
    assert.ok(longerThan(body, BIG_JSON_BYTES));
    let ticks = 0;
    const timer = setInterval(() => ticks++, 0);
    const out = await encodeJson(body);
    clearInterval(timer);
    assert.ok(Buffer.isBuffer(out));
    assert.equal(text(out), JSON.stringify(body));
    assert.ok(ticks > 0, 'the event loop had turns while the body was written');
  });

  test('pieces: any JSON value, with undefined members, undefined and function array elements, toJSON and null-prototype objects, is written as JSON.stringify writes it', async () => {
    const odd = {
      a: undefined,
      b: [undefined, () => 1, Symbol('s'), 1],
      c: new Date(0),
      d: Object.assign(Object.create(null) as object, { z: 1 }),
      e: { toJSON: () => 'J' },
      f: () => 2,
      g: { toJSON: () => undefined },
      h: [{ toJSON: () => undefined }],
    };
    assert.equal(text(await encodeJsonPieces(odd)), JSON.stringify(odd));
    await fc.assert(
      fc.asyncProperty(fc.jsonValue(), async (v) => {
        assert.equal(text(await encodeJsonPieces(v)), JSON.stringify(v));
      }),
      { numRuns: 300 },
    );
  });

  test('longerThan walks a body nested 100,000 deep without recursing', () => {
    let deep: unknown = 'x';
    for (let i = 0; i < 100_000; i++) deep = [deep];
    assert.equal(longerThan(deep, 10), false);
    assert.equal(longerThan({ k: 'y'.repeat(11) }, 10), true);
  });

  test('a body JSON.stringify cannot write (nested too deep) rejects with its RangeError', async () => {
    let deep: unknown = 'x'.repeat(BIG_JSON_BYTES + 1);
    for (let i = 0; i < 20_000; i++) deep = { c: deep };
    await assert.rejects(async () => encodeJson({ messages: [deep] }), RangeError);
  });
});
