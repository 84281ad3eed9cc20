/**
 * The pure pieces of the router, driven with injected clocks where the constructors take
 * one: full-jitter backoff and Retry-After parsing, the retry budget, the per-target circuit
 * breaker, the peak-EWMA latency board, session pins, and the concurrency gates + queue.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { fullJitter, retryAfterMs } from '../../src/router/backoff.js';
import { QueueFullError, SlotQueue } from '../../src/router/concurrency.js';
import { StateStore } from '../../src/store/index.js';

const quiet = { info: () => {}, warn: () => {} };
import { classifiedAs as as } from '../../src/errors/classify.js';
import { HealthBoard } from '../../src/router/health.js';
import { LatencyBoard } from '../../src/router/latency.js';
import { RetryBudget } from '../../src/router/retry-budget.js';
import { SessionPins } from '../../src/store/pins.js';
import { seededRandom } from '../helpers/random.js';

/** A settable clock. */
function clock(start = 1_700_000_000_000): { now: () => number; t: number; advance(ms: number): void } {
  const c = {
    t: start,
    now: () => c.t,
    advance(ms: number) {
      c.t += ms;
    },
  };
  return c;
}

const ALMOST_ONE = 1 - Number.EPSILON;

describe('backoff.fullJitter', () => {
  test('is random(0, min(cap, base * 2^round)): extremes of random() give 0 and just under the ceiling', () => {
    const base = 100;
    const cap = 2_000;
    const ceilings = [100, 200, 400, 800, 1_600, 2_000, 2_000, 2_000];
    ceilings.forEach((ceiling, round) => {
      assert.equal(fullJitter(round, base, cap, () => 0), 0, `round ${round}: random 0`);
      assert.equal(fullJitter(round, base, cap, () => ALMOST_ONE), ceiling - 1, `round ${round}: random ~1`);
      assert.equal(fullJitter(round, base, cap, () => 0.5), ceiling / 2, `round ${round}: random 0.5`);
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
    assert.equal(fullJitter(3, 0, 1_000, () => ALMOST_ONE), 0);
    assert.equal(fullJitter(3, 100, 0, () => ALMOST_ONE), 0);
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

describe('SlotQueue over the memory store', () => {
  const never = () => new AbortController().signal;
  const req = (limit: number) => ({ upstream: 'u', key: 'u/m', coolingOk: true, limit, deep: false, capacity: { start: 6, min: 1, ceiling: 64 }, calls: { start: limit, min: 1, ceiling: limit } });
  const setup = (queueMax: number, timeoutMs: number) => {
    const store = new StateStore({ redis_options: {}, cluster_nodes: [], key_prefix: 'sy', command_timeout_ms: 250, replicas: 1, lease_ms: 60_000, journal_ttl_ms: 60_000 }, quiet);
    return { store, q: new SlotQueue(store, queueMax, timeoutMs, 5) };
  };

  test('the store takes slots up to the limit; release gives them back, never below zero', async () => {
    const { store } = setup(4, 1_000);
    const a = await store.acquire(req(2));
    const b = await store.acquire(req(2));
    assert.ok(a.ok && b.ok);
    assert.deepEqual(await store.acquire(req(2)), { ok: false, reason: 'full' });
    assert.equal((await store.view([{ key: 'u/m', upstream: 'u', capacity: { start: 6, min: 1, ceiling: 64 }, calls: { start: 64, min: 1, ceiling: 64 } }]))[0]!.inFlight, 2);
    await store.release(a.lease);
    await store.release(a.lease);
    assert.equal((await store.view([{ key: 'u/m', upstream: 'u', capacity: { start: 6, min: 1, ceiling: 64 }, calls: { start: 64, min: 1, ceiling: 64 } }]))[0]!.inFlight, 1, 'release is idempotent');
    await store.release(b.lease);
    assert.equal((await store.view([{ key: 'u/m', upstream: 'u', capacity: { start: 6, min: 1, ceiling: 64 }, calls: { start: 64, min: 1, ceiling: 64 } }]))[0]!.inFlight, 0);
  });

  test('waiters get released slots in FIFO order', async () => {
    const { store, q } = setup(10, 5_000);
    const first = await store.acquire(req(1));
    assert.ok(first.ok);
    const order: string[] = [];
    const leases: Record<string, import('../../src/store/types.js').Lease> = {};
    const waits = ['A', 'B', 'C'].map((name) =>
      q.wait(req(1), never()).then((r) => {
        order.push(name);
        leases[name] = r.lease;
      }),
    );
    await new Promise((r) => setTimeout(r, 30));
    assert.equal(q.queued('u'), 3);
    assert.deepEqual(order, [], 'nobody gets a slot before a release');
    await store.release(first.lease);
    q.notify('u');
    await new Promise((r) => setTimeout(r, 30));
    assert.deepEqual(order, ['A']);
    await store.release(leases['A']!);
    q.notify('u');
    await new Promise((r) => setTimeout(r, 30));
    await store.release(leases['B']!);
    q.notify('u');
    await Promise.all(waits);
    assert.deepEqual(order, ['A', 'B', 'C']);
    assert.equal(q.queued('u'), 0);
  });

  test('a full queue refuses at once; a wait past the timeout fails', async () => {
    const { store, q } = setup(1, 80);
    assert.ok((await store.acquire(req(1))).ok);
    const waiting = q.wait(req(1), never());
    await assert.rejects(q.wait(req(1), never()), (e: unknown) => e instanceof QueueFullError && e.reason === 'full');
    const t0 = Date.now();
    await assert.rejects(waiting, (e: unknown) => e instanceof QueueFullError && e.reason === 'timeout');
    assert.ok(Date.now() - t0 < 1000);
    assert.equal(q.queued('u'), 0, 'the timed-out waiter left the line');
  });

  test('an aborted wait leaves the line with the abort reason; an already-aborted signal is refused at once', async () => {
    const { store, q } = setup(4, 5_000);
    assert.ok((await store.acquire(req(1))).ok);
    const ctl = new AbortController();
    const waiting = q.wait(req(1), ctl.signal);
    await new Promise((r) => setTimeout(r, 20));
    ctl.abort(new Error('client left'));
    await assert.rejects(waiting, /client left/);
    assert.equal(q.queued('u'), 0);
    const gone = new AbortController();
    gone.abort(new Error('gone already'));
    const t0 = Date.now();
    await assert.rejects(q.wait(req(1), gone.signal), /gone already/);
    assert.ok(Date.now() - t0 < 50);
  });
});
