/**
 * Stall detection per upstream account: each account's recent first-event times, and the
 * time past which a deep call still waiting for its first event counts as stalled.
 * A provider that stalls instead of refusing (its first tokens late by seconds when too many
 * calls are in flight) is throttling all the same: the stall cuts the account's learned
 * capacity as a 429 would (store/capacity.ts), as soon as it is seen, not when the late first
 * event finally comes.
 *
 * The threshold is FACTOR × the median of the account's last WINDOW first-event times of
 * calls that did not stall, and at least FLOOR_MS. A median, not a mean: a few fast outliers
 * do not lower the bar, and late ones do not raise it, as long as they are fewer than half.
 * Until the account has SETTLED samples the minimum stands in for the median: the first
 * calls of a burst may stall before the account is watched at all (measured: two such
 * stalls among a replica's first three samples raised the median to the stall time, no
 * later stall was seen, and the learned limit ran from 4 to 9 on an account that takes 4).
 * Per replica: each replica measures its own calls (no store round trip); until it has
 * MIN_SAMPLES of an account, the fleet's baseline stands in (router/fleet-timings.ts), so a
 * replica that starts in a running fleet sees its first stall at once; while neither knows the
 * account, the samples of its siblings (accounts serving the same upstream model on the same
 * kind of provider) are pooled: an account that takes two calls gives only two quick answers in
 * a burst from cold, and its third call's stall was not seen (found by a hostile pass: limits
 * learned at 3x the real cap of 2, stalled calls left running 4-5 s).
 */

/** Samples before an account's threshold is trusted. */
const MIN_SAMPLES = 3;
/** Samples after which the median replaces the minimum. */
const SETTLED = 16;
/** Recent samples kept per account. */
const WINDOW = 64;
/** A first event later than FACTOR × the recent median, and at least FLOOR_MS, is a stall. */
const FACTOR = 3;
const FLOOR_MS = 1_000;

/** The q-quantile (0..1) of `xs` (nearest rank); `xs` is not modified. */
function quantile(xs: readonly number[], q: number): number {
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!;
}

export class StallDetector {
  /** upstream -> ring of recent first-event times (ms) and the next slot to write. */
  private readonly recent = new Map<string, { ms: number[]; next: number; threshold: number | null; base: number }>();
  /** upstream -> the fleet's baseline first-event time, ms (another replica's). */
  private readonly fleet = new Map<string, number>();
  /** Told when this replica's own baseline of an account first becomes known (router/fleet-timings.ts shares it at once). */
  onLearned: (() => void) | null = null;

  /** A deep call's first event came `ms` after it was sent, without a stall. */
  observe(upstream: string, ms: number): void {
    let r = this.recent.get(upstream);
    if (!r) this.recent.set(upstream, (r = { ms: [], next: 0, threshold: null, base: 0 }));
    if (r.ms.length < WINDOW) r.ms.push(ms);
    else r.ms[r.next] = ms;
    r.next = (r.next + 1) % WINDOW;
    r.base = r.ms.length >= SETTLED ? quantile(r.ms, 0.5) : Math.min(...r.ms);
    r.threshold = r.ms.length >= MIN_SAMPLES ? Math.max(FLOOR_MS, Math.ceil(FACTOR * r.base)) : null;
    if (r.ms.length === MIN_SAMPLES) this.onLearned?.();
  }

  /** The fleet's baseline first-event time of `upstream`, ms: stands in while this replica has too few samples. */
  seed(upstream: string, ms: number): void {
    this.fleet.set(upstream, ms);
  }

  /** The baselines this replica measured itself (MIN_SAMPLES or more), upstream -> ms (for the fleet). */
  own(): [string, number][] {
    return [...this.recent].filter(([, r]) => r.threshold !== null).map(([u, r]) => [u, Math.round(r.base)]);
  }

  /**
   * Time after sending past which a call with no first event has stalled, ms: the account's
   * own threshold, else the fleet's, else one from the pooled samples of `siblings` (ids of the
   * accounts serving the same upstream model on the same kind of provider, this one's included)
   * once they hold MIN_SAMPLES, their minimum standing in for the median as on a cold account;
   * null while none of these knows enough.
   */
  thresholdMs(upstream: string, siblings: readonly string[] = []): number | null {
    const own = this.recent.get(upstream)?.threshold;
    if (own != null) return own;
    const fleet = this.fleet.get(upstream);
    if (fleet !== undefined) return Math.max(FLOOR_MS, Math.ceil(FACTOR * fleet));
    let [n, base] = [0, Number.POSITIVE_INFINITY];
    for (const id of siblings) for (const ms of this.recent.get(id)?.ms ?? []) [n, base] = [n + 1, Math.min(base, ms)];
    return n >= MIN_SAMPLES ? Math.max(FLOOR_MS, Math.ceil(FACTOR * base)) : null;
  }
}
