/**
 * The router's per-target circuit breaker (HealthBoard), driven with a settable clock: which
 * failures open it, cooldowns and their doubling, probes, and account cooldowns.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { classifiedAs as as } from '../../src/errors/classify.js';
import { HealthBoard } from '../../src/router/health.js';
import { clock } from '../helpers/clock.js';

describe('HealthBoard', () => {
  const cfg = { failures: 3, base_ms: 1_000, max_ms: 5_000, credential_ms: 60_000 };

  test('opens after `failures` consecutive retryable failures, not before', () => {
    const c = clock();
    const h = new HealthBoard(cfg, c.now);
    assert.equal(h.state('u/m', 'u'), 'healthy');
    h.failure('u/m', 'u', as('server'), 'upstream said no');
    h.failure('u/m', 'u', as('timeout'), 'upstream said no');
    assert.equal(h.state('u/m', 'u'), 'healthy');
    assert.equal(h.canAdmit('u/m', 'u'), true);
    assert.equal(h.availableAt('u/m', 'u'), 0);
    h.failure('u/m', 'u', as('connect'), 'upstream said no');
    assert.equal(h.state('u/m', 'u'), 'cooling');
    assert.equal(h.canAdmit('u/m', 'u'), false);
    assert.equal(h.availableAt('u/m', 'u'), c.t + 1_000);
  });

  test('a success in between resets the consecutive count', () => {
    const h = new HealthBoard(cfg, clock().now);
    h.failure('k', 'u', as('server'), 'upstream said no');
    h.failure('k', 'u', as('server'), 'upstream said no');
    h.success('k', 'u');
    h.failure('k', 'u', as('server'), 'upstream said no');
    h.failure('k', 'u', as('server'), 'upstream said no');
    assert.equal(h.state('k', 'u'), 'healthy');
    h.failure('k', 'u', as('server'), 'upstream said no');
    assert.equal(h.state('k', 'u'), 'cooling');
  });

  test('caller faults (every request-scope class) and stream failures do not count against the target', () => {
    const h = new HealthBoard({ ...cfg, failures: 1 }, clock().now);
    for (const cls of ['bad_request', 'context_length', 'content_policy', 'stream'] as const) h.failure('k', 'u', as(cls), 'upstream said no');
    assert.equal(h.state('k', 'u'), 'healthy');
    assert.equal(h.longCooldown('k', 'u'), null);
    h.failure('k', 'u', as('server'), 'upstream said no');
    assert.equal(h.state('k', 'u'), 'cooling');
  });

  test('one 429 opens the circuit at once, for the Retry-After when given, else base_ms', () => {
    const c = clock();
    const h = new HealthBoard(cfg, c.now);
    h.failure('a', 'u', as('rate_limited'), 'upstream said no', 7_000);
    assert.equal(h.state('a', 'u'), 'cooling');
    assert.equal(h.availableAt('a', 'u'), c.t + 7_000, 'Retry-After, not base_ms');
    h.failure('b', 'u', as('rate_limited'), 'upstream said no');
    assert.equal(h.availableAt('b', 'u'), c.t + 1_000, 'no Retry-After: base_ms');
    // A Retry-After on a non-429 failure does not set the cooldown.
    h.failure('c', 'u', as('server'), 'upstream said no', 9_000);
    h.failure('c', 'u', as('server'), 'upstream said no', 9_000);
    h.failure('c', 'u', as('server'), 'upstream said no', 9_000);
    assert.equal(h.availableAt('c', 'u'), c.t + 1_000);
    c.advance(1_000);
    assert.equal(h.state('b', 'u'), 'probing');
    assert.equal(h.state('a', 'u'), 'cooling');
    c.advance(6_000);
    assert.equal(h.state('a', 'u'), 'probing');
  });

  test('cooldown doubles on every failed probe, up to max_ms', () => {
    const c = clock();
    const h = new HealthBoard(cfg, c.now);
    for (let i = 0; i < 3; i++) h.failure('k', 'u', as('server'), 'upstream said no');
    const seen: number[] = [];
    for (let trip = 0; trip < 6; trip++) {
      const until = h.availableAt('k', 'u');
      assert.ok(until > 0, `trip ${trip}: cooling`);
      seen.push(until - c.t);
      c.t = until - 1;
      assert.equal(h.state('k', 'u'), 'cooling', `trip ${trip}: still cooling 1 ms before the end`);
      c.t = until;
      assert.equal(h.state('k', 'u'), 'probing', `trip ${trip}: probing when the cooldown ends`);
      assert.equal(h.canAdmit('k', 'u'), true);
      h.admit('k', 'u');
      h.failure('k', 'u', as('server'), 'upstream said no'); // the probe fails: one failure re-opens the circuit
    }
    assert.deepEqual(seen, [1_000, 2_000, 4_000, 5_000, 5_000, 5_000]);
  });

  test('probing lets exactly one request through at a time', () => {
    const c = clock();
    const h = new HealthBoard({ ...cfg, failures: 1 }, c.now);
    h.failure('k', 'u', as('server'), 'upstream said no');
    c.advance(1_000);
    assert.equal(h.state('k', 'u'), 'probing');
    assert.equal(h.canAdmit('k', 'u'), true);
    h.admit('k', 'u');
    assert.equal(h.canAdmit('k', 'u'), false, 'a probe is in flight');
    assert.equal(h.canAdmit('k', 'u'), false);
    // An aborted probe frees the slot without deciding anything.
    h.release('k', 'u');
    assert.equal(h.state('k', 'u'), 'probing');
    assert.equal(h.canAdmit('k', 'u'), true);
  });

  test('a successful probe closes the circuit; the next trip starts again at base_ms', () => {
    const c = clock();
    const h = new HealthBoard({ ...cfg, failures: 2 }, c.now);
    h.failure('k', 'u', as('server'), 'upstream said no');
    h.failure('k', 'u', as('server'), 'upstream said no');
    c.advance(1_000);
    h.admit('k', 'u');
    h.failure('k', 'u', as('server'), 'upstream said no'); // failed probe: 2 s
    assert.equal(h.availableAt('k', 'u'), c.t + 2_000);
    c.advance(2_000);
    h.admit('k', 'u');
    h.success('k', 'u');
    assert.equal(h.state('k', 'u'), 'healthy');
    assert.equal(h.canAdmit('k', 'u'), true);
    h.admit('k', 'u');
    assert.equal(h.canAdmit('k', 'u'), true, 'healthy targets take any number of requests');
    h.failure('k', 'u', as('server'), 'upstream said no');
    assert.equal(h.state('k', 'u'), 'healthy', 'one failure after closing does not re-open (failures: 2)');
    h.failure('k', 'u', as('server'), 'upstream said no');
    assert.equal(h.availableAt('k', 'u'), c.t + 1_000, 'back to base_ms after a success');
  });

  test('the later of a target cooldown and its account cooldown wins (the account probe is due at credential_ms / 4)', () => {
    const c = clock();
    const h = new HealthBoard({ ...cfg, failures: 1, credential_ms: 3_000 }, c.now);
    h.failure('acct/a', 'acct', as('rate_limited'), 'upstream said no', 8_000);
    h.failure('acct/b', 'acct', as('credential'), 'upstream said no');
    assert.equal(h.availableAt('acct/a', 'acct'), c.t + 8_000);
    assert.equal(h.availableAt('acct/b', 'acct'), c.t + 750);
  });

  test('snapshot lists every known target', () => {
    const c = clock();
    const h = new HealthBoard({ ...cfg, failures: 1 }, c.now);
    h.failure('x', 'u', as('server'), 'upstream said no');
    h.success('y', 'u');
    const snap = h.snapshot().sort((a, b) => a.key.localeCompare(b.key));
    assert.deepEqual(snap, [
      { key: 'x', failures: 0, coolingUntil: c.t + 1_000, trips: 1 },
      { key: 'y', failures: 0, coolingUntil: 0, trips: 0 },
    ]);
  });
});
