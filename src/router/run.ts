/**
 * One request's route: which target each attempt goes to, in what order, and when to stop.
 * Attempts go to the model's targets, each once, in the strategy's order; then to each
 * fallback model's targets once (router/chain.ts); then, within max_attempts and the deadline,
 * to the primary's targets again after a full-jitter backoff (at least the upstreams'
 * Retry-After). Attempts after the first draw on the retry budget, except a move away from an
 * account that throttled (it uses up neither the budget nor max_attempts; after max_attempts
 * of them a call must end first: router/shed-run.ts) and a move down the shed ladder. Cooling
 * targets are skipped; if all are, the one whose cooldown ends first is tried, unless a long
 * cooldown holds it. An account whose budget is spent is passed over until its period ends. A
 * deep call goes only to an account with headroom under its learned capacity; when every one
 * is hot, or every one refused it, the model's shed policy applies (router/shed.ts). When every target is full the request queues (router/take.ts).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Model, Target } from '../config/types.js';
import type { RoutingConfig } from '../config/schema.js';
import { GatewayError } from '../errors/codes.js';
import { classifiedAs, type Classified } from '../errors/classify.js';
import { makeAttempt, type Attempt, type AttemptResult, type Next, type Taken } from './attempt.js';
import { fullJitter } from './backoff.js';
import { pinMarks, usesAffinity, waitForWarm, type CacheMark } from './affinity.js';
import { firstPass } from './first.js';
import { stallWatch, windowsSeen, type StallWatch } from './feedback.js';
import type { RateWindows } from '../providers/types.js';
import { QueueFullError } from './concurrency.js';
import { isDeep } from './deep.js';
import type { SpentAccounts } from '../limits/index.js';
import type { RouteOptions, RouterState } from './state.js';
import { brokeAfterCommit, settle } from './settle.js';
import { ModelChain } from './chain.js';
import { RouteFailures } from './failures.js';
import { ShedRun } from './shed-run.js';
import { budgetStop, cooledStop, queueFullError } from './stops.js';
import { admissible, takeSlot } from './take.js';
import { RouteViews, type Views } from './views.js';

export type { Attempt, AttemptResult, Next } from './attempt.js';
export type { RouteOptions } from './state.js';

export class RouteRun {
  attempts = 0;
  /** The last upstream failure (the answer when the route stops), if any. */
  get lastFailure(): { classified: Classified; error: GatewayError } | null {
    return this.failures.last;
  }
  /** `sticky` only: whether the session stayed on its pin, moved, or was pinned afresh. */
  sticky: 'pinned' | 'moved' | 'new' | null = null;
  /** Cache affinity (router/affinity.ts): the session served on its account, moved off it, or new. */
  cache: CacheMark | null = null;
  fallback: string | null = null; // set when a fallback model served (or was tried): `primary->fallback`

  private readonly chain: ModelChain; // the models this route walks (router/chain.ts)
  private round = 0;
  private roundStartAttempts = 0;
  private roundFailures = 0; // failures of this round that were not throttles
  private readonly deadline: number;
  private pinned: string | undefined | null = null; // the session's pin, read by the first store call (null: not made yet)
  private readonly shedRun: ShedRun; // this request's walk down the shed ladder (router/shed-run.ts)
  private throttled = false; // the last attempt was throttled by its account: the next one is routing, not a retry
  private throttles = 0; // attempts of this request its accounts throttled (they do not count toward max_attempts)
  private base = 0; // attempts made before the shed ladder moved the route to another model (not counted toward that model's max_attempts)
  private given: Promise<void> = Promise.resolve(); // the last throttled attempt's slot back, the queue woken: afterThrottles must not wake on its own call
  private stallMoved = false; // an attempt of this request was left because it stalled (router/feedback.ts)
  private readonly failures = new RouteFailures(); // the last failure and the waits named (router/failures.ts)
  private readonly views: RouteViews; // the views each pass decides on (router/views.ts)
  private readonly affinity: boolean; // cache affinity applies (router/affinity.ts)
  private spent: SpentAccounts | undefined; // accounts whose budget is spent (the first store call finds them)

  constructor(
    private readonly state: RouterState,
    private readonly cfg: RoutingConfig,
    private readonly opts: RouteOptions,
  ) {
    this.chain = new ModelChain(
      opts.model,
      opts.model.fallbacks.map((name) => opts.lookup(name)),
    );
    this.deadline = Date.now() + cfg.deadline_ms;
    this.shedRun = new ShedRun(state, opts, cfg.retry_after_cap_ms, () => this.spent);
    this.views = new RouteViews(state.store);
    this.affinity = usesAffinity(cfg, opts);
  }

  /** Set when the burst shedder acted: `model->fallback`, `queued:<ms>ms`, `effort:<a>-><b>` or `rejected`. */
  get shed(): string | null {
    return this.shedRun.mark;
  }
  /** The effort this request's attempts send: the client's, unless the shed ladder lowered it. */
  get effort(): string | null {
    return this.shedRun.effort ?? this.opts.effort ?? null;
  }

  /**
   * The next attempt, or why to stop (the last upstream failure, an exhausted retry budget, a
   * full queue, a rejected shed, or no target at all); a deep call its accounts refused goes down the shed ladder first.
   * @throws the abort reason when `signal` fires while waiting (backoff, queue, shed queue).
   */
  async next(signal: AbortSignal): Promise<Next> {
    for (;;) {
      const next = await this.route(signal);
      if (!('stop' in next) || !this.goBelow()) return next;
    }
  }

  private async route(signal: AbortSignal): Promise<Next> {
    if (this.pinned === null) {
      const [model, deep] = [this.chain.first, isDeep(this.chain.first, this.effort)];
      const first = await firstPass(this.state, this.opts, model, deep, this.affinity, this.spent);
      [this.pinned, this.spent] = [first.pinned, first.spent ?? this.spent];
      if (first.taken) return { attempt: this.open(model, first.taken, deep) };
      if (first.views) this.views.use(first.views);
    }
    for (;;) {
      if (this.failures.stopNow || this.attempts - this.throttles - this.base >= this.cfg.max_attempts) return { stop: this.failures.final() };
      const left = this.deadline - Date.now();
      if (left <= 0) return { stop: this.failures.last ? this.failures.final() : new GatewayError('GW_ERR_UPSTREAM_TIMEOUT') };

      const model = this.chain.current;
      if (this.throttles >= this.cfg.max_attempts) {
        const deep = isDeep(model, this.effort); // throttled max_attempts times: the next attempt waits for a call there to end (shed-run.ts)
        await this.given;
        const got = await this.shedRun.afterThrottles(model, deep, this.throttles, signal, this.chain.later());
        if ('stop' in got) return got;
        this.chain.tried.clear();
        return { attempt: this.open(model, got, deep) };
      }
      const remaining = this.chain.untried().filter((t) => !this.spent?.has(t.upstream.id));
      if (remaining.length === 0) {
        const stop = await this.endOfModel(left, signal);
        if (stop) return stop;
        continue;
      }

      // The first attempt may order on cached views; nothing is skipped or shed on them.
      const seen = await this.views.of(remaining, this.attempts === 0);
      const views = seen.views;
      const admitted = admissible(this.state.health, remaining, views, this.chain.tried.size > 0);
      // Deep calls spread over accounts with headroom first; when every account is hot (or the call waited past the wait rung's bound), shed.
      const deep = isDeep(model, this.effort);
      let pool = deep ? this.shedRun.roomFor(model, this.chain.later(), admitted, views) : admitted;
      if (pool.length === 0 && this.views.reread(seen)) continue;
      if (admitted.length === 0) {
        // The rest of this model is cooling: treat it as exhausted.
        for (const t of remaining) this.chain.tried.add(t.key);
        continue;
      }
      if (pool.length === 0) {
        const shed = await this.applyShed(model, admitted, views, deep, signal);
        if (shed) return shed;
        continue;
      }

      // The first failover to an account that is answering (not cooling, most calls of the last minute
      // succeeded) is always allowed (issue 14); retries beyond it, or onto accounts not known to answer, draw on the budget.
      const away = this.attempts === 1 ? pool.filter((t) => t.upstream.id !== this.failures.upstream && this.state.health.answering(t.key, t.upstream.id)) : [];
      if (away.length > 0) pool = away;
      const budget = this.spendRetry(away.length > 0);
      if (budget) return budget;
      // Cache affinity: the session's account is full; a short wait for it may beat rebuilding its cache elsewhere.
      const warm =
        this.affinity && this.attempts === 0
          ? await waitForWarm(this.state, this.cfg, this.opts, this.pinned, admitted, views, deep, signal, this.deadline - Date.now())
          : null;
      if (warm) return { attempt: this.open(model, warm, deep) };
      const route = { strategy: this.opts.strategy, pinned: this.pinned ?? undefined, affinity: this.affinity };
      const look = { fresh: seen.fresh, extra: remaining.filter((t) => !pool.includes(t)) };
      const taken = await takeSlot(this.state, route, pool, views, deep, signal, look, this.throttles > 0);
      if (taken === 'hot') {
        // Every account filled up between the view and the acquire (other requests, other replicas).
        const shed = await this.applyShed(model, pool, views, deep, signal);
        if (shed) return shed;
        continue;
      }
      if ('recheck' in taken) {
        // Every target refused on cached views: the next pass decides on the views the admission read.
        this.views.use(taken.recheck);
        continue;
      }
      if (taken instanceof QueueFullError) {
        // This model is full: its fallbacks (if any) may still have room.
        this.failures.last = { classified: classifiedAs('server'), error: queueFullError(model.name, taken.reason) };
        for (const t of remaining) this.chain.tried.add(t.key);
        continue;
      }
      return { attempt: this.open(model, taken, deep) };
    }
  }

  /**
   * Feeds an attempt's outcome back into the routing state (router/settle.ts) and the stop
   * decision. A call throttled by its account is a routing signal, not a failure: the
   * request moves on, with no retry draw and not counted toward max_attempts.
   */
  report(attempt: Attempt, result: AttemptResult): void {
    const settled = settle(this.state, this.cfg, this.opts, attempt, result);
    if (settled === null || result.ok !== false) return;
    const { classified } = result;
    if (settled.throttle) {
      this.given = settled.given;
      this.throttled = true;
      this.throttles++;
    } else this.roundFailures++;
    if (classified.class === 'stall') this.stallMoved = true;
    this.failures.note(attempt.target.upstream.id, result);
  }

  /** The stall watch of a running deep attempt (router/feedback.ts), or null. */
  stallWatch = (attempt: Attempt): StallWatch | null => stallWatch(this.state, attempt, { laterModels: this.chain.later().length > 0, moved: this.stallMoved });
  rateWindows = (attempt: Attempt, w: RateWindows): void => windowsSeen(this.state, attempt, w, this.cfg.retry_after_cap_ms); // an answer's rate-limit headers (router/feedback.ts)
  broke = (attempt: Attempt): void => brokeAfterCommit(this.state, this.opts, attempt, this.pinned ?? undefined); // a stream broken after its first byte pins nothing (router/settle.ts)

  /**
   * Every target of the current model was tried: moves to the next fallback model, or (after
   * a backoff) to a new round of the primary's targets; fallbacks are done for this request.
   * @returns a stop when a whole round made no attempt (only long-cooling targets are left), or
   *   when the next round would need a retry the budget does not have.
   */
  private async endOfModel(left: number, signal: AbortSignal): Promise<Next | null> {
    if (this.chain.advance()) return null;
    if (this.failures.longWait) return { stop: this.failures.final() };
    if (this.attempts === this.roundStartAttempts) {
      const { health } = this.state;
      const cooled = this.chain.targets().map((t) => health.longCooldown(t.key, t.upstream.id));
      // Nothing tried: the accounts passed over for their budget say why, else a long cooldown.
      return { stop: this.failures.last ? this.failures.final() : (this.spent?.error() ?? cooledStop(cooled.find((c) => c !== null) ?? null)) };
    }
    // The next round's first attempt is a retry: with the budget spent, stop now rather than after the backoff.
    if (!this.throttled && this.attempts - this.throttles - this.base < this.cfg.max_attempts && !this.state.budgetOf(this.opts.model.name).hasRoom())
      return this.spendRetry(false);
    const onlyThrottled = this.roundFailures === 0 && this.throttles > 0;
    this.roundStartAttempts = this.attempts;
    this.roundFailures = 0;
    this.chain.restart();
    const delay = Math.min(left, Math.max(fullJitter(this.round, this.cfg.backoff_base_ms, this.cfg.backoff_cap_ms), this.failures.takeHintMs()));
    this.round++;
    // Refused for load alone: a call ending there (its place, under the limit just learned) beats the generic wait named. A deep call
    // refused waits no longer than the wait rung's bound, and a rate limit's wait the bound cuts short is not begun: it goes below.
    const [model, deep] = [this.chain.first, isDeep(this.chain.first, this.effort)];
    const refused = deep && (onlyThrottled || this.failures.last?.classified.class === 'rate_limited');
    const wait = refused ? this.shedRun.waitAfterRefusals(model, this.chain.later(), delay) : delay;
    if (wait < delay && (wait <= 0 || !onlyThrottled) && this.goBelow()) return null;
    if (onlyThrottled && wait > 0) {
      const got = await this.shedRun.placeWithin(model, deep, wait, signal);
      return got ? { attempt: this.open(model, got, deep) } : null;
    }
    if (delay > 0) await sleep(delay, undefined, { signal });
    return null;
  }

  /** Draws a retry from the budget (a stop when spent); leaving a throttled account, or a first failover to a healthy one (`free`), draws nothing. */
  private spendRetry(free: boolean): Next | null {
    const throttled = this.throttled;
    this.throttled = false;
    if (throttled || free || this.attempts === 0 || this.state.budgetOf(this.opts.model.name).tryRetry()) return null;
    this.state.onBudgetExhausted?.();
    return { stop: budgetStop(this.failures.last?.error, this.failures.hintLeftMs(), this.cfg) };
  }

  /** Starts the attempt on a taken slot: health admission (a probe outside `healthy`) and the route's marks. */
  private open(model: Model, taken: Taken, deep: boolean): Attempt {
    const { target } = taken;
    const from = this.opts.movedFrom ?? this.opts.model.name; // the model asked for (a context fallback's route begins on the fallback)
    const firstOfFallback = (this.chain.onFallback && this.chain.tried.size === 0) || (this.opts.movedFrom !== undefined && this.attempts === 0);
    this.state.health.admit(target.key, target.upstream.id);
    this.chain.tried.add(target.key);
    this.attempts++;
    if (this.chain.onFallback || this.opts.movedFrom !== undefined) this.fallback = `${from}->${model.name}`;
    this.shedRun.opened();
    [this.sticky, this.cache] = pinMarks(this.opts, this.affinity, this.pinned, target.key, [this.sticky, this.cache]);
    const fallbackFrom = firstOfFallback ? from : undefined;
    const effort = this.shedRun.effort ?? undefined;
    return makeAttempt(taken, { model, number: this.attempts, deep, ...(fallbackFrom ? { fallbackFrom } : {}), ...(effort ? { effort } : {}) }, this.state);
  }

  /** The shed ladder when every account of `hot` (the model's admissible targets) is hot (router/shed-run.ts): a place waited for, a stop (503), or null after a move (look again). */
  private async applyShed(model: Model, hot: Target[], views: Views, deep: boolean, signal: AbortSignal): Promise<Next | null> {
    const step = await this.shedRun.step(model, this.chain.later(), hot, views, signal, this.throttles > 0);
    if (step === null || step === 'lowered') return null;
    if ('target' in step) return { attempt: this.open(model, step, deep) };
    if ('stop' in step) return step;
    this.moved(step);
    return null;
  }

  /** A deep call about to stop on its accounts' refusals for load or rate goes down the shed ladder instead, once (shed-run.ts below); whether it moved. */
  private goBelow(): boolean {
    const model = this.chain.current;
    const refused = this.throttles > 0 || this.failures.last?.classified.class === 'rate_limited';
    const below = refused && isDeep(model, this.effort) ? this.shedRun.below(model, this.chain.later()) : null;
    if (below) this.moved(below);
    return below !== null;
  }

  /** Moved down the shed ladder: the next attempt is routing, not a retry, with max_attempts of its own; a fallback left is unmarked (open() marks the one serving). */
  private moved(step: { readonly to: Model; readonly reasoning: boolean }): void {
    this.chain.moveTo(step.to, step.reasoning);
    [this.throttled, this.base, this.throttles, this.roundStartAttempts, this.fallback] = [true, this.attempts, 0, this.attempts, null];
    this.failures.longWait = false;
  }
}
