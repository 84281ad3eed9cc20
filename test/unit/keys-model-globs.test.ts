/**
 * Which models a key may use: the model globs of its `models` list (globMatch, mayUse).
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { mayUse } from '../../src/auth/keys.js';
import { globMatch } from '../../src/util/glob.js';

describe('keys: model globs', () => {
  test('exact names, prefix, suffix and middle globs, and `*`', () => {
    const cases: [string, string, boolean][] = [
      ['gpt-test', 'gpt-test', true],
      ['gpt-test', 'gpt-test2', false],
      ['gpt-*', 'gpt-5.5-codex', true],
      ['gpt-*', 'gpt-', true],
      ['gpt-*', 'deepseek-v3.2', false],
      ['*-reasoner', 'deepseek-reasoner', true],
      ['*-reasoner', 'deepseek-reasoner-2', false],
      ['*', 'anything/with.dots', true],
      ['a*b*c', 'axxbyyc', true],
      ['a*b*c', 'acb', false],
      ['ab*ba', 'aba', false],
      ['g?t', 'gpt', false],
    ];
    for (const [p, n, want] of cases) assert.equal(globMatch(p, n), want, `${p} ~ ${n}`);
    assert.equal(mayUse({ name: 't', models: ['gpt-*', 'deepseek-reasoner'] }, 'deepseek-reasoner'), true);
    assert.equal(mayUse({ name: 't', models: ['gpt-*'] }, 'deepseek-reasoner'), false);
  });
});
