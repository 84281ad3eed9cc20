/**
 * One probe at a time per account, per replica. A deep call that took a place above the
 * account's trusted count (the learned limit when this replica first saw the account, or
 * the highest count at which one of its calls here got its first event on time) is testing
 * a raised limit. Until that probe answers on time (one more place becomes trusted), or stalls, is
 * refused or ends (the law cuts the limit, or the test is void), no second call of this
 * replica goes above the trusted count: the places that turn over while the probe waits for
 * its first event would otherwise be filled by calls that stall or are refused the same way
 * (measured on a stalling account: one raise 6 -> 7 gave six stalls in the second before the
 * first was seen). A probe that resolves in none of these ways frees the gate after
 * PROBE_HOLD_MS. Replicas gate apart (no store round trip), so N replicas probe at most N
 * places at once.
 */

/** The longest one probe holds the gate, ms. */
const PROBE_HOLD_MS = 10_000;

export type ProbeVerdict = 'ok' | 'probe' | 'wait';

export class ProbeGate {
  /** upstream -> trusted count of deep calls in flight. */
  private readonly trusted = new Map<string, number>();
  /** upstream -> the probe in flight (its lease id) and when it went. */
  private readonly pending = new Map<string, { id: string; at: number }>();

  constructor(private readonly now: () => number = Date.now) {}

  /**
   * Whether a deep call that took place `n` (itself included) under the learned limit
   * `limit` of `upstream` may go: `ok`, `probe` (it may, as the account's one probe, and must
   * be reported to `answered` / `ended`), or `wait` (a probe is out: give the place back and
   * treat the account as hot).
   */
  admit(upstream: string, id: string, n: number, limit: number): ProbeVerdict {
    const t = this.trusted.get(upstream);
    const trusted = t === undefined ? limit : Math.min(t, limit);
    this.trusted.set(upstream, trusted);
    if (n <= trusted) return 'ok';
    const p = this.pending.get(upstream);
    if (p && this.now() - p.at < PROBE_HOLD_MS) return 'wait';
    this.pending.set(upstream, { id, at: this.now() });
    return 'probe';
  }

  /**
   * A deep call at place `n` got its first event on time. Only the account's probe vouches:
   * the trusted count rises by one place (a call counted at a high place may have reached
   * the provider while others it was counted with had not, so one lucky answer does not
   * vouch for several places), and the probe is done. Other calls vouch for nothing, not
   * even one admitted at a higher place before a cut lowered the trust.
   */
  answered(upstream: string, id: string, n: number): void {
    if (this.pending.get(upstream)?.id !== id) return;
    const t = this.trusted.get(upstream) ?? 0;
    if (n > t) this.trusted.set(upstream, t + 1);
    this.pending.delete(upstream);
  }

  /** The call `id` ended (any way): if it was the account's probe, the gate opens. */
  ended(upstream: string, id: string): void {
    if (this.pending.get(upstream)?.id === id) this.pending.delete(upstream);
  }
}
