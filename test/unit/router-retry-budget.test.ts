/**
 * The router's retry budget (RetryBudget), driven with a settable clock: min_retries, the
 * ratio of retries to requests over the window, and what leaves the window.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { RetryBudget } from '../../src/router/retry-budget.js';
import { clock } from '../helpers/clock.js';

describe('RetryBudget', () => {
  test('min_retries are allowed however few requests there are', () => {
    const c = clock();
    const b = new RetryBudget({ ratio: 0, min_retries: 3, window_ms: 10_000 }, c.now);
    assert.equal(b.tryRetry(), true);
    assert.equal(b.tryRetry(), true);
    assert.equal(b.tryRetry(), true);
    assert.equal(b.tryRetry(), false, 'the 4th retry is refused');
    assert.equal(b.tryRetry(), false);
  });

  test('with min_retries 0 and no requests, nothing may be retried', () => {
    const b = new RetryBudget({ ratio: 0.5, min_retries: 0, window_ms: 10_000 }, clock().now);
    assert.equal(b.tryRetry(), false);
  });

  test('ratio: retries are at most ratio x requests over the window', () => {
    const c = clock();
    const b = new RetryBudget({ ratio: 0.2, min_retries: 0, window_ms: 10_000 }, c.now);
    for (let i = 0; i < 10; i++) b.onRequest();
    assert.equal(b.tryRetry(), true);
    assert.equal(b.tryRetry(), true);
    assert.equal(b.tryRetry(), false, '0.2 x 10 = 2 retries');
    for (let i = 0; i < 90; i++) {
      c.advance(50); // spread over several buckets, all inside the window
      b.onRequest();
    }
    let granted = 0;
    while (b.tryRetry()) granted++;
    assert.equal(granted, 18, '0.2 x 100 = 20 retries in all, 2 already used');
  });

  test('ratio above 1 allows more retries than requests', () => {
    const b = new RetryBudget({ ratio: 2, min_retries: 0, window_ms: 10_000 }, clock().now);
    b.onRequest();
    b.onRequest();
    let granted = 0;
    while (b.tryRetry() && granted < 100) granted++;
    assert.equal(granted, 4);
  });

  test('requests and retries leave the budget once the window has passed', () => {
    const c = clock(1_000_000);
    const b = new RetryBudget({ ratio: 0.5, min_retries: 0, window_ms: 10_000 }, c.now);
    for (let i = 0; i < 10; i++) b.onRequest();
    for (let i = 0; i < 5; i++) assert.equal(b.tryRetry(), true);
    assert.equal(b.tryRetry(), false, 'spent');

    c.advance(9_000);
    assert.equal(b.tryRetry(), false, 'still inside the window: still spent');

    c.advance(1_000); // the bucket of those requests and retries is now 10 s old
    assert.equal(b.tryRetry(), false, 'the requests expired with the retries: 0 x 0.5 = 0');
    for (let i = 0; i < 4; i++) b.onRequest();
    assert.equal(b.tryRetry(), true);
    assert.equal(b.tryRetry(), true);
    assert.equal(b.tryRetry(), false, 'a fresh window: 0.5 x 4 = 2');
  });

  test('spent min_retries come back after the window', () => {
    const c = clock(5_000_000);
    const b = new RetryBudget({ ratio: 0, min_retries: 2, window_ms: 2_000 }, c.now);
    assert.equal(b.tryRetry(), true);
    assert.equal(b.tryRetry(), true);
    assert.equal(b.tryRetry(), false);
    c.advance(1_000);
    assert.equal(b.tryRetry(), false, 'half a window later: still spent');
    c.advance(1_000);
    assert.equal(b.tryRetry(), true);
    assert.equal(b.tryRetry(), true);
    assert.equal(b.tryRetry(), false);
  });

  test('a long idle gap clears every bucket', () => {
    const c = clock(3_000_000);
    const b = new RetryBudget({ ratio: 1, min_retries: 0, window_ms: 1_000 }, c.now);
    for (let i = 0; i < 5; i++) b.onRequest();
    c.advance(1_000_000);
    assert.equal(b.tryRetry(), false, 'requests from long ago do not count');
  });
});
