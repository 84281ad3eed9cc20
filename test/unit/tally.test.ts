/**
 * Tally (metrics/tally.ts): per-request increments summed in plain numbers and handed to the
 * prom-client counter when it is read, so the exported series are those `inc` would give.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Counter, Gauge, Registry } from 'prom-client';
import { GaugeTally, Tally } from '../../src/metrics/tally.js';

function setup(): { registry: Registry; counter: Counter<'model' | 'upstream' | 'kind'>; tally: Tally<'model' | 'upstream' | 'kind'> } {
  const registry = new Registry();
  const counter = new Counter({ name: 't_tokens_total', help: 'h', labelNames: ['model', 'upstream', 'kind'], registers: [registry] });
  return { registry, counter, tally: new Tally(counter) };
}

describe('Tally', () => {
  test('sums per label values reach the counter when it is read, and keep adding up across reads', async () => {
    const { registry, tally } = setup();
    tally.add(3, 'm1', 'up', 'input');
    tally.add(4, 'm1', 'up', 'input');
    tally.add(2, 'm1', 'up', 'output');
    tally.add(5, 'm2', 'up', 'input');
    tally.add(1.5, 'm1', 'other', 'input');
    let text = await registry.metrics();
    assert.match(text, /t_tokens_total\{model="m1",upstream="up",kind="input"\} 7\n/);
    assert.match(text, /t_tokens_total\{model="m1",upstream="up",kind="output"\} 2\n/);
    assert.match(text, /t_tokens_total\{model="m2",upstream="up",kind="input"\} 5\n/);
    assert.match(text, /t_tokens_total\{model="m1",upstream="other",kind="input"\} 1.5\n/);
    tally.add(10, 'm1', 'up', 'input');
    text = await registry.metrics();
    assert.match(text, /t_tokens_total\{model="m1",upstream="up",kind="input"\} 17\n/);
    // The JSON read (what the workers' primary sums) flushes too.
    tally.add(1, 'm2', 'up', 'input');
    const json = await registry.getMetricsAsJSON();
    const values = json.find((x) => x.name === 't_tokens_total')!.values;
    assert.equal(values.find((v) => v.labels['model'] === 'm2')!.value, 6);
  });

  test('zero, negative and non-numbers add nothing and make no series', async () => {
    const { registry, tally } = setup();
    tally.add(0, 'a', 'b', 'c');
    tally.add(-1, 'a', 'b', 'c');
    tally.add(Number.NaN, 'a', 'b', 'c');
    assert.doesNotMatch(await registry.metrics(), /t_tokens_total\{/);
  });

  test('values that share a prefix with another label are kept apart', async () => {
    const { registry, tally } = setup();
    tally.add(1, 'a', 'bc', 'd');
    tally.add(1, 'ab', 'c', 'd');
    const text = await registry.metrics();
    assert.match(text, /\{model="a",upstream="bc",kind="d"\} 1\n/);
    assert.match(text, /\{model="ab",upstream="c",kind="d"\} 1\n/);
  });
});

describe('GaugeTally', () => {
  test('the gauge is set from the kept state when read; a state whose value is null is not set', async () => {
    const registry = new Registry();
    const gauge = new Gauge({ name: 't_share', help: 'h', labelNames: ['model', 'upstream'], registers: [registry] });
    const g = new GaugeTally(
      gauge,
      () => ({ read: 0, input: 0 }),
      (s) => (s.input > 0 ? s.read / s.input : null),
    );
    g.at('m', 'u').input += 4;
    g.at('m', 'u').read += 1;
    g.at('m', 'v');
    let text = await registry.metrics();
    assert.match(text, /t_share\{model="m",upstream="u"\} 0.25\n/);
    assert.doesNotMatch(text, /upstream="v"/);
    g.at('m', 'u').read += 1;
    text = await registry.metrics();
    assert.match(text, /t_share\{model="m",upstream="u"\} 0.5\n/);
  });
});
