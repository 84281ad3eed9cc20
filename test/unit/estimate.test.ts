/**
 * Token counting with bounded work (issue 14: a 27 MB prompt on a key with `tpm` blocked
 * the event loop for 1.5 s). Exact for short prompts; sampled and scaled for long ones,
 * with the characters handed to the tokenizer capped whatever the prompt's size.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { countTokens } from 'gpt-tokenizer/encoding/o200k_base';
import { boundedCount, countPromptTokens } from '../../src/usage/estimate.js';
import { seededRandom } from '../helpers/random.js';

const WORDS = [
  'function',
  'return',
  'the',
  'gateway',
  'const',
  'value',
  '=>',
  '{',
  '}',
  'await',
  'stream',
  'token',
  'error',
  'retry',
  'upstream',
  '42',
  'x',
  'if',
  'else',
  'ok',
];

/** Pseudo-code text of about `chars` characters, varied so the tokenizer cannot shortcut. */
function text(chars: number, seed = 7): string {
  const rnd = seededRandom(seed);
  const out: string[] = [];
  let n = 0;
  while (n < chars) {
    const w = WORDS[Math.floor(rnd() * WORDS.length)]!;
    out.push(w);
    n += w.length + 1;
  }
  return out.join(rnd() < 0.5 ? ' ' : '\n');
}

describe('boundedCount', () => {
  test('a short prompt is counted exactly', () => {
    const parts = [text(3000, 1), text(5000, 2)];
    const exact = parts.reduce((s, p) => s + countTokens(p), 0) + 1;
    assert.equal(boundedCount(countTokens, parts), exact);
  });

  test('a 27 MB prompt hands the tokenizer at most 32 Ki characters and lands within 10% of the exact count', () => {
    const big = text(27 * 1024 * 1024, 3);
    let handed = 0;
    const spy = (t: string) => {
      handed += t.length;
      return countTokens(t);
    };
    const estimate = boundedCount(spy, ['system prompt', big, 'what does this do?']);
    assert.ok(handed <= 32 * 1024 + 64, `the tokenizer saw ${handed} characters`);
    const sample = big.slice(0, 2 * 1024 * 1024);
    const exactPerChar = countTokens(sample) / sample.length;
    const expected = exactPerChar * big.length;
    assert.ok(Math.abs(estimate - expected) / expected < 0.1, `estimate ${estimate} vs ~${Math.round(expected)}`);
  });

  test('ten thousand long messages still cost a bounded number of characters', () => {
    let handed = 0;
    const spy = (t: string) => {
      handed += t.length;
      return countTokens(t);
    };
    const parts = Array.from({ length: 10_000 }, (_, i) => text(5000, i));
    const estimate = boundedCount(spy, parts);
    assert.ok(handed <= 32 * 1024 + 5000, `the tokenizer saw ${handed} characters`);
    const exactFirst = countTokens(parts[0]!);
    assert.ok(estimate > exactFirst * 10_000 * 0.85 && estimate < exactFirst * 10_000 * 1.15, `estimate ${estimate}`);
  });

  test('countPromptTokens adds chat framing to the message texts', async () => {
    const n = await countPromptTokens({ messages: [{ role: 'user', content: 'hello there' }] });
    assert.equal(n, countTokens('user') + countTokens('hello there') + 1 + 3 + 3);
  });
});
