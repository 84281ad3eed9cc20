/**
 * The router: the routing state of this replica (target health, latency estimates, retry
 * budget, the local slot queue) plus the shared store (in-flight slots, burst windows,
 * cooldowns, pins), and `begin()`, which starts the route of one request (see run.ts).
 */
import type { RoutingConfig } from '../config/schema.js';
import type { RouterSlots } from '../store/roles.js';
import { SlotQueue } from './concurrency.js';
import { HealthBoard } from './health.js';
import { HoldTimes, LatencyBoard } from './latency.js';
import { StallDetector } from './stalls.js';
import { DeepTimes, isDeep } from './deep.js';
import { FleetTimings } from './fleet-timings.js';
import { RetryBudget } from './retry-budget.js';
import { RouteRun, type RouteOptions } from './run.js';
import type { RouterState } from './state.js';

export type { RouterState } from './state.js';

export class Router implements RouterState {
  readonly health: HealthBoard;
  readonly latency: LatencyBoard;
  readonly holds: HoldTimes;
  readonly stalls = new StallDetector();
  readonly deepTimes = new DeepTimes();
  /** The fleet's learned timings, shared through the store (router/fleet-timings.ts). */
  readonly fleet: FleetTimings;
  /** The retry budget of each model (by its name), so one broken model cannot spend the others' retries. */
  private readonly budgets = new Map<string, RetryBudget>();
  readonly queue: SlotQueue;
  onBudgetExhausted?: () => void;
  onShed?: (model: string, policy: string) => void;
  onWindowSpent?: (upstream: string) => void;
  private tick = 0;

  constructor(
    private readonly cfg: RoutingConfig,
    readonly store: RouterSlots,
    readonly random: () => number = Math.random,
  ) {
    this.health = new HealthBoard(cfg.cooldown);
    this.health.onTrip = (key, until) => void store.setCooldown(key, until);
    this.latency = new LatencyBoard(cfg.latency_decay_ms);
    this.holds = new HoldTimes();
    this.queue = new SlotQueue(store, cfg.queue.max, cfg.queue.timeout_ms);
    this.fleet = new FleetTimings(store, this.deepTimes, this.stalls);
  }

  nextTick(): number {
    return this.tick++;
  }

  /** The retry budget of requests for `model` (a configured model's name: one per model). */
  budgetOf(model: string): RetryBudget {
    let b = this.budgets.get(model);
    if (!b) this.budgets.set(model, (b = new RetryBudget(this.cfg.retry_budget)));
    return b;
  }

  /** Starts routing one request; counts it for its model's retry budget. */
  begin(opts: RouteOptions): RouteRun {
    this.budgetOf(opts.model.name).onRequest();
    // Only deep calls use the learned timing (the stall watch, the wait rung).
    if (isDeep(opts.model, opts.effort)) this.fleet.maybeSync();
    return new RouteRun(this, this.cfg, opts);
  }
}
