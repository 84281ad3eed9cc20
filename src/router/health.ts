/**
 * Per-target circuit breaker. A target is `healthy` until `failures` consecutive retryable
 * failures, or one 429, open it: it is then `cooling` for the upstream's `Retry-After` or a
 * cooldown that doubles on each trip (base_ms, 2×, 4× … max_ms). When the cooldown ends it
 * is `probing`: exactly one request is let through, and its outcome closes the circuit or
 * opens it again. A 401/403 cools every target of that upstream for `credential_ms`.
 */
import type { RoutingConfig } from '../config/schema.js';
import type { FailureClass } from '../errors/classify.js';

export type TargetHealthState = 'healthy' | 'cooling' | 'probing';

interface Entry {
  failures: number;
  /** Consecutive trips without a success; sets the next cooldown length. */
  trips: number;
  coolingUntil: number;
  probeInFlight: boolean;
}

/** Outcome counts over the last minute, in 10-second buckets. */
class RecentOutcomes {
  private readonly buckets = new Map<number, { ok: number; failed: number }>();

  add(now: number, ok: boolean): void {
    const b = Math.floor(now / 10_000);
    const cur = this.buckets.get(b) ?? { ok: 0, failed: 0 };
    if (ok) cur.ok++;
    else cur.failed++;
    this.buckets.set(b, cur);
    for (const k of this.buckets.keys()) if (k < b - 5) this.buckets.delete(k);
  }

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

export class HealthBoard {
  private readonly entries = new Map<string, Entry>();
  private readonly recent = new Map<string, RecentOutcomes>();
  /** Upstream id -> epoch ms until which its credentials are considered bad. */
  private readonly credentialUntil = new Map<string, number>();

  /** Called when a target's circuit opens, with the cooldown end (shared with other replicas). */
  onTrip?: (key: string, untilMs: number) => void;

  constructor(
    private readonly cfg: RoutingConfig['cooldown'],
    private readonly now: () => number = Date.now,
  ) {}

  private entry(key: string): Entry {
    let e = this.entries.get(key);
    if (!e) {
      e = { failures: 0, trips: 0, coolingUntil: 0, probeInFlight: false };
      this.entries.set(key, e);
    }
    return e;
  }

  /** Epoch ms when the target may take traffic again (0 when it may now). */
  availableAt(key: string, upstreamId: string): number {
    const e = this.entries.get(key);
    const cred = this.credentialUntil.get(upstreamId) ?? 0;
    const until = Math.max(e?.coolingUntil ?? 0, cred);
    return until > this.now() ? until : 0;
  }

  state(key: string, upstreamId: string): TargetHealthState {
    if (this.availableAt(key, upstreamId) > 0) return 'cooling';
    const e = this.entries.get(key);
    return e && e.trips > 0 ? 'probing' : 'healthy';
  }

  /** Whether a request may be sent now: healthy, or probing with no probe in flight. */
  canAdmit(key: string, upstreamId: string): boolean {
    const st = this.state(key, upstreamId);
    if (st === 'healthy') return true;
    return st === 'probing' && !this.entries.get(key)?.probeInFlight;
  }

  /**
   * Marks a request as sent. Outside `healthy` it is the probe (at most one at a time), also
   * when a cooling target is tried because every target of the model is cooling.
   */
  admit(key: string, upstreamId: string): void {
    if (this.state(key, upstreamId) !== 'healthy') this.entry(key).probeInFlight = true;
  }

  /** Whether the upstream is cooling because it refused Switchyard's provider key. */
  credentialCooling(upstreamId: string): boolean {
    return (this.credentialUntil.get(upstreamId) ?? 0) > this.now();
  }

  private note(key: string, ok: boolean): void {
    let r = this.recent.get(key);
    if (!r) {
      r = new RecentOutcomes();
      this.recent.set(key, r);
    }
    r.add(this.now(), ok);
  }

  /** Attempts to the target over the last minute on this replica, and the failed share. */
  recentOutcomes(key: string): { requests: number; errorRate: number } {
    return this.recent.get(key)?.rate(this.now()) ?? { requests: 0, errorRate: 0 };
  }

  /**
   * Records a success: the circuit closes. A success that was not the probe (a request
   * sent before the circuit opened) does not end a cooldown early.
   */
  success(key: string): void {
    this.note(key, true);
    const e = this.entry(key);
    if (e.coolingUntil > this.now() && !e.probeInFlight) {
      e.failures = 0;
      return;
    }
    e.failures = 0;
    e.trips = 0;
    e.coolingUntil = 0;
    e.probeInFlight = false;
  }

  /** Ends an admitted request that neither succeeded nor failed (client abort). */
  release(key: string): void {
    const e = this.entries.get(key);
    if (e) e.probeInFlight = false;
  }

  /**
   * Records a failure.
   * @param retryAfterMs the upstream's `Retry-After`, already capped, if it sent one.
   */
  failure(key: string, upstreamId: string, cls: FailureClass, retryAfterMs?: number): void {
    const caller = cls === 'bad_request' || cls === 'context_length' || cls === 'content_policy';
    if (!caller) this.note(key, false);
    const e = this.entry(key);
    const wasProbe = e.probeInFlight;
    e.probeInFlight = false;
    if (caller || cls === 'stream') return; // not the target's health
    if (cls === 'credential' || cls === 'permission' || cls === 'quota') {
      this.credentialUntil.set(upstreamId, this.now() + this.cfg.credential_ms);
      return;
    }
    e.failures++;
    if (cls === 'rate_limited' || wasProbe || e.failures >= this.cfg.failures) {
      const grown = Math.min(this.cfg.max_ms, this.cfg.base_ms * 2 ** e.trips);
      const ms = cls === 'rate_limited' && retryAfterMs !== undefined ? retryAfterMs : grown;
      e.trips++;
      e.failures = 0;
      e.coolingUntil = this.now() + ms;
      this.onTrip?.(key, e.coolingUntil);
    }
  }

  /** Every known target's state, for metrics and the admin view. */
  snapshot(): { key: string; failures: number; coolingUntil: number; trips: number }[] {
    return [...this.entries].map(([key, e]) => ({ key, failures: e.failures, coolingUntil: e.coolingUntil, trips: e.trips }));
  }
}
