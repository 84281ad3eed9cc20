/**
 * The router's waits between attempts: full-jitter backoff (fullJitter) and Retry-After /
 * retry-after-ms parsing (retryAfterMs).
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { fullJitter, retryAfterMs } from '../../src/router/backoff.js';
import { seededRandom } from '../helpers/random.js';

const ALMOST_ONE = 1 - Number.EPSILON;

describe('backoff.fullJitter', () => {
  test('is random(0, min(cap, base * 2^round)): extremes of random() give 0 and just under the ceiling', () => {
    const base = 100;
    const cap = 2_000;
    const ceilings = [100, 200, 400, 800, 1_600, 2_000, 2_000, 2_000];
    ceilings.forEach((ceiling, round) => {
      assert.equal(
        fullJitter(round, base, cap, () => 0),
        0,
        `round ${round}: random 0`,
      );
      assert.equal(
        fullJitter(round, base, cap, () => ALMOST_ONE),
        ceiling - 1,
        `round ${round}: random ~1`,
      );
      assert.equal(
        fullJitter(round, base, cap, () => 0.5),
        ceiling / 2,
        `round ${round}: random 0.5`,
      );
    });
  });

  test('stays within [0, ceiling) for many random draws, returns integers, and spreads over the range', () => {
    const random = seededRandom(42);
    for (const round of [0, 1, 3, 10, 30]) {
      const ceiling = Math.min(500, 50 * 2 ** round);
      const seen: number[] = [];
      for (let i = 0; i < 2_000; i++) {
        const v = fullJitter(round, 50, 500, random);
        assert.ok(Number.isInteger(v), `integer expected, got ${v}`);
        assert.ok(v >= 0 && v < ceiling, `round ${round}: ${v} outside [0, ${ceiling})`);
        seen.push(v);
      }
      // Full jitter: draws cover the low and the high end of the range, not one fixed delay.
      assert.ok(Math.min(...seen) < ceiling * 0.1, `round ${round}: nothing near 0`);
      assert.ok(Math.max(...seen) >= ceiling * 0.9, `round ${round}: nothing near the ceiling`);
    }
  });

  test('uses Math.random by default and never exceeds the cap', () => {
    for (let i = 0; i < 1_000; i++) {
      const v = fullJitter(20, 100, 300);
      assert.ok(v >= 0 && v < 300, `${v} outside [0, 300)`);
    }
  });

  test('a zero base or zero cap gives no delay', () => {
    assert.equal(
      fullJitter(3, 0, 1_000, () => ALMOST_ONE),
      0,
    );
    assert.equal(
      fullJitter(3, 100, 0, () => ALMOST_ONE),
      0,
    );
  });
});

describe('backoff.retryAfterMs', () => {
  const NOW = Date.parse('Wed, 21 Oct 2015 07:28:00 GMT');
  const CAP = 10_000;

  test('Retry-After in seconds', () => {
    assert.equal(retryAfterMs({ 'retry-after': '3' }, CAP, NOW), 3_000);
    assert.equal(retryAfterMs({ 'retry-after': '0' }, CAP, NOW), 0);
    assert.equal(retryAfterMs({ 'retry-after': ' 2 ' }, CAP, NOW), 2_000);
    assert.equal(retryAfterMs({ 'retry-after': ['4', '9'] }, CAP, NOW), 4_000, 'the first of repeated headers');
  });

  test('Retry-After as an HTTP date, relative to now; a past date gives 0', () => {
    assert.equal(retryAfterMs({ 'retry-after': 'Wed, 21 Oct 2015 07:28:05 GMT' }, CAP, NOW), 5_000);
    assert.equal(retryAfterMs({ 'retry-after': 'Wed, 21 Oct 2015 07:27:00 GMT' }, CAP, NOW), 0);
    // `now` is honoured, not the wall clock.
    assert.equal(retryAfterMs({ 'retry-after': 'Wed, 21 Oct 2015 07:28:05 GMT' }, CAP, NOW + 3_000), 2_000);
  });

  test('retry-after-ms wins over Retry-After and may be fractional (rounded up)', () => {
    assert.equal(retryAfterMs({ 'retry-after-ms': '400', 'retry-after': '9' }, CAP, NOW), 400);
    assert.equal(retryAfterMs({ 'retry-after-ms': '1.2' }, CAP, NOW), 2);
    assert.equal(retryAfterMs({ 'retry-after-ms': '0' }, CAP, NOW), 0);
  });

  test('every form is capped', () => {
    assert.equal(retryAfterMs({ 'retry-after': '60' }, CAP, NOW), CAP);
    assert.equal(retryAfterMs({ 'retry-after-ms': '99999' }, 5_000, NOW), 5_000);
    assert.equal(retryAfterMs({ 'retry-after': 'Wed, 21 Oct 2015 08:28:00 GMT' }, CAP, NOW), CAP);
    assert.equal(retryAfterMs({ 'retry-after': '3' }, 0, NOW), 0);
  });

  test('absent or garbage gives undefined; a garbage retry-after-ms falls back to Retry-After', () => {
    assert.equal(retryAfterMs({}, CAP, NOW), undefined);
    assert.equal(retryAfterMs({ 'retry-after': undefined }, CAP, NOW), undefined);
    for (const garbage of ['soon', '', 'tomorrow', '5 seconds', '0x10', '1e3', 'NaN']) {
      assert.equal(retryAfterMs({ 'retry-after': garbage }, CAP, NOW), undefined, `Retry-After: ${JSON.stringify(garbage)}`);
      assert.equal(retryAfterMs({ 'retry-after-ms': garbage }, CAP, NOW), undefined, `retry-after-ms: ${JSON.stringify(garbage)}`);
    }
    assert.equal(retryAfterMs({ 'retry-after-ms': 'abc', 'retry-after': '2' }, CAP, NOW), 2_000);
    assert.equal(retryAfterMs({ 'retry-after-ms': '-5', 'retry-after': '2' }, CAP, NOW), 2_000);
  });

  test('Retry-After values that are neither delay-seconds nor an HTTP date are unreadable (RFC 9110 §10.2.3)', () => {
    // Date.parse is lenient: "-5" and "1.5" parse as dates in 2001, "abc 2030" as 2030.
    for (const garbage of ['-5', '1.5', '2.0', 'abc 2030']) {
      assert.equal(retryAfterMs({ 'retry-after': garbage }, CAP, NOW), undefined, `Retry-After: ${JSON.stringify(garbage)}`);
    }
  });
});
