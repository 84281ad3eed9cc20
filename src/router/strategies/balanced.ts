/**
 * `balanced`: the target with the lowest load relative to its share, where load is
 * (in-flight + 1) / (weight × max_concurrency), so a burst fans out across accounts in
 * proportion to their weight and size. Ties rotate round-robin, so equal targets take
 * equal turns even when requests never overlap.
 */
import type { Candidate, StrategyContext, StrategyFn } from './types.js';

const load = (c: Candidate) => (c.inFlight + 1) / (c.target.weight * c.capacity);

export const balanced: StrategyFn = (candidates: readonly Candidate[], ctx: StrategyContext) => {
  const n = candidates.length;
  return candidates
    .map((c, i) => ({ c, rank: (i - (ctx.tick % n) + n) % n }))
    .sort((a, b) => load(a.c) - load(b.c) || a.rank - b.rank)
    .map((x) => x.c);
};
