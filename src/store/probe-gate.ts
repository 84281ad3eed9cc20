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
 *
 * A lucky probe vouches for nothing: the count that made a call the probe includes calls
 * the provider had already finished (their ends on their way back, their releases on their
 * way to the store, a stalled call's cancel while its place lingers). When another deep call
 * of the account gives its place back having ended no later than PROBE_LUCK_MS after the
 * probe went, the probe may have found that place free at the provider: its on-time answer
 * trusts no more places, and its release reports one call fewer in flight than it was
 * counted with (router/attempt.ts; so it is no evidence of the raised level either). Measured with
 * `node scripts/bench-clustering.mjs --shapes stall --loads 16 --arms one`: a probe of an
 * account taking 3, sent 2 ms before another call's release, was answered on time; the next
 * calls at the raised place stalled, three on each of two accounts raised that way.
 *
 * Who carries the probe (store/types.ts Candidate `only`): never a request that already
 * waited in line (router/attempt.ts waiterCandidate), since a stalled probe costs its caller
 * the stall threshold on top of its wait (measured, same command: probes carried by waiters
 * of 600-800 ms made 2.1-2.3 s steps, the arm's p99); a new request instead, which on an
 * account this replica's waiters are in line for may take only the probe place
 * (router/take.ts withProbes), so probing goes on under a standing queue.
 */

/** The longest one probe holds the gate, ms. */
export const PROBE_HOLD_MS = 10_000;
/**
 * How long after a probe went another call's end may still have made room for it at the
 * provider, ms: the probe's way to the provider and the other call's release's way to the
 * store fit in it. Measured on two replicas sharing 2 cores with the provider and the agents
 * (stall/16): provider's end to the gateway's release p99 10 ms (max 26), admission to the
 * provider's arrival p99 13 ms (max 24); at 50 ms a probe of an account taking 6 was still
 * trusted at 7 in one run of two. Generous on purpose: a probe taken for lucky that was not
 * only delays one trusted place (the raised limit stays, the next call above it probes).
 */
export const PROBE_LUCK_MS = 150;

/** The gate's part of an account's learned state. */
export interface ProbeState {
  /** Deep calls in flight the account has shown it takes (0: not set yet: the limit). */
  trusted: number;
  /** The lease id of the probe in flight ('' for none). */
  probe: string;
  /** Epoch ms the probe went. */
  probeAt: number;
  /** The lease id of a lucky probe (its answer trusts nothing; '' for none). */
  lucky: string;
}

/**
 * Whether a deep call taking place `n` (itself included) under the learned `limit` may go:
 * `ok`, `probe` (it goes as the account's probe, recorded in `s`) or `hot` (a probe is out,
 * or the place is not one `only` allows: store/types.ts Candidate).
 * @param live whether a lease still holds its place (a probe that lapsed opens the gate).
 */
export function admitProbe(
  s: ProbeState,
  id: string,
  n: number,
  limit: number,
  now: number,
  live: (lease: string) => boolean,
  only?: 'trusted' | 'probe',
): 'ok' | 'probe' | 'hot' {
  if (s.trusted <= 0 || s.trusted > limit) s.trusted = limit;
  if (n <= s.trusted) return only === 'probe' ? 'hot' : 'ok';
  if (only === 'trusted') return 'hot';
  if (s.probe !== '' && now - s.probeAt < PROBE_HOLD_MS && live(s.probe)) return 'hot';
  s.probe = id;
  s.probeAt = now;
  return 'probe';
}

/**
 * The probe `id` was served on time: one more place is trusted (unless it was lucky), and the gate opens.
 * @returns whether it was lucky: its success then proves one call fewer than it was counted with (router/attempt.ts).
 */
export function probeAnswered(s: ProbeState, id: string): boolean {
  if (s.probe !== id) return false;
  const lucky = s.lucky === id;
  if (!lucky) s.trusted += 1;
  s.probe = '';
  s.lucky = '';
  return lucky;
}

/**
 * The deep call `id` gave its place back, having ended at `endedAt` (epoch ms, the store's
 * clock): if it was the probe, the gate opens; another call that still `held` its place and
 * ended no later than PROBE_LUCK_MS after the probe went makes the probe lucky (a release
 * sent again, or of a lapsed lease, says nothing).
 */
export function probeEnded(s: ProbeState, id: string, endedAt: number, held: boolean): void {
  if (s.probe === id) {
    s.probe = '';
    s.lucky = '';
  } else if (held && s.probe !== '' && endedAt <= s.probeAt + PROBE_LUCK_MS) s.lucky = s.probe;
}
