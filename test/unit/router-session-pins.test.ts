/**
 * The router's session pins (SessionPins), driven with a settable clock: TTL, refresh, and
 * the bound on how many are kept.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { SessionPins } from '../../src/store/pins.js';
import { clock } from '../helpers/clock.js';

describe('SessionPins', () => {
  test('a pin lasts ttl after the last set, then is gone', () => {
    const c = clock();
    const p = new SessionPins(1_000, 100, c.now);
    p.set('s1', 'up/a');
    assert.equal(p.get('s1'), 'up/a');
    c.advance(999);
    assert.equal(p.get('s1'), 'up/a');
    c.advance(1);
    assert.equal(p.get('s1'), undefined, 'expired at exactly ttl');
    c.advance(-1);
    assert.equal(p.get('s1'), undefined, 'an expired pin is deleted, not just hidden');
  });

  test('set refreshes the TTL and can move the session', () => {
    const c = clock();
    const p = new SessionPins(1_000, 100, c.now);
    p.set('s', 'up/a');
    c.advance(800);
    p.set('s', 'up/b');
    c.advance(800);
    assert.equal(p.get('s'), 'up/b', '1.6 s after the first set, 0.8 s after the second');
    c.advance(200);
    assert.equal(p.get('s'), undefined);
  });

  test('bounded: past maxPins the oldest pin goes first', () => {
    const c = clock();
    const p = new SessionPins(60_000, 2, c.now);
    p.set('a', 't1');
    p.set('b', 't2');
    p.set('c', 't3');
    assert.equal(p.get('a'), undefined, 'oldest evicted');
    assert.equal(p.get('b'), 't2');
    assert.equal(p.get('c'), 't3');
    p.set('b', 't2'); // refreshed: now the newest
    p.set('d', 't4');
    assert.equal(p.get('c'), undefined, 'c was the oldest after b was refreshed');
    assert.equal(p.get('b'), 't2');
    assert.equal(p.get('d'), 't4');
  });
});
