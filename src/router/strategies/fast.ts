/**
 * `fast`: power of two choices over a peak-sensitive latency estimate (Mitzenmacher, "The
 * Power of Two Choices in Randomized Load Balancing"; Finagle's P2C + peak EWMA). Two
 * candidates are drawn at random and the one with the lower cost, latency × (in-flight + 1),
 * goes first; the rest follow by cost. A target never measured costs 0 and is explored.
 */
import type { Candidate, StrategyContext, StrategyFn } from './types.js';

const cost = (c: Candidate) => c.latencyMs * (c.inFlight + 1);

export const fast: StrategyFn = (candidates: readonly Candidate[], ctx: StrategyContext) => {
  const byCost = [...candidates].sort((a, b) => cost(a) - cost(b));
  if (candidates.length < 2) return byCost;
  const i = Math.floor(ctx.random() * candidates.length);
  let j = Math.floor(ctx.random() * (candidates.length - 1));
  if (j >= i) j++;
  const a = candidates[i]!;
  const b = candidates[j]!;
  const first = cost(a) <= cost(b) ? a : b;
  return [first, ...byCost.filter((c) => c !== first)];
};
