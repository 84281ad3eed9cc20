/**
 * The probe gate (router/probes.ts): calls at or below the trusted count go, one call above
 * it goes as the account's probe, further ones wait until the probe answers on time (the
 * count becomes trusted), ends, or its hold runs out; a cut limit lowers the trust.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ProbeGate } from '../../src/router/probes.js';

describe('probe gate', () => {
  test('the first limit seen is trusted; one probe above it at a time; an on-time answer makes its count trusted', () => {
    const g = new ProbeGate();
    assert.equal(g.admit('a', 'c1', 4, 4), 'ok', 'the starting guess is trusted');
    assert.equal(g.admit('a', 'c2', 5, 5), 'probe', 'the raised place is a probe');
    assert.equal(g.admit('a', 'c3', 5, 5), 'wait', 'a second call above the trusted count waits for the probe');
    assert.equal(g.admit('a', 'c4', 4, 5), 'ok', 'calls at the trusted count still go');
    assert.equal(g.admit('b', 'c5', 9, 4), 'probe', 'accounts are gated apart');
    g.answered('a', 'c2', 5);
    assert.equal(g.admit('a', 'c6', 5, 5), 'ok', 'proven: 5 is trusted now');
    assert.equal(g.admit('a', 'c7', 6, 6), 'probe');
  });

  test('one on-time answer vouches for one place more, however high its own place was', () => {
    const g = new ProbeGate();
    g.admit('a', 'c1', 4, 4);
    assert.equal(g.admit('a', 'p1', 7, 8), 'probe');
    g.answered('a', 'p1', 7);
    assert.equal(g.admit('a', 'c2', 5, 8), 'ok', '5 is trusted');
    assert.equal(g.admit('a', 'p2', 6, 8), 'probe', '6 is not yet');
  });

  test('a probe that ends without an answer opens the gate; a cut lowers the trust', () => {
    const g = new ProbeGate();
    g.admit('a', 'c1', 4, 4);
    assert.equal(g.admit('a', 'p1', 5, 5), 'probe');
    g.ended('a', 'other');
    assert.equal(g.admit('a', 'c2', 5, 5), 'wait', 'only the probe itself opens the gate');
    g.ended('a', 'p1');
    assert.equal(g.admit('a', 'p2', 5, 5), 'probe', 'the stalled or refused probe is over: the next may test');
    assert.equal(g.admit('a', 'c3', 3, 3), 'ok');
    assert.equal(g.admit('a', 'p3', 4, 4), 'wait', 'after a cut to 3, place 4 needs a probe again (p2 still out)');
  });

  test('only the probe vouches: a call admitted at a higher place before a cut does not raise the trust again', () => {
    const g = new ProbeGate();
    assert.equal(g.admit('a', 'old', 6, 6), 'ok', 'trusted at 6');
    assert.equal(g.admit('a', 'c1', 5, 5), 'ok', 'the limit was cut to 5: trust follows');
    g.answered('a', 'old', 6);
    assert.equal(g.admit('a', 'p1', 6, 6), 'probe', 'place 6 must be probed again');
  });

  test('a probe that never resolves frees the gate after its hold', () => {
    let now = 1_000_000;
    const g = new ProbeGate(() => now);
    g.admit('a', 'c1', 2, 2);
    assert.equal(g.admit('a', 'p1', 3, 3), 'probe');
    now += 9_999;
    assert.equal(g.admit('a', 'c2', 3, 3), 'wait');
    now += 1;
    assert.equal(g.admit('a', 'p2', 3, 3), 'probe');
  });
});
