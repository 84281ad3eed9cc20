/** What a routing strategy sees of each available target, and what it returns. */
import type { Target } from '../../config/types.js';

export interface Candidate {
  readonly target: Target;
  /** Requests in flight on the target's upstream account. */
  readonly inFlight: number;
  /** The upstream's `max_concurrency`. */
  readonly capacity: number;
  /** Latency estimate, ms (0 = never measured). */
  readonly latencyMs: number;
}

export interface StrategyContext {
  readonly random: () => number;
  /** A counter that advances on every decision, for round-robin tie breaks. */
  readonly tick: number;
  /** `sticky`: the target key the session is pinned to, if any. */
  readonly pinned?: string;
}

/** Orders candidates, most preferred first. Every candidate appears exactly once. */
export type StrategyFn = (candidates: readonly Candidate[], ctx: StrategyContext) => Candidate[];
