/**
 * Model aliases (config/aliases.ts): the names an agent hard-codes reach a configured model.
 * A model's own name wins, then an exact alias, then the first matching glob in config order;
 * an alias that is a model's name, or the exact alias of two models, is a config error.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { modelNamed } from '../../src/config/aliases.js';
import { ConfigError } from '../../src/config/load.js';
import { parseTestConfig } from '../helpers/config.js';

/** The shipped default config, from the compiled `.test-build/test/unit`. */
const DEFAULT_CONFIG = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..', 'config', 'switchyard.yaml');

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
      (e: unknown) =>
        e instanceof ConfigError &&
        /\/models\/0\/aliases\/0: "b" is the name of a model/.test(e.message) &&
        /\/models\/3\/aliases\/0: "x" is already an alias of model "c"/.test(e.message),
    );
  });
});

/**
 * The best of `trials` timings (ms) of resolving each name once: the least disturbed by GC or
 * by other processes on the machine.
 */
function bestMs(resolve: (n: string) => unknown, names: readonly string[], trials = 5): number {
  let best = Infinity;
  for (let t = 0; t < trials; t++) {
    const start = performance.now();
    for (const n of names) resolve(n);
    best = Math.min(best, performance.now() - start);
  }
  return best;
}

/** Names of `size` characters that almost match `glob`: its fixed parts repeated, then a character that spoils the end. */
function nearMisses(size: number): string[] {
  const fill = (head: string, unit: string, tail: string): string => head + unit.repeat(Math.ceil((size - head.length - tail.length) / unit.length)) + tail;
  return [fill('gpt-5', '-codex', '\n'), fill('gpt-5', '-codex', '-previeX'), fill('claude-', '-4-6', '\n'), fill('codex-', 'codex-', '\n'), fill('', 'x', '')];
}

describe('alias globs match in time linear in the name', () => {
  // The shipped config's aliases, then globs with two and three `*` (the previous default's
  // `gpt-5*-codex*`, as a regex, took seconds on a 384 KB name ending in a newline).
  const shipped = parseTestConfig(readFileSync(DEFAULT_CONFIG, 'utf8'), {}, 'switchyard.yaml');
  const multi = parseTestConfig(
    config(`
  - { name: codex, aliases: ["gpt-5*-codex*-preview", "claude-*-4-6-*", "gpt-5*-codex*"], price: { input: 1, output: 1 }, targets: [{ upstream: sim, model: m }] }
`),
    {},
    'multi.yaml',
  );

  for (const [label, cfg] of [
    ['the default config', shipped],
    ['two- and three-star globs', multi],
  ] as const) {
    test(`${label}: a 1 MB name takes at most ~8x the time of a 256 KB one (4x the length)`, () => {
      const resolve = (n: string) => modelNamed(cfg, n);
      const small = nearMisses(256 * 1024);
      const large = nearMisses(1024 * 1024);
      assert.equal(large[0]!.length >= 1024 * 1024, true);
      bestMs(resolve, small, 1); // warm up
      const ms256 = bestMs(resolve, small);
      const ms1024 = bestMs(resolve, large);
      // The 1 ms allows for the timer's resolution when both are near zero.
      assert.ok(ms1024 <= 8 * ms256 + 1, `256 KB: ${ms256.toFixed(3)} ms, 1 MB: ${ms1024.toFixed(3)} ms`);
    });
  }

  test('`*` matches any run of characters, a newline included; the fixed parts must all be there', () => {
    const named = (n: string) => modelNamed(multi, n)?.name;
    assert.equal(named('gpt-5-codex\n'), 'codex');
    assert.equal(named('gpt-5.5-codex-2026\n-preview'), 'codex');
    assert.equal(named('claude-x-4-6-\n'), 'codex');
    assert.equal(named('gpt-4-codex'), undefined);
    assert.equal(named('claude-4-6-'), undefined, 'the two fixed parts may not overlap');
  });
});
