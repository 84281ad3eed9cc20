/**
 * One request's route: which target each attempt goes to, in what order, and when to stop.
 *
 * Order of attempts: the model's targets, each once, in the strategy's order (another
 * target first); then each fallback model's targets, each once; then, while attempts and
 * the deadline allow, the primary's targets again after a full-jitter backoff that also
 * honours the upstreams' `Retry-After`. Every attempt after the first draws on the retry
 * budget. Cooling targets (here or on another replica) are skipped; if every target of a
 * model is cooling, the one whose cooldown ends first is tried, unless it sits in a long
 * cooldown (bad key, empty account, refused or unknown model: router/long-cooldown.ts),
 * which only its probe ends. A target at its concurrency cap is passed over for one with a
 * free slot; when all are full the request queues (bounded) for the best one.
 *
 * Deep calls (router/deep.ts) also take a place in their upstream's burst window: hot
 * accounts are passed over for cool accounts of the same model first (spread), and only
 * when every account is hot does the model's shed policy apply (router/shed.ts).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Model, Target } from '../config/types.js';
import type { RoutingConfig, Strategy } from '../config/schema.js';
import { GatewayError } from '../errors/codes.js';
import { classifiedAs, type Classified } from '../errors/classify.js';
import type { TargetView } from '../store/types.js';
import { makeAttempt, slotRequest, type Attempt, type AttemptResult, type Next, type Taken } from './attempt.js';
import { fullJitter } from './backoff.js';
import { QueueFullError } from './concurrency.js';
import { isDeep } from './deep.js';
import type { RouterState } from './state.js';
import { shedDecision } from './shed.js';
import { budgetStop, cooledStop, queueFullError } from './stops.js';
import { STRATEGIES } from './strategies/index.js';

export type { Attempt, AttemptResult, Next } from './attempt.js';

export interface RouteOptions {
  readonly model: Model;
  readonly strategy: Strategy;
  /** Session key for `sticky`. */
  readonly session?: string;
  /** The request's `reasoning_effort`, for deep detection. */
  readonly effort?: string | null;
  /** Resolves fallback model names to served models. */
  readonly lookup: (name: string) => Model | undefined;
}

type Views = Map<Target, TargetView>;

export class RouteRun {
  attempts = 0;
  lastFailure: { classified: Classified; error: GatewayError } | null = null;
  /** `sticky` only: whether the session stayed on its pin, moved, or was pinned afresh. */
  sticky: 'pinned' | 'moved' | 'new' | null = null;
  /** Set when a fallback model served (or was tried): `primary->fallback`. */
  fallback: string | null = null;
  /** Set when the burst shedder acted: `model->fallback`, `queued:<ms>` or `rejected`. */
  shed: string | null = null;

  private chain: Model[];
  private chainIdx = 0;
  private readonly tried = new Set<string>();
  private round = 0;
  private roundStartAttempts = 0;
  private stopNow = false;
  private retryHintMs = 0;
  private readonly deadline: number;
  private pinned: string | undefined;
  private pinLoaded = false;
  private shedQueueSince = 0;

  constructor(
    private readonly state: RouterState,
    private readonly cfg: RoutingConfig,
    private readonly opts: RouteOptions,
  ) {
    const chain = [opts.model];
    for (const name of opts.model.fallbacks) {
      const m = opts.lookup(name);
      if (m && !chain.includes(m)) chain.push(m);
    }
    this.chain = chain;
    this.deadline = Date.now() + cfg.deadline_ms;
  }

  /**
   * The next attempt, or why to stop (the last upstream failure, an exhausted retry
   * budget, a full queue, a rejected shed, or no target at all).
   * @throws the abort reason when `signal` fires while waiting (backoff, queue, shed queue).
   */
  async next(signal: AbortSignal): Promise<Next> {
    await this.loadPin();
    for (;;) {
      if (this.stopNow || this.attempts >= this.cfg.max_attempts) return { stop: this.finalError() };
      const left = this.deadline - Date.now();
      if (left <= 0) return { stop: this.lastFailure ? this.finalError() : new GatewayError('GW_ERR_UPSTREAM_TIMEOUT') };

      const model = this.chain[this.chainIdx]!;
      const remaining = model.targets.filter((t) => !this.tried.has(t.key));
      if (remaining.length === 0) {
        const stop = await this.endOfModel(left, signal);
        if (stop) return stop;
        continue;
      }

      const views = await this.viewsOf(remaining);
      let pool = this.admissible(remaining, views);
      if (pool.length === 0) {
        // The rest of this model is cooling: treat it as exhausted.
        for (const t of remaining) this.tried.add(t.key);
        continue;
      }
      // Deep calls spread over cool accounts first; when every account is hot, shed.
      const deep = isDeep(model, this.opts.effort);
      if (deep) pool = pool.filter((t) => views.get(t)!.window < t.upstream.window.threshold);
      if (pool.length === 0) {
        const shed = await this.applyShed(model, signal);
        if (shed) return shed;
        continue;
      }

      const budget = this.spendRetry(model);
      if (budget) return budget;
      const taken = await this.take(model, pool, views, deep, signal);
      if (taken === 'hot') {
        // Every window filled up between the view and the acquire (other requests, other replicas).
        const shed = await this.applyShed(model, signal);
        if (shed) return shed;
        continue;
      }
      if (taken === 'full') {
        // This model is full: its fallbacks (if any) may still have room.
        for (const t of remaining) this.tried.add(t.key);
        continue;
      }
      return { attempt: this.open(model, taken, deep) };
    }
  }

