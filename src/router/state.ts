/**
 * What a request's route reads and updates of its replica's routing state: target health,
 * latency estimates, the retry budget, the local slot queue and the shared store (the
 * `Router` in index.ts is the one implementation).
 */
import type { StateStore } from '../store/index.js';
import type { SlotQueue } from './concurrency.js';
import type { HealthBoard } from './health.js';
import type { LatencyBoard } from './latency.js';
import type { RetryBudget } from './retry-budget.js';
import type { StallDetector } from './stalls.js';

export interface RouterState {
  readonly health: HealthBoard;
  readonly latency: LatencyBoard;
  readonly stalls: StallDetector;
  readonly budget: RetryBudget;
  readonly queue: SlotQueue;
  readonly store: StateStore;
  readonly random: () => number;
  nextTick(): number;
  onBudgetExhausted?: () => void;
  onShed?: (model: string, policy: string) => void;
}
