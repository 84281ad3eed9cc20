/**
 * Stall detection per upstream account: each account's uncongested time to first event,
 * and the time past which a deep call still waiting for its first event counts as stalled.
 * A provider that stalls instead of refusing (its first tokens late by seconds when too many
 * calls are in flight) is throttling all the same: the stall cuts the account's learned
 * capacity as a 429 would (store/capacity.ts), as soon as it is seen, not when the late first
 * event finally comes.
 *
 * The baseline is a slowly rising minimum of the first-event times of calls that did not
 * stall (it falls at once to a faster sample and climbs 2% of the gap per sample, so a
 * provider that really got slower is followed, and a few slow calls do not raise the bar).
 * Per replica: each replica measures its own calls (no store round trip).
 */

/** Samples before an account's baseline is trusted. */
const MIN_SAMPLES = 5;
/** A first event later than FACTOR × the baseline, and at least FLOOR_MS, is a stall. */
const FACTOR = 4;
const FLOOR_MS = 1_000;
/** Share of the gap a slower sample moves the baseline up. */
const RISE = 0.02;

export class StallDetector {
  private readonly base = new Map<string, { ms: number; samples: number }>();

  /** A deep call's first event came `ms` after it was sent, without a stall. */
  observe(upstream: string, ms: number): void {
    const b = this.base.get(upstream);
    if (!b) {
      this.base.set(upstream, { ms, samples: 1 });
      return;
    }
    b.samples++;
    b.ms = ms < b.ms ? ms : b.ms + (ms - b.ms) * RISE;
  }

  /** Time after sending past which a call with no first event has stalled, ms; null while the baseline is not yet known. */
  thresholdMs(upstream: string): number | null {
    const b = this.base.get(upstream);
    if (!b || b.samples < MIN_SAMPLES) return null;
    return Math.max(FLOOR_MS, Math.ceil(b.ms * FACTOR));
  }

  /** The account's baseline first-event time, ms (null: not enough samples), for the admin view. */
  baselineMs(upstream: string): number | null {
    const b = this.base.get(upstream);
    return b && b.samples >= MIN_SAMPLES ? Math.round(b.ms) : null;
  }
}
