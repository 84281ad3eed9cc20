/**
 * Outcome counts of one target over the last minute on this replica, in 10-second buckets
 * (the admin view's attempts and error rate).
 */
export class RecentOutcomes {
  private readonly buckets = new Map<number, { ok: number; failed: number }>();

  /** Counts one outcome at `now` (epoch ms). */
  add(now: number, ok: boolean): void {
    const b = Math.floor(now / 10_000);
    const cur = this.buckets.get(b) ?? { ok: 0, failed: 0 };
    if (ok) cur.ok++;
    else cur.failed++;
    this.buckets.set(b, cur);
    for (const k of this.buckets.keys()) if (k < b - 5) this.buckets.delete(k);
  }

  /** Outcomes over the minute before `now` (epoch ms), and the failed share (0..1). */
  rate(now: number): { requests: number; errorRate: number } {
    const from = Math.floor(now / 10_000) - 5;
    let ok = 0;
    let failed = 0;
    for (const [k, v] of this.buckets) {
      if (k < from) continue;
      ok += v.ok;
      failed += v.failed;
    }
    const n = ok + failed;
    return { requests: n, errorRate: n === 0 ? 0 : failed / n };
  }
}
