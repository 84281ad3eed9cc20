/**
 * The health of every target (account + model) on this replica, by what a failure's class
 * says is broken (src/errors/classify.ts):
 *
 * - scope `account` (credential, quota): every target of that upstream is out, in a long
 *   cooldown (router/long-cooldown.ts: probed, never simply expired).
 * - `permission`, `not_found`: only that target, in a long cooldown of the same rule.
 * - other target-scope classes: a circuit breaker. A target is `healthy` until `failures`
 *   consecutive failures, or one 429 (`rate_limited`), open it: it is then `cooling` for
 *   the upstream's `Retry-After` or a cooldown that doubles on each trip (base_ms, 2×, 4× …
 *   max_ms). When the cooldown ends it is `probing`: exactly one request is let through,
 *   and its outcome closes the circuit or opens it again.
 * - scope `request` (the caller's fault), scope `gateway` (our own failure) and `stream`
 *   never touch health (a stream broke after bytes went out; it is counted in the recent
 *   outcomes only).
 *
 * Each long cooldown is announced once, through `onCooldown` (the app logs one warning).
 */
import type { RoutingConfig } from '../config/schema.js';
import { isUpstreamBlameless, type Classified, type FailureClass } from '../errors/classify.js';
import { LongCooldowns, type LongCooldownView } from './long-cooldown.js';
import { RecentOutcomes } from './recent.js';

export type TargetHealthState = 'healthy' | 'cooling' | 'probing';

/** A long cooldown that just began: for the one warning line. */
export interface CooldownEvent {
  readonly upstream: string;
  /** The target key for a target cooldown; null when the whole account is out. */
  readonly target: string | null;
  readonly class: FailureClass;
  /** The upstream's error message, already scrubbed of key material by the caller (≤ 500 chars). */
  readonly reason: string;
  /** Epoch ms of the first probe. */
  readonly untilMs: number;
}

/** A long cooldown on a target, and whether it covers the whole account. */
export interface LongCooldown extends LongCooldownView {
  readonly scope: 'account' | 'target';
}

interface Entry {
  failures: number;
  /** Consecutive trips without a success; sets the next cooldown length. */
  trips: number;
  coolingUntil: number;
  probeInFlight: boolean;
}

/** Target-scope classes that wait does not heal: a long cooldown rather than the circuit. */
const LONG_TARGET = new Set<FailureClass>(['permission', 'not_found']);

export class HealthBoard {
  private readonly entries = new Map<string, Entry>();
  private readonly recent = new Map<string, RecentOutcomes>();
  /** Upstream id -> long cooldown of the whole account (credential, quota). */
  private readonly accounts: LongCooldowns;
  /** Target key -> long cooldown of that target (permission, not_found). */
  private readonly targets: LongCooldowns;

  /** Called when a target's circuit opens, with the cooldown end (shared with other replicas). */
  onTrip?: (key: string, untilMs: number) => void;
  /** Called once when a long cooldown begins (not on failed probes that extend it). */
  onCooldown?: (ev: CooldownEvent) => void;

  constructor(
    private readonly cfg: RoutingConfig['cooldown'],
    private readonly now: () => number = Date.now,
  ) {
    this.accounts = new LongCooldowns(cfg.credential_ms, now);
    this.targets = new LongCooldowns(cfg.credential_ms, now);
  }

  private entry(key: string): Entry {
    let e = this.entries.get(key);
    if (!e) {
      e = { failures: 0, trips: 0, coolingUntil: 0, probeInFlight: false };
      this.entries.set(key, e);
    }
    return e;
  }

  /** Epoch ms when the target may take traffic again (0 when it may now, or once its probe is due). */
  availableAt(key: string, upstreamId: string): number {
    const circuit = this.entries.get(key)?.coolingUntil ?? 0;
    const until = Math.max(circuit > this.now() ? circuit : 0, this.accounts.availableAt(upstreamId), this.targets.availableAt(key));
    return until > this.now() ? until : 0;
  }

  state(key: string, upstreamId: string): TargetHealthState {
    if (this.availableAt(key, upstreamId) > 0) return 'cooling';
    const tripped = (this.entries.get(key)?.trips ?? 0) > 0;
    return tripped || this.longCooldown(key, upstreamId) ? 'probing' : 'healthy';
  }

  /** Whether a request may be sent now: healthy, or probing with no probe in flight (circuit, target and account). */
  canAdmit(key: string, upstreamId: string): boolean {
    const st = this.state(key, upstreamId);
    if (st === 'healthy') return true;
    if (st === 'cooling' || this.entries.get(key)?.probeInFlight) return false;
    return this.accounts.canAdmit(upstreamId) && this.targets.canAdmit(key);
  }

