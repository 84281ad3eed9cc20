/**
 * The learned-capacity law (store/capacity.ts) on a fake clock: no raise before the first
 * calm, slow start (growth by half) until the first throttle, cuts to what a throttled call saw, one additive raise per probe wait, the probe
 * wait doubling after a raise that was throttled (up to its maximum) and halving (down to its
 * base) with each call served at a raised limit, bounds always held.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { applyFeedback, initialCapacity, PROBE_BASE_MS, PROBE_MAX_MS, type CapacityBounds, type CapacityState } from '../../src/store/capacity.js';

const B: CapacityBounds = { start: 4, min: 1, ceiling: 40 };

/** An epoch on the fake clock (the store's clock reads epoch ms). */
const T0 = 1_760_000_000_000;

function run(steps: [number, 'ok' | 'throttled', number][], b = B): CapacityState[] {
  const s = initialCapacity(b);
  return steps.map(([at, signal, inFlight]) => ({ ...applyFeedback(s, { signal, inFlight }, b, T0 + at) }));
}

describe('learned capacity', () => {
  test('the first word starts the calm; slow start grows by half at each probe until the first throttle, then the cut is what the throttled call saw', () => {
    const out = run([
      [1_000, 'ok', 4],
      [1_500, 'ok', 4],
      [1_000 + PROBE_BASE_MS - 1, 'ok', 4],
      [1_000 + PROBE_BASE_MS, 'ok', 4],
      [1_000 + 2 * PROBE_BASE_MS, 'ok', 6],
      [1_000 + 2 * PROBE_BASE_MS + 100, 'throttled', 8],
      [1_000 + 2 * PROBE_BASE_MS + 200, 'throttled', 12],
    ]);
    assert.deepEqual(
      out.map((s) => s.limit),
      [4, 4, 4, 6, 9, 7, 7],
    );
    assert.equal(out[5]!.slowStart, false);
    assert.equal(out[5]!.probeMs, PROBE_BASE_MS * 2, 'the throttle came after a raise: probing waits twice as long');
  });

  test('a success proves the count at its start; a refusal is read against the count as it comes back', () => {
    const s = initialCapacity(B);
    applyFeedback(s, { signal: 'ok', inFlight: 1 }, B, T0);
    applyFeedback(s, { signal: 'ok', inFlight: 2 }, B, T0 + PROBE_BASE_MS, 9);
    assert.equal(s.limit, 4, 'served after starting second: no sign the account takes 4, whatever runs now');
    applyFeedback(s, { signal: 'throttled', inFlight: 2 }, B, T0 + PROBE_BASE_MS + 1, 4);
    assert.equal(s.limit, 3, 'refused with 4 in flight as it came back: the account takes 3, not 1');
  });

  test('after the first throttle a raise is +1, at most one per probe wait; a call served at the raised limit resets the wait', () => {
    const out = run([
      [0, 'throttled', 5],
      [PROBE_BASE_MS - 1, 'ok', 4],
      [PROBE_BASE_MS, 'ok', 4],
      [PROBE_BASE_MS + 10, 'ok', 5],
      [2 * PROBE_BASE_MS + 10, 'ok', 5],
    ]);
    assert.deepEqual(
      out.map((s) => s.limit),
      [4, 4, 5, 5, 6],
    );
    assert.equal(out[3]!.probeMs, PROBE_BASE_MS);
  });

  test('a throttle below the places a raise added cuts the limit but does not lengthen the probe wait', () => {
    const b: CapacityBounds = { start: 8, min: 1, ceiling: 40 };
    const s = initialCapacity(b);
    applyFeedback(s, { signal: 'throttled', inFlight: 7 }, b, T0); // limit 6, slow start over
    applyFeedback(s, { signal: 'ok', inFlight: 6 }, b, T0 + PROBE_BASE_MS); // the probe: 6 -> 7
    assert.equal(s.limit, 7);
    applyFeedback(s, { signal: 'throttled', inFlight: 6 }, b, T0 + PROBE_BASE_MS + 5);
    assert.equal(s.limit, 7, 'it served 6 at once a moment ago: one refusal at 6 only uses that evidence up');
    applyFeedback(s, { signal: 'throttled', inFlight: 6 }, b, T0 + PROBE_BASE_MS + 10);
    assert.equal(s.limit, 5, 'throttled as the sixth again: the account takes 5');
    assert.equal(s.probeMs, PROBE_BASE_MS, 'the refusal came below the probed place: no longer wait');
    applyFeedback(s, { signal: 'ok', inFlight: 5 }, b, T0 + 2 * PROBE_BASE_MS + 10);
    assert.equal(s.limit, 6, 'the next probe comes after the base wait');
    applyFeedback(s, { signal: 'throttled', inFlight: 6 }, b, T0 + 2 * PROBE_BASE_MS + 20);
    assert.equal(s.probeMs, 2 * PROBE_BASE_MS, 'refused at the probed place itself: the wait doubles');
  });

  test('a saturated account that throttles every probe is probed ever more rarely, up to the maximum wait', () => {
    const s = initialCapacity(B);
    applyFeedback(s, { signal: 'throttled', inFlight: 5 }, B, T0);
    const waits: number[] = [];
    for (let i = 0; i < 8; i++) {
      const now = s.changedAt + s.probeMs;
      applyFeedback(s, { signal: 'ok', inFlight: s.limit }, B, now); // the probe: +1
      assert.equal(s.limit, 5);
      applyFeedback(s, { signal: 'throttled', inFlight: 5 }, B, now + 10); // and it was one too many
      assert.equal(s.limit, 4);
      waits.push(s.probeMs);
    }
    assert.deepEqual(
      waits,
      [4_000, 8_000, 16_000, 16_000, 16_000, 16_000, 16_000, 16_000].map((w) => Math.min(w, PROBE_MAX_MS)),
    );
  });

  test('a call served at a raised limit halves the probe wait, not below its base: one lucky call does not undo the backoff', () => {
    const s = initialCapacity(B);
    applyFeedback(s, { signal: 'throttled', inFlight: 5 }, B, T0);
    for (let i = 0; i < 3; i++) {
      const now = s.changedAt + s.probeMs;
      applyFeedback(s, { signal: 'ok', inFlight: s.limit }, B, now); // a raise
      applyFeedback(s, { signal: 'throttled', inFlight: 5 }, B, now + 10); // throttled at its new place
    }
    assert.equal(s.probeMs, 16_000, 'three raises throttled: 2 s doubled three times');
    const now = s.changedAt + s.probeMs;
    applyFeedback(s, { signal: 'ok', inFlight: 4 }, B, now);
    assert.equal(s.limit, 5, 'raised again');
    const waits: number[] = [];
    for (let i = 0; i < 5; i++) {
      applyFeedback(s, { signal: 'ok', inFlight: 5 }, B, now + 100 + i);
      waits.push(s.probeMs);
    }
    assert.deepEqual(
      waits,
      [8_000, 4_000, 2_000, 2_000, 2_000].map((w) => Math.max(w, PROBE_BASE_MS)),
    );
  });

  test('bounds hold: never below min, never above the ceiling, a start outside them is clamped', () => {
    const b: CapacityBounds = { start: 50, min: 2, ceiling: 6 };
    const s = initialCapacity(b);
    assert.equal(s.limit, 6);
    applyFeedback(s, { signal: 'throttled', inFlight: 1 }, b, T0);
    assert.equal(s.limit, 2);
    for (let t = 20_000; t < 200_000; t += 20_000) applyFeedback(s, { signal: 'ok', inFlight: s.limit }, b, T0 + t);
    assert.equal(s.limit, 6);
  });

  test('a provider refusing 1% of calls at random does not ratchet the limit down (issue 14 soak)', () => {
    const b: CapacityBounds = { start: 64, min: 1, ceiling: 64 };
    const s = initialCapacity(b);
    // 20 calls in flight, a call served every 2 ms at levels 18..20, one in 100 refused at random.
    let refused = 0;
    for (let i = 0; i < 20_000; i++) {
      const level = 18 + (i % 3);
      const random = (i * 7919) % 100 === 0;
      if (random) refused++;
      applyFeedback(s, { signal: random ? 'throttled' : 'ok', inFlight: level }, b, T0 + 2 * i);
    }
    assert.ok(refused >= 190);
    assert.ok(s.limit >= 18, `the limit stays at the level the account serves (${s.limit})`);
  });

  test('calls below the limit teach nothing', () => {
    const out = run([
      [10_000, 'ok', 1],
      [20_000, 'ok', 3],
    ]);
    assert.deepEqual(
      out.map((s) => s.limit),
      [4, 4],
    );
  });
});