  /** Feeds an attempt's outcome back into health, latency, pins and the stop decision. */
  report(attempt: Attempt, result: AttemptResult): void {
    const { target } = attempt;
    const { health } = this.state;
    if (result.ok === true) {
      health.success(target.key, target.upstream.id);
      this.state.latency.observe(target.key, result.latencyMs);
      if (this.opts.strategy === 'sticky' && this.opts.session) void this.state.store.setPin(this.opts.session, target.key, this.cfg.sticky_ttl_ms);
      return;
    }
    attempt.release();
    if (result.ok === 'aborted') {
      health.release(target.key, target.upstream.id);
      return;
    }
    const { classified } = result;
    health.failure(target.key, target.upstream.id, classified, result.reason ?? result.error.message, result.retryAfterMs);
    if (classified.class === 'timeout' || classified.class === 'stall') this.state.latency.observe(target.key, result.latencyMs);
    if (result.retryAfterMs !== undefined) this.retryHintMs = Math.max(this.retryHintMs, result.retryAfterMs);
    this.lastFailure = { classified, error: result.error };
    if (!classified.retryable) this.stopNow = true;
  }

  /** `sticky`: reads the session's pin once per request. */
  private async loadPin(): Promise<void> {
    if (this.pinLoaded) return;
    this.pinLoaded = true;
    if (this.opts.strategy === 'sticky' && this.opts.session) this.pinned = await this.state.store.getPin(this.opts.session);
  }

  /**
   * Every target of the current model was tried: moves to the next fallback model, or (after
   * a backoff) to a new round of the primary's targets; fallbacks are done for this request.
   * @returns a stop when a whole round made no attempt (only long-cooling targets are left).
   */
  private async endOfModel(left: number, signal: AbortSignal): Promise<Next | null> {
    if (this.chainIdx + 1 < this.chain.length) {
      this.chainIdx++;
      this.tried.clear();
      return null;
    }
    if (this.attempts === this.roundStartAttempts) {
      const { health } = this.state;
      const cooled = this.chain.flatMap((m) => m.targets).map((t) => health.longCooldown(t.key, t.upstream.id));
      return { stop: this.lastFailure ? this.finalError() : cooledStop(cooled.find((c) => c !== null) ?? null) };
    }
    this.roundStartAttempts = this.attempts;
    this.chain = [this.chain[0]!];
    this.chainIdx = 0;
    this.tried.clear();
    const delay = Math.min(left, Math.max(fullJitter(this.round, this.cfg.backoff_base_ms, this.cfg.backoff_cap_ms), this.retryHintMs));
    this.round++;
    this.retryHintMs = 0;
    if (delay > 0) await sleep(delay, undefined, { signal });
    return null;
  }

  /** The shared view (in flight, window, cooldown) of every target, in one store round trip. */
  private async viewsOf(targets: Target[]): Promise<Views> {
    const views = await this.state.store.view(targets.map((t) => ({ key: t.key, upstream: t.upstream.id, windowMs: t.upstream.window.seconds * 1000 })));
    return new Map(targets.map((t, i) => [t, views[i]!]));
  }

  /**
   * The targets that may take a request now. When none may and this model is untried, the
   * cooling target whose cooldown ends first, rather than refuse; never one a long cooldown
   * holds back (a bad key or a refused model does not heal by waiting: only its probe goes).
   */
  private admissible(remaining: Target[], views: Views): Target[] {
    const { health } = this.state;
    const pool = remaining.filter((t) => views.get(t)!.coolingUntil === 0 && health.canAdmit(t.key, t.upstream.id));
    if (pool.length > 0 || this.tried.size > 0) return pool;
    const forceable = remaining.filter((t) => !health.longCooling(t.key, t.upstream.id));
    const endOf = (t: Target): number => Math.max(health.availableAt(t.key, t.upstream.id), views.get(t)!.coolingUntil);
    const soonest = forceable.sort((a, b) => endOf(a) - endOf(b))[0];
    return soonest ? [soonest] : [];
  }

