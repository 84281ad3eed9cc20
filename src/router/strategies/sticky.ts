/**
 * `sticky`: a session's pinned target first, so provider-side prompt caches stay warm, as
 * long as it is available and below its concurrency cap; otherwise `balanced` picks a new
 * target and the router re-pins the session to whichever target serves it.
 */
import { balanced } from './balanced.js';
import type { Candidate, StrategyContext, StrategyFn } from './types.js';

export const sticky: StrategyFn = (candidates: readonly Candidate[], ctx: StrategyContext) => {
  const pinned = candidates.find((c) => c.target.key === ctx.pinned);
  if (!pinned || pinned.inFlight >= pinned.capacity) return balanced(candidates, ctx);
  return [
    pinned,
    ...balanced(
      candidates.filter((c) => c !== pinned),
      ctx,
    ),
  ];
};
