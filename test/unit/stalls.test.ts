/**
 * The stall threshold per account (router/stalls.ts): none before a few samples; 3x the
 * minimum while the account is young (early stalls among the first samples do not hide the
 * later ones), 3x the median of the recent window once it has settled (a few late or fast
 * outliers move it little), and never below 1 s.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { StallDetector } from '../../src/router/stalls.js';

describe('stall threshold', () => {
  test('none before three samples, then 3x the minimum, at least 1 s', () => {
    const d = new StallDetector();
    d.observe('a', 300);
    d.observe('a', 4300);
    assert.equal(d.thresholdMs('a'), null);
    d.observe('a', 4300);
    assert.equal(d.thresholdMs('a'), 1000, 'two early stalls among three samples: the fast one sets the bar (3 x 300 ms, floored at 1 s)');
    assert.equal(d.thresholdMs('b'), null, 'accounts apart');
  });

  test('a settled account: 3x the median of its recent samples, outliers moving it little', () => {
    const d = new StallDetector();
    for (let i = 0; i < 20; i++) d.observe('a', 2_000 + (i % 5) * 100);
    assert.equal(d.thresholdMs('a'), 6_600, '3 x the median of 2.0-2.4 s');
    d.observe('a', 20_000);
    d.observe('a', 50);
    assert.equal(d.thresholdMs('a'), 6_600, 'one slow and one fast outlier do not move the median');
    assert.deepEqual(d.own(), [['a', 2_200]], 'the baseline the fleet is told: the median');
  });

  test('the window follows a provider that got slower', () => {
    const d = new StallDetector();
    for (let i = 0; i < 64; i++) d.observe('a', 500);
    assert.equal(d.thresholdMs('a'), 1_500);
    for (let i = 0; i < 40; i++) d.observe('a', 3_000);
    assert.equal(d.thresholdMs('a'), 9_000, 'most of the last 64 answers are slower now');
  });

  test("an account with too few samples of its own: its siblings' pooled samples set the bar (3x their minimum), the fleet's baseline first", () => {
    const d = new StallDetector();
    const siblings = ['a', 'b', 'c'];
    d.observe('a', 400);
    d.observe('b', 600);
    assert.equal(d.thresholdMs('c', siblings), null, 'two samples in all: not yet');
    d.observe('c', 900);
    assert.equal(d.thresholdMs('c', siblings), 1_200, 'three in all: 3 x 400 ms');
    assert.equal(d.thresholdMs('c'), null, 'no siblings named: the account alone, as before');
    d.seed('c', 800);
    assert.equal(d.thresholdMs('c', siblings), 2_400, "the fleet's baseline of the account comes before the pool");
    d.observe('c', 500);
    d.observe('c', 700);
    assert.equal(d.thresholdMs('c', siblings), 1_500, "three of its own: the account's own bar (3 x its minimum, 500 ms)");
  });
});
