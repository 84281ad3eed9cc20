/**
 * One request's walk down the shed ladder (the rungs themselves are decided in shed.ts): how
 * long it has waited for a place, which rungs it has been counted on, the `x-switchyard-shed`
 * mark, and the effort it was lowered to. RouteRun (run.ts) asks it what to do when every
 * account of a model is hot, and applies the move it returns.
 */
import type { Model, Target } from '../config/types.js';
import type { GatewayError } from '../errors/codes.js';
import type { SpentAccounts } from '../limits/index.js';
import type { TargetView } from '../store/types.js';
import type { Taken } from './attempt.js';
import { rungsBelow, shedDecision, waitBoundMs, type ShedDecision } from './shed.js';
import type { RouteOptions, RouterState } from './state.js';
import { overloadedStop, shedStop } from './stops.js';
import { expectedPlaceWaitMs, waitForPlace } from './take.js';

/** What the route does next: a place waited for, a stop, a move to another model, the same model at a lower effort, or look again (the wait ended without a place). */
export type ShedStep = Taken | { readonly stop: GatewayError } | { readonly to: Model; readonly reasoning: boolean } | 'lowered' | null;

export class ShedRun {
  /** `x-switchyard-shed`: `model->fallback`, `queued:<ms>ms`, `effort:<from>-><to>` or `rejected`. */
  mark: string | null = null;
  /** The effort the lower-effort rung set for this request's later attempts (null: not lowered). */
  effort: string | null = null;
  /** Epoch ms the route began (the ladder's wait counts from it). */
  private readonly began = Date.now();
  private queueSince = 0;
  /** Time waited on the wait rung, ms (infinite once a wait ended without a place). */
  private waitedMs = 0;
  /** Rungs already counted for this request. */
  private readonly counted = new Set<string>();
  /** The route went below the wait once on its accounts' refusals ({@link below}). */
  private wentBelow = false;

  /**
   * @param capMs the longest wait a stop names (routing.retry_after_cap_ms), ms.
   * @param spent the accounts whose budget the route found spent (router/run.ts: its first store call reads them).
   */
  constructor(
    private readonly state: RouterState,
    private readonly opts: RouteOptions,
    private readonly capMs: number,
    private readonly spent: () => SpentAccounts | undefined,
  ) {}

  /**
   * The targets of `admitted` with a deep place for this request now (below their learned
   * limits on `views`); none when it waited on the wait rung past the rung's bound with a rung
   * below (shed.ts waitBoundMs): the route then sheds rather than take a place that freed.
   * @param later the models after `model` in the route's chain.
   */
  roomFor(model: Model, later: readonly Model[], admitted: Target[], views: ReadonlyMap<Target, TargetView>): Target[] {
    const bound = this.queueSince > 0 ? this.boundMs(model, later) : null;
    const overdue = bound !== null && Date.now() - this.began > bound;
    return overdue ? [] : admitted.filter((t) => views.get(t)!.deep < views.get(t)!.limit);
  }

  /** An attempt opens: one that took a place after waiting for one is marked `queued:<ms>ms`, from its first wait. */
  opened(): void {
    if (this.queueSince > 0 && (this.mark === null || this.mark.startsWith('queued:'))) this.mark = `queued:${Date.now() - this.queueSince}ms`;
  }

  /** Counts the rung `notify` for this request once (`switchyard_sheds_total`). */
  private count(model: Model, notify: ShedDecision['notify']): void {
    if (!this.counted.has(notify)) this.state.onShed?.(model.name, notify);
    this.counted.add(notify);
  }

  /** The bound of the wait rung for `model` (shed.ts waitBoundMs), ms from the route's start; null when unbounded. */
  private boundMs(model: Model, later: readonly Model[]): number | null {
    const priority = this.opts.priority ?? 'interactive';
    return waitBoundMs(model, { lookup: this.opts.lookup, later, priority, typicalMs: this.state.deepTimes.boundMs(model.name) });
  }

  /**
   * How long a deep call whose every account refused it (for load, or a rate limit) may wait for a place there
   * (router/run.ts endOfModel), ms: `ms` (the wait the refusals named), cut to what is left of
   * the wait rung's bound when a rung lies below; 0 or less: go below instead of waiting.
   */
  waitAfterRefusals(model: Model, later: readonly Model[], ms: number): number {
    const bound = this.boundMs(model, later);
    return bound === null ? ms : Math.min(ms, bound - (Date.now() - this.began));
  }

  /**
   * The rung below the wait for a deep call to `model` that its accounts refused for load or
   * rate, when the route would otherwise stop on their refusal (a relayed 429, an exhausted
   * retry budget, `upstream_overloaded`): another reasoning model of `later`, else the model's
   * shed fallback (`ladder`; `downgrade`: else its first fallback). Marked and counted as the
   * ladder's rungs are. Null when there is none, the policy has none (`queue`, `reject`), or the
   * route went below once already.
   */
  below(model: Model, later: readonly Model[]): { readonly to: Model; readonly reasoning: boolean } | null {
    const { policy } = model.shed;
    if (this.wentBelow || (policy !== 'ladder' && policy !== 'downgrade')) return null;
    const { reasoning, fallback } = rungsBelow(model, { lookup: this.opts.lookup, later }, policy === 'downgrade');
    const to = reasoning ?? fallback;
    if (!to) return null;
    this.wentBelow = true;
    this.count(model, reasoning ? 'fallback' : 'downgrade');
    this.mark = `${model.name}->${to.name}`;
    return { to, reasoning: reasoning !== undefined };
  }