  /**
   * Marks a request as sent. Outside `healthy` it is the probe (at most one at a time), also
   * when a cooling circuit is tried because every target of the model is cooling.
   */
  admit(key: string, upstreamId: string): void {
    const e = this.entries.get(key);
    if (e && (e.trips > 0 || e.coolingUntil > this.now())) e.probeInFlight = true;
    this.accounts.admit(upstreamId, key);
    this.targets.admit(key, key);
  }

  /**
   * Whether a long cooldown keeps this target out now (its probe is not due, or is in flight).
   * Such a target is never forced: waiting does not heal a bad key, and only the probe goes.
   */
  longCooling(key: string, upstreamId: string): boolean {
    return !this.accounts.canAdmit(upstreamId) || !this.targets.canAdmit(key);
  }

  /** The long cooldown (account first, then target) on this target, or null. */
  longCooldown(key: string, upstreamId: string): LongCooldown | null {
    const account = this.accounts.get(upstreamId);
    if (account) return { ...account, scope: 'account' };
    const target = this.targets.get(key);
    return target ? { ...target, scope: 'target' } : null;
  }

  private note(key: string, ok: boolean): void {
    let r = this.recent.get(key);
    if (!r) {
      r = new RecentOutcomes();
      this.recent.set(key, r);
    }
    r.add(this.now(), ok);
  }

  /**
   * Whether the target is known to answer now: not cooling or probing, and more than half of
   * its attempts over the last minute on this replica succeeded (none at all: not known).
   */
  answering(key: string, upstreamId: string): boolean {
    if (this.state(key, upstreamId) !== 'healthy') return false;
    const r = this.recentOutcomes(key);
    return r.requests > 0 && r.errorRate < 0.5;
  }

  /** Attempts to the target over the last minute on this replica, and the failed share. */
  recentOutcomes(key: string): { requests: number; errorRate: number } {
    return this.recent.get(key)?.rate(this.now()) ?? { requests: 0, errorRate: 0 };
  }

  /**
   * Records a success: the circuit closes, and a long cooldown whose probe this was ends (for
   * an account cooldown, on every target of the account). A success that was not the probe
   * (a request sent before the circuit opened) does not end a cooldown early.
   */
  success(key: string, upstreamId: string): void {
    this.note(key, true);
    this.accounts.success(upstreamId, key);
    this.targets.success(key, key);
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

  /** Ends an admitted request that neither succeeded nor failed (client abort): frees its probe. */
  release(key: string, upstreamId: string): void {
    const e = this.entries.get(key);
    if (e) e.probeInFlight = false;
    this.accounts.release(upstreamId, key);
    this.targets.release(key, key);
  }

  /**
   * Records a failure by its class and scope.
   * @param reason the upstream's message, already scrubbed of secrets (logged with a long cooldown).
   * @param retryAfterMs the upstream's `Retry-After`, already capped, if it sent one.
   * @param resetAt for an account cooldown: when the provider said the account comes back,
   *   epoch ms (no probe goes before it).
   */
  failure(key: string, upstreamId: string, c: Classified, reason: string, retryAfterMs?: number, resetAt?: number): void {
    if (!isUpstreamBlameless(c)) this.note(key, false);
    const e = this.entry(key);
    const wasProbe = e.probeInFlight;
    e.probeInFlight = false;
    const onAccount = c.scope === 'account';
    const onTarget = LONG_TARGET.has(c.class);
    // A failure of another kind than a long cooldown's frees its probe without deciding.
    const accountBegun = onAccount ? this.accounts.fail(upstreamId, key, c.class, reason, resetAt) : null;
    if (!onAccount) this.accounts.release(upstreamId, key);
    const targetBegun = onTarget ? this.targets.fail(key, key, c.class, reason) : null;
    if (!onTarget) this.targets.release(key, key);
    const begun = accountBegun ?? targetBegun;
    if (begun) this.onCooldown?.({ upstream: upstreamId, target: onAccount ? null : key, class: begun.class, reason: begun.reason, untilMs: begun.probeAt });
    if (isUpstreamBlameless(c) || c.class === 'stream' || onAccount || onTarget) return;

    e.failures++;
    if (c.class === 'rate_limited' || wasProbe || e.failures >= this.cfg.failures) {
      const grown = Math.min(this.cfg.max_ms, this.cfg.base_ms * 2 ** e.trips);
      const ms = c.class === 'rate_limited' && retryAfterMs !== undefined ? retryAfterMs : grown;
      e.trips++;
      e.failures = 0;
      e.coolingUntil = this.now() + ms;
      this.onTrip?.(key, e.coolingUntil);
    }
  }

  /** Every known target's circuit, for metrics and the admin view. */
  snapshot(): { key: string; failures: number; coolingUntil: number; trips: number }[] {
    return [...this.entries].map(([key, e]) => ({ key, failures: e.failures, coolingUntil: e.coolingUntil, trips: e.trips }));
  }
}