  /** Draws a retry (every attempt after the first) from the budget; a stop when it is spent. */
  private spendRetry(model: Model): Next | null {
    if (this.attempts === 0 || this.state.budget.tryRetry()) return null;
    this.state.onBudgetExhausted?.();
    return { stop: budgetStop(this.lastFailure?.error, this.retryAfterSeconds(model)) };
  }

  /**
   * Orders the pool by the strategy and takes the first free slot, else queues for the best
   * target. `hot`: every deep window filled up; `full`: the queue is full or timed out.
   */
  private async take(model: Model, pool: Target[], views: Views, deep: boolean, signal: AbortSignal): Promise<Taken | 'hot' | 'full'> {
    const candidates = pool.map((t) => ({ target: t, inFlight: views.get(t)!.inFlight, capacity: t.upstream.max_concurrency, latencyMs: this.state.latency.estimate(t.key) }));
    const ordered = STRATEGIES[this.opts.strategy](candidates, { random: this.state.random, tick: this.state.nextTick(), ...(this.pinned ? { pinned: this.pinned } : {}) });
    let allHot = deep;
    for (const c of ordered) {
      const got = await this.state.store.acquire(slotRequest(c.target, deep));
      if (got.ok) return { target: c.target, lease: got.lease, queuedMs: 0 };
      if (got.reason !== 'hot') allHot = false;
    }
    if (allHot) return 'hot';
    const best = ordered[0]!.target;
    try {
      const waited = await this.state.queue.wait(slotRequest(best, deep), signal);
      return { target: best, lease: waited.lease, queuedMs: waited.waitedMs };
    } catch (err) {
      if (!(err instanceof QueueFullError)) throw err;
      this.lastFailure = { classified: classifiedAs('server'), error: queueFullError(model.name, err.reason) };
      return 'full';
    }
  }

  /** Starts the attempt on a taken slot: health admission (a probe outside `healthy`) and the route's marks. */
  private open(model: Model, taken: Taken, deep: boolean): Attempt {
    const { target } = taken;
    const firstOfFallback = this.chainIdx > 0 && this.tried.size === 0;
    this.state.health.admit(target.key, target.upstream.id);
    this.tried.add(target.key);
    this.attempts++;
    if (this.chainIdx > 0) this.fallback = `${this.opts.model.name}->${model.name}`;
    if (this.shedQueueSince > 0 && this.shed === null) this.shed = `queued:${Date.now() - this.shedQueueSince}ms`;
    if (this.opts.strategy === 'sticky' && this.opts.session) {
      this.sticky = this.pinned === undefined ? 'new' : this.pinned === target.key ? 'pinned' : 'moved';
    }
    const fallbackFrom = firstOfFallback ? this.opts.model.name : undefined;
    return makeAttempt(taken, { model, number: this.attempts, deep, ...(fallbackFrom ? { fallbackFrom } : {}) }, this.state);
  }

  /**
   * Applies the model's shed policy when every account's window is hot (router/shed.ts).
   * @returns a stop (reject, or a shed-queue wait that ran out), or null to route again.
   */
  private async applyShed(model: Model, signal: AbortSignal): Promise<Next | null> {
    const d = shedDecision(model, this.opts.lookup, this.shedQueueSince, Date.now());
    if (d.notify) this.state.onShed?.(model.name, d.notify);
    if (d.kind === 'downgrade') {
      this.shed = `${model.name}->${d.to.name}`;
      this.chain[this.chainIdx] = d.to;
      this.chain = this.chain.filter((m, i) => i <= this.chainIdx || m !== d.to);
      this.tried.clear();
      return null;
    }
    if (d.kind === 'wait') {
      if (this.shedQueueSince === 0) this.shedQueueSince = Date.now();
      await sleep(d.ms, undefined, { signal });
      return null;
    }
    this.shed = 'rejected';
    return { stop: d.stop };
  }

  private finalError(): GatewayError {
    return this.lastFailure?.error ?? new GatewayError('GW_ERR_NO_TARGET');
  }

  /** Seconds until a target of `model` may take traffic, else the upstreams' Retry-After hint. */
  private retryAfterSeconds(model: Model): string {
    const soonest = Math.min(...model.targets.map((t) => this.state.health.availableAt(t.key, t.upstream.id) || Infinity));
    const ms = Number.isFinite(soonest) ? soonest - Date.now() : this.retryHintMs;
    return String(Math.max(1, Math.ceil(ms / 1000)));
  }
}