  /**
   * After its accounts throttled it `max_attempts` times, a request tries again only once a
   * call on one of the model's admissible targets ended and a place is free, first come first served, within the
   * ladder's longest wait (`wait_ms` + the cap, from the route's start; a deep call with a rung
   * below: the wait rung's bound, {@link waitAfterRefusals}): the limits just learned
   * hold the places, so this waits for the account to take one more instead of asking it again
   * at once. When that time is up: 503 upstream_overloaded, naming a short wait.
   * @throws the abort reason when `signal` fires while waiting.
   */
  async afterThrottles(
    model: Model,
    deep: boolean,
    throttles: number,
    signal: AbortSignal,
    later: readonly Model[],
  ): Promise<Taken | { readonly stop: GatewayError }> {
    const longest = model.shed.wait_ms + this.capMs - (Date.now() - this.began);
    const left = deep ? this.waitAfterRefusals(model, later, longest) : longest;
    const got = left > 0 ? await this.placeWithin(model, deep, left, signal) : null;
    if (got) {
      if (this.mark === null) this.mark = `queued:${got.queuedMs}ms`;
      return got;
    }
    return { stop: overloadedStop(model.name, throttles, this.capMs) };
  }

  /**
   * Within `ms`, a place on one of `model`'s admissible targets once a call there ends (first
   * come first served, at the head of the line): what a request whose every account refused it
   * for load waits for instead of the wait the refusals named (router/run.ts endOfModel), and
   * after max_attempts throttles within the ladder's longest wait ({@link afterThrottles}).
   * @returns the slot, or null when none freed in time.
   * @throws the abort reason when `signal` fires while waiting.
   */
  async placeWithin(model: Model, deep: boolean, ms: number, signal: AbortSignal): Promise<Taken | null> {
    const { health } = this.state;
    const targets = model.targets.filter((t) => !this.spent()?.has(t.upstream.id) && health.canAdmit(t.key, t.upstream.id));
    if (targets.length === 0) return null;
    if (deep && this.queueSince === 0) this.queueSince = Date.now(); // a deep call's wait counts toward the wait rung's bound and its mark
    const until = Date.now() + ms;
    await this.state.queue.released(
      targets.map((t) => t.upstream.id),
      ms,
      signal,
    );
    const left = until - Date.now();
    return left > 0 ? waitForPlace(this.state, targets, left, signal, deep, true) : null;
  }

  /**
   * The next rung for a deep call to `model` whose every account is hot.
   * @param later the models after `model` in the route's chain.
   * @param hot the model's admissible (hot) targets, for the wait rung.
   * @param throttled an account of this request's refused it: it waits at the head of the line.
   * @throws the abort reason when `signal` fires while waiting.
   */
  async step(
    model: Model,
    later: readonly Model[],
    hot: readonly Target[],
    views: ReadonlyMap<Target, TargetView>,
    signal: AbortSignal,
    throttled = false,
  ): Promise<ShedStep> {
    const waitedMs = model.shed.policy === 'queue' ? this.waitedMs : Math.max(this.waitedMs, Date.now() - this.began);
    const typicalMs = this.state.deepTimes.boundMs(model.name);
    const expectedWaitMs = expectedPlaceWaitMs(this.state, hot, views, typicalMs, this.queueSince > 0);
    const d = shedDecision(model, {
      lookup: this.opts.lookup,
      later,
      priority: this.opts.priority ?? 'interactive',
      waitedMs,
      typicalMs,
      expectedWaitMs,
      effort: this.effort ?? this.opts.effort ?? null,
      capMs: this.capMs,
    });
    this.count(model, d.notify);
    switch (d.kind) {
      case 'wait': {
        if (this.queueSince === 0) this.queueSince = Date.now();
        const t0 = Date.now();
        const got = await this.waitRung(model, hot, d.ms, signal, throttled, d.untilKnown === true);
        this.waitedMs += Date.now() - t0;
        // The typical call time became known: the next pass decides the wait again with it.
        if (got === 'known') return null;
        // Nothing freed in time (or the line was full): the next pass takes the next rung.
        if (!got) this.waitedMs = Number.POSITIVE_INFINITY;
        return got;
      }
      case 'reject':
        this.mark = 'rejected';
        return { stop: shedStop(model.name, expectedWaitMs, this.capMs) };
      case 'lower':
        this.mark = `effort:${d.from}->${d.effort}`;
        this.effort = d.effort;
        return 'lowered';
      default:
        this.mark = `${model.name}->${d.to.name}`;
        return { to: d.to, reasoning: d.kind === 'reasoning' };
    }
  }

  /**
   * The wait rung: a place on `hot` within `ms`; with `untilKnown`, `known` as soon as the
   * model's typical deep call time becomes known (the wait's bound was provisional).
   */
  private async waitRung(
    model: Model,
    hot: readonly Target[],
    ms: number,
    signal: AbortSignal,
    front: boolean,
    untilKnown: boolean,
  ): Promise<Taken | null | 'known'> {
    if (!untilKnown) return waitForPlace(this.state, hot, ms, signal, true, front);
    const known = new AbortController();
    const off = this.state.deepTimes.onKnown(model.name, () => known.abort());
    try {
      return await waitForPlace(this.state, hot, ms, AbortSignal.any([signal, known.signal]), true, front);
    } catch (err) {
      if (signal.aborted || !known.signal.aborted) throw err;
      return 'known';
    } finally {
      off();
    }
  }
}
