/**
 * RetryBudget.hasRoom: whether a retry is left, without taking it (the route stops before a
 * backoff whose next attempt the budget could not pay for, router/run.ts endOfModel).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { RetryBudget } from '../../src/router/retry-budget.js';

test('hasRoom says whether a retry is left and takes none; the window frees it again', () => {
  let now = 1_700_000_000_000;
  const b = new RetryBudget({ ratio: 0, min_retries: 1, window_ms: 10_000 }, () => now);
  assert.equal(b.hasRoom(), true);
  assert.equal(b.hasRoom(), true, 'asking took nothing');
  assert.equal(b.tryRetry(), true);
  assert.equal(b.hasRoom(), false, 'the one retry is taken');
  assert.equal(b.tryRetry(), false);
  now += 10_000;
  assert.equal(b.hasRoom(), true, 'the retry left the window');
});
