/**
 * `cheap`: the lowest-priced target first (the target's price override, else the model's),
 * compared on input + output USD per 1M tokens; equal prices fall back to `balanced`.
 */
import { balanced } from './balanced.js';
import type { Candidate, StrategyContext, StrategyFn } from './types.js';

const price = (c: Candidate) => c.target.price.input + c.target.price.output;

export const cheap: StrategyFn = (candidates: readonly Candidate[], ctx: StrategyContext) => {
  const spread = balanced(candidates, ctx);
  return spread.sort((a, b) => price(a) - price(b));
};
