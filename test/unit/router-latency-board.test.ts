/**
 * The router's peak-EWMA latency board (LatencyBoard), driven with a settable clock: peaks,
 * blending, and decay while a target is idle.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { LatencyBoard } from '../../src/router/latency.js';
import { clock } from '../helpers/clock.js';

describe('LatencyBoard', () => {
  const TAU = 1_000;

  test('an unmeasured target estimates 0 (explored first)', () => {
    const l = new LatencyBoard(TAU, clock().now);
    assert.equal(l.estimate('x'), 0);
  });

  test('a sample above the estimate replaces it at once (peak)', () => {
    const c = clock();
    const l = new LatencyBoard(TAU, c.now);
    l.observe('x', 100);
    assert.equal(l.estimate('x'), 100);
    c.advance(10);
    l.observe('x', 900);
    assert.equal(l.estimate('x'), 900, 'one slow answer is enough');
  });

  test('a lower sample is blended into the current estimate with weight exp(-dt/tau)', () => {
    const c = clock();
    const l = new LatencyBoard(TAU, c.now);
    l.observe('x', 500);
    l.observe('x', 100); // dt = 0: the old estimate keeps all its weight
    assert.equal(l.estimate('x'), 500);
    c.advance(TAU);
    const current = l.estimate('x'); // decayed while idle
    assert.ok(current < 500 && current > 100);
    l.observe('x', 100);
    const w = Math.exp(-1);
    const expected = current * w + 100 * (1 - w);
    assert.ok(Math.abs(l.estimate('x') - expected) < 1e-9, `${l.estimate('x')} != ${expected}`);
    assert.ok(l.estimate('x') < current && l.estimate('x') > 100, 'between the sample and the estimate');
  });

  test('after a long idle period a sample is not blended with the stale peak', () => {
    const c = clock();
    const l = new LatencyBoard(TAU, c.now);
    l.observe('x', 5_000);
    c.advance(30 * TAU);
    l.observe('x', 100);
    assert.ok(Math.abs(l.estimate('x') - 100) < 1e-9, `estimate ${l.estimate('x')} after a 100 ms sample: the old 5 s peak came back`);
  });

  test('the estimate decays toward 0 while a target gets no traffic (time constant 3 tau)', () => {
    const c = clock();
    const l = new LatencyBoard(TAU, c.now);
    l.observe('x', 600);
    c.advance(3 * TAU);
    assert.ok(Math.abs(l.estimate('x') - 600 / Math.E) < 1e-9, `${l.estimate('x')}`);
    c.advance(30 * TAU);
    assert.ok(l.estimate('x') < 0.1, 'long idle: close to 0');
    assert.ok(l.estimate('x') >= 0);
  });

  test('targets are independent', () => {
    const c = clock();
    const l = new LatencyBoard(TAU, c.now);
    l.observe('a', 50);
    l.observe('b', 700);
    assert.equal(l.estimate('a'), 50);
    assert.equal(l.estimate('b'), 700);
  });
});
