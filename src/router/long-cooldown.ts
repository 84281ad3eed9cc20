/**
 * Cooldowns that waiting does not heal: a bad provider key or an account out of credit
 * (keyed by upstream id: every target of the account), a model the account may not use or
 * the upstream does not have (keyed by target key). Someone has to fix something, and only a
 * request shows when they have, so such a cooldown does not simply run out:
 *
 * - It starts with one failure. The first probe is due `probeDelayMs(length, 0)` later.
 * - From then on exactly one request at a time is let through (the probe). Its success
 *   clears the cooldown; a failure of the same kind restarts the wait with the next delay;
 *   any other outcome (client abort, a 5xx, the caller's own error) frees the probe for the
 *   next request without deciding anything.
 * - A success or failure of a request that was not the probe (sent before the cooldown
 *   began) changes nothing.
 *
 * Probe delay rule: min(length / 4, 60 s), doubled after each failed probe, never more than
 * `length` (`cooldown.credential_ms`). With the default 5 min the first probe goes 1 min
 * after the failure, and failed probes are followed by waits of 2, 4, then 5, 5 … min: a
 * fixed key is noticed within a minute, a broken one costs one upstream call per wait.
 * When the provider named the time the cause ends (an account's quota reset:
 * errors/quota-reset.ts), no probe goes before it.
 */
import type { FailureClass } from '../errors/classify.js';

/** A long cooldown as the router and the log see it. */
export interface LongCooldownView {
  readonly class: FailureClass;
  /** The upstream's message (already scrubbed of key material), at most 500 characters. */
  readonly reason: string;
  /** Epoch ms from which the next probe may go. */
  readonly probeAt: number;
}

interface Entry {
  cls: FailureClass;
  reason: string;
  probeAt: number;
  failedProbes: number;
  /** The target key whose request is the probe in flight, if any. */
  probeBy: string | null;
}

/** First probe delay min(length / 4, 60 s), doubled per failed probe, capped at `lengthMs` (ms). */
export function probeDelayMs(lengthMs: number, failedProbes: number): number {
  const first = Math.max(1, Math.min(Math.round(lengthMs / 4), 60_000));
  return Math.min(lengthMs, first * 2 ** failedProbes);
}

const MAX_REASON = 500;

export class LongCooldowns {
  private readonly map = new Map<string, Entry>();

  /**
   * @param lengthMs the longest wait between probes (`cooldown.credential_ms`).
   * @param now the clock, epoch ms.
   */
  constructor(
    private readonly lengthMs: number,
    private readonly now: () => number,
  ) {}

  /** The cooldown on `id`, or null. */
  get(id: string): LongCooldownView | null {
    const e = this.map.get(id);
    return e ? { class: e.cls, reason: e.reason, probeAt: e.probeAt } : null;
  }

  /** Epoch ms of the next probe while it is in the future, else 0. */
  availableAt(id: string): number {
    const at = this.map.get(id)?.probeAt ?? 0;
    return at > this.now() ? at : 0;
  }

  /** Whether a request may go now: no cooldown, or the probe is due and none is in flight. */
  canAdmit(id: string): boolean {
    const e = this.map.get(id);
    return !e || (e.probeAt <= this.now() && e.probeBy === null);
  }

  /** Marks the request to target `by` as the probe when one is due. */
  admit(id: string, by: string): void {
    const e = this.map.get(id);
    if (e && e.probeAt <= this.now() && e.probeBy === null) e.probeBy = by;
  }

  /** A success of a request to target `by`: clears the cooldown when that request was the probe. */
  success(id: string, by: string): void {
    if (this.map.get(id)?.probeBy === by) this.map.delete(id);
  }

  /** A request to target `by` ended without deciding (abort, another kind of failure): frees the probe. */
  release(id: string, by: string): void {
    const e = this.map.get(id);
    if (e?.probeBy === by) e.probeBy = null;
  }

  /**
   * A failure of this cooldown's kind on a request to target `by`.
   * @param untilMs when the provider said the cause ends (an account's quota reset), epoch ms:
   *   the next probe waits for it when it is later than the rule's delay.
   * @returns the new cooldown when this failure started one (log it), else null (a failed
   *          probe restarts the wait; a failure of a request sent earlier changes nothing).
   */
  fail(id: string, by: string, cls: FailureClass, reason: string, untilMs = 0): LongCooldownView | null {
    const now = this.now();
    const probeAt = (failed: number) => Math.max(now + probeDelayMs(this.lengthMs, failed), untilMs);
    const text = reason.length > MAX_REASON ? `${reason.slice(0, MAX_REASON)}…` : reason;
    const e = this.map.get(id);
    if (!e) {
      const created: Entry = { cls, reason: text, probeAt: probeAt(0), failedProbes: 0, probeBy: null };
      this.map.set(id, created);
      return { class: cls, reason: text, probeAt: created.probeAt };
    }
    if (e.probeBy === by) {
      e.failedProbes++;
      e.probeAt = probeAt(e.failedProbes);
      e.probeBy = null;
      e.cls = cls;
      e.reason = text;
    }
    return null;
  }
}
