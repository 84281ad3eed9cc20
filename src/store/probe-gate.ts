/**
 * One probe of a raised limit at a time per account, across every replica: part of the
 * account's learned state in the store (store/capacity.ts; the same steps in Lua in
 * store/redis-capacity.ts). The account's trusted count is the learned limit when it was
 * first seen, raised one place each time a probe answers on time, and never above the
 * limit (a cut lowers it). A deep call that would take a place above it is the account's
 * probe; while that probe holds its place and has not answered (at most PROBE_HOLD_MS), no
 * other call goes above the trusted count, so a stalled probe does not take the places that
 * turn over before its stall is seen (measured with a stalling account: one raise gave six
 * stalls in the second before the first was seen; with the gate in each replica alone, two
 * replicas still stalled two at a time). Only the probe vouches: a call counted at a high
 * place may have reached the provider while others it was counted with had not, so one
 * answer vouches for one place, and calls that were not the probe vouch for none.
 */

/** The longest one probe holds the gate, ms. */
export const PROBE_HOLD_MS = 10_000;

/** The gate's part of an account's learned state. */
export interface ProbeState {
  /** Deep calls in flight the account has shown it takes (0: not set yet: the limit). */
  trusted: number;
  /** The lease id of the probe in flight ('' for none). */
  probe: string;
  /** Epoch ms the probe went. */
  probeAt: number;
}

/**
 * Whether a deep call taking place `n` (itself included) under the learned `limit` may go:
 * `ok`, `probe` (it goes as the account's probe, recorded in `s`) or `hot` (a probe is out).
 * @param live whether a lease still holds its place (a probe that lapsed opens the gate).
 */
export function admitProbe(s: ProbeState, id: string, n: number, limit: number, now: number, live: (lease: string) => boolean): 'ok' | 'probe' | 'hot' {
  if (s.trusted <= 0 || s.trusted > limit) s.trusted = limit;
  if (n <= s.trusted) return 'ok';
  if (s.probe !== '' && now - s.probeAt < PROBE_HOLD_MS && live(s.probe)) return 'hot';
  s.probe = id;
  s.probeAt = now;
  return 'probe';
}

/** The probe `id` got its first event on time: one more place is trusted, and the gate opens. */
export function probeAnswered(s: ProbeState, id: string): void {
  if (s.probe !== id) return;
  s.trusted += 1;
  s.probe = '';
}

/** The call `id` ended: if it was the probe (its answer never came on time), the gate opens. */
export function probeEnded(s: ProbeState, id: string): void {
  if (s.probe === id) s.probe = '';
}
