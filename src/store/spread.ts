/**
 * The order an admission tries its candidates in (store/types.ts Candidate.spread): those with
 * a spread weight least loaded first among themselves, in the places they hold, on the calls
 * in flight when the admission runs; the rest in their given places. The load is `balanced`'s
 * (router/strategies/balanced.ts): (in flight + 1) / (weight × call limit); ties keep the
 * given order. ADMIT_BODY (store/redis-scripts.ts) orders the same way in Lua.
 */

/**
 * @param weights per candidate, its spread weight (0: tried in its place).
 * @param inFlight the calls in flight on the candidate's account now (read only for those with a weight).
 * @param callLimit the candidate's call limit: its learned limit for every call, at most `max_concurrency`.
 * @returns the 0-based candidate indexes in the order to try them.
 */
export function spreadOrder(weights: readonly number[], inFlight: (i: number) => number, callLimit: (i: number) => number): number[] {
  const order = weights.map((_w, i) => i);
  const spread = order.filter((i) => weights[i]! > 0);
  if (spread.length < 2) return order;
  const loads = new Map(spread.map((i) => [i, (inFlight(i) + 1) / (weights[i]! * Math.max(1, callLimit(i)))]));
  const ranked = [...spread].sort((x, y) => loads.get(x)! - loads.get(y)! || x - y);
  spread.forEach((place, j) => (order[place] = ranked[j]!));
  return order;
}
