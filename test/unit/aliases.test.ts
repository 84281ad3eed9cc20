/**
 * Model aliases (config/aliases.ts): the names an agent hard-codes reach a configured model.
 * A model's own name wins, then an exact alias, then the first matching glob in config order;
 * an alias that is a model's name, or the exact alias of two models, is a config error.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { modelNamed } from '../../src/config/aliases.js';
import { ConfigError } from '../../src/config/load.js';
import { parseTestConfig } from '../helpers/config.js';

function config(models: string): string {
  return `
upstreams:
  - { id: sim, provider: simulator }
models:
${models}
keys:
  - { name: t, key_sha256: "0000000000000000000000000000000000000000000000000000000000000000" }
`;
}

const TWO = config(`
  - { name: claude-sonnet-4.6, aliases: ["claude-sonnet-4-6", "claude-sonnet-4-6-*", "claude-*"], price: { input: 1, output: 1 }, targets: [{ upstream: sim, model: m1 }] }
  - { name: claude-haiku-4.5, aliases: ["claude-haiku-*"], price: { input: 1, output: 1 }, targets: [{ upstream: sim, model: m2 }] }
  - { name: gpt-5.5-codex, aliases: ["gpt-5*-codex*"], price: { input: 1, output: 1 }, targets: [{ upstream: sim, model: m3 }] }
`);

describe('model aliases', () => {
  const cfg = parseTestConfig(TWO, {}, 'aliases.yaml');
  const named = (n: string) => modelNamed(cfg, n)?.name;

  test('a model by its own name, an exact alias, a glob', () => {
    assert.equal(named('claude-sonnet-4.6'), 'claude-sonnet-4.6');
    assert.equal(named('claude-sonnet-4-6'), 'claude-sonnet-4.6');
    assert.equal(named('claude-sonnet-4-6-20260101'), 'claude-sonnet-4.6');
    assert.equal(named('gpt-5.5-codex-latest'), 'gpt-5.5-codex');
    assert.equal(named('gpt-5-codex'), 'gpt-5.5-codex');
  });

  test('the first glob in config order wins: claude-* (first model) matches before claude-haiku-*', () => {
    assert.equal(named('claude-haiku-4-5-20251001'), 'claude-sonnet-4.6');
  });

  test('a name no model or alias matches is none; globs are anchored and * is the only wildcard', () => {
    assert.equal(named('gpt-4o'), undefined);
    assert.equal(named('my-claude-sonnet'), undefined);
    assert.equal(named('gpt-5.5Xcodex'), undefined, 'a dot in an alias is a dot');
  });

  test('an alias that is a model name, or the exact alias of two models, is refused at load', () => {
    const clash = config(`
  - { name: a, aliases: ["b"], price: { input: 1, output: 1 }, targets: [{ upstream: sim, model: m }] }
  - { name: b, price: { input: 1, output: 1 }, targets: [{ upstream: sim, model: m }] }
  - { name: c, aliases: ["x"], price: { input: 1, output: 1 }, targets: [{ upstream: sim, model: m }] }
  - { name: d, aliases: ["x"], price: { input: 1, output: 1 }, targets: [{ upstream: sim, model: m }] }
`);
    assert.throws(
      () => parseTestConfig(clash, {}, 'clash.yaml'),
      (e: unknown) => e instanceof ConfigError && /\/models\/0\/aliases\/0: "b" is the name of a model/.test(e.message) && /\/models\/3\/aliases\/0: "x" is already an alias of model "c"/.test(e.message),
    );
  });
});
