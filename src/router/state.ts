/**
 * What a request's route reads and updates of its replica's routing state: target health,
 * latency estimates, the retry budget, the local slot queue and the shared store (the
 * `Router` in index.ts is the one implementation).
 */
import type { Model } from '../config/types.js';
import type { SpentAccounts } from '../limits/index.js';
import type { Strategy } from '../config/schema.js';
import type { RouterSlots } from '../store/roles.js';
import type { FirstGate, GateAnswer } from '../store/types.js';
import type { SlotQueue } from './concurrency.js';
import type { HealthBoard } from './health.js';
import type { HoldTimes, LatencyBoard } from './latency.js';
import type { RetryBudget } from './retry-budget.js';
import type { StallDetector } from './stalls.js';
import type { DeepTimes } from './deep.js';

export interface RouterState {
  readonly health: HealthBoard;
  readonly latency: LatencyBoard;
  /** Typical time a served call holds its place, per account (the wait for a session's full account). */
  readonly holds: HoldTimes;
  readonly stalls: StallDetector;
  /** Typical served deep call time per model (the shed ladder's wait). */
  readonly deepTimes: DeepTimes;
  /** The retry budget of requests for a model (by name). */
  budgetOf(model: string): RetryBudget;
  readonly queue: SlotQueue;
  readonly store: RouterSlots;
  readonly random: () => number;
  nextTick(): number;
  onBudgetExhausted?: () => void;
  onShed?: (model: string, policy: string) => void;
  /** A provider's rate-limit headers said an account's window is spent (router/rate-windows.ts). */
  onWindowSpent?: (upstream: string) => void;
}

/** What one request asks of its route. */
export interface RouteOptions {
  readonly model: Model;
  readonly strategy: Strategy;
  /** Session key, for `sticky` and cache affinity (router/affinity.ts). */
  readonly session?: string;
  /** How long the request asked its prompt cache to live, ms: the session's pin lasts at least that (apis/cache-lifetime.ts). */
  readonly cacheLifetimeMs?: number;
  /** The request body's size, bytes, when known: a prompt too short to cache is not held for its account. */
  readonly promptBytes?: number;
  /** The request's `reasoning_effort`, for deep detection. */
  readonly effort?: string | null;
  /** Set when the request was moved to `model` for its size (its context fallback): the model it asked for (pipeline/context-window.ts). */
  readonly movedFrom?: string;
  /** Resolves fallback model names to served models. */
  readonly lookup: (name: string) => Model | undefined;
  /** A target to try first under `sticky` instead of the session's pin (a continued response's owner). */
  readonly pinned?: string;
  /** The key's priority: `background` calls skip the shed ladder's wait (absent: interactive). */
  readonly priority?: 'interactive' | 'background';
  /** The request's admission under its limits, made by its first store call (router/first.ts); its spent accounts are passed over. */
  readonly gate?: RouteGate;
}

/** The request's admission under its key's limits and budgets (limits/gate.ts), as the route makes it. */
export interface RouteGate {
  /** What the store reads and takes (null: nothing). */
  readonly request: FirstGate | null;
  /** Judges the store's answer; @returns the spent accounts; @throws the 429 of a refusal (nothing held then). */
  accept(answer: GateAnswer): SpentAccounts | null;
}
