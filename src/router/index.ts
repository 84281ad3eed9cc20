/**
 * The router: the routing state shared by all requests of this replica (target health,
 * latency estimates, concurrency slots, retry budget, session pins) and `begin()`, which
 * starts the route of one request (see run.ts).
 */
import type { RoutingConfig } from '../config/schema.js';
import { ConcurrencyBoard } from './concurrency.js';
import { HealthBoard } from './health.js';
import { LatencyBoard } from './latency.js';
import { RetryBudget } from './retry-budget.js';
import { RouteRun, type RouteOptions } from './run.js';
import { SessionPins } from './sticky.js';

export interface RouterState {
  readonly health: HealthBoard;
  readonly latency: LatencyBoard;
  readonly slots: ConcurrencyBoard;
  readonly budget: RetryBudget;
  readonly pins: SessionPins;
  readonly random: () => number;
  nextTick(): number;
  onBudgetExhausted?: () => void;
}

export class Router implements RouterState {
  readonly health: HealthBoard;
  readonly latency: LatencyBoard;
  readonly slots: ConcurrencyBoard;
  readonly budget: RetryBudget;
  readonly pins: SessionPins;
  onBudgetExhausted?: () => void;
  private tick = 0;

  constructor(
    private readonly cfg: RoutingConfig,
    readonly random: () => number = Math.random,
  ) {
    this.health = new HealthBoard(cfg.cooldown);
    this.latency = new LatencyBoard(cfg.latency_decay_ms);
    this.slots = new ConcurrencyBoard(cfg.queue.max, cfg.queue.timeout_ms);
    this.budget = new RetryBudget(cfg.retry_budget);
    this.pins = new SessionPins(cfg.sticky_ttl_ms);
  }

  nextTick(): number {
    return this.tick++;
  }

  /** Starts routing one request; counts it for the retry budget. */
  begin(opts: RouteOptions): RouteRun {
    this.budget.onRequest();
    return new RouteRun(this, this.cfg, opts);
  }
}
