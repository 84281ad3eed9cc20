/**
 * `balanced`: the target with the lowest load relative to its share, where load is
 * (in-flight + 1) / (weight × max_concurrency), so a burst fans out across accounts in
 * proportion to their weight and size. Ties rotate round-robin, so equal targets take
 * equal turns even when requests never overlap.
 */
import type { Candidate, StrategyContext, StrategyFn } from './types.js';

const load = (c: Candidate) => (c.inFlight + 1) / (c.target.weight * c.capacity);

/**
 * The candidates by load, ties in round-robin order from `ctx.tick`. One array per call: the
 * candidates are laid out in round-robin order and insertion-sorted by load (stable, so ties
 * keep that order), with no wrapper object per candidate and no sort workspace; a model's
 * targets are few.
 */
export const balanced: StrategyFn = (candidates: readonly Candidate[], ctx: StrategyContext) => {
  const n = candidates.length;
  const out = new Array<Candidate>(n);
  const first = n === 0 ? 0 : ((ctx.tick % n) + n) % n;
  for (let r = 0; r < n; r++) {
    const c = candidates[(first + r) % n]!;
    const l = load(c);
    let i = r;
    // Moves past those loaded more (a NaN difference, Infinity against Infinity, is a tie).
    while (i > 0 && load(out[i - 1]!) - l > 0) {
      out[i] = out[i - 1]!;
      i--;
    }
    out[i] = c;
  }
  return out;
};
