/**
 * The shed ladder for a deep call that found every account of its model hot (deep calls in
 * flight at the account's learned capacity), by the model's `shed.policy`. The rule: queue up
 * to a bounded wait, then shed; a 429 is only ever the client's own key over its limits, so
 * the last rung is a 503 naming the expected wait (router/stops.ts shedStop).
 *
 * - `ladder` (default), rung by rung: wait for a place on the model's own accounts, first
 *   come first served (interactive keys only: background keys skip it), at most `wait_ms`
 *   (plus `routing.retry_after_cap_ms` when only the 503 is left below) from the request's start (a request that already spent that long, on a refusal or a
 *   stall abandoned, waits no more). With a model left to move to and the model's typical
 *   deep call time known (router/deep.ts DeepTimes), the wait is also at most 3/4 of that
 *   time and only taken when a place is expected within it (the waiters ahead, served as
 *   running calls end: router/take.ts), so a wait never costs more than most of the call it
 *   saves and a call that would wait in vain moves on at once; before that time is known
 *   nothing says the wait is in vain, and `wait_ms` is waited until it becomes known (the
 *   first calls of a burst from cold answer), then the wait is decided again with it. Then the same model
 *   at `shed.lower_effort` (opt-in; below `deep_effort`, so the call no longer needs a deep
 *   place); the next reasoning model among the model's fallbacks; the non-reasoning
 *   `shed.fallback`; 503 `reasoning_burst_shed`.
 * - `downgrade`: straight to `shed.fallback` (else the first fallback), else 503;
 * - `queue`: wait up to `queue_timeout_ms`, else 503;
 * - `reject`: 503 at once.
 * Each rung taken is counted (`switchyard_sheds_total{policy=<rung>}`) and named in
 * `x-switchyard-shed`.
 */
import type { Model } from '../config/types.js';
import { effortRank, requestRank } from './deep.js';

export type ShedDecision =
  /**
   * Wait up to `ms` for a place on this model's accounts, then decide again; `untilKnown`:
   * the bound is provisional (the model's typical deep call time is not known yet), and the
   * wait also ends when it becomes known, to be decided again with it.
   */
  | { readonly kind: 'wait'; readonly ms: number; readonly notify: 'wait' | 'queue'; readonly untilKnown?: boolean }
  /** Route on another reasoning model of the chain. */
  | { readonly kind: 'reasoning'; readonly to: Model; readonly notify: 'fallback' }
  /** The same model at a lower `reasoning_effort` (`shed.lower_effort`), no longer deep. */
  | { readonly kind: 'lower'; readonly from: string; readonly effort: string; readonly notify: 'lower_effort' }
  /** Route on the non-reasoning model instead of this one. */
  | { readonly kind: 'downgrade'; readonly to: Model; readonly notify: 'downgrade' }
  /** No rung left: the route stops (router/stops.ts shedStop). */
  | { readonly kind: 'reject'; readonly notify: 'reject' };

/** What the route knows when it sheds. */
export interface ShedContext {
  readonly lookup: (name: string) => Model | undefined;
  /** The models after this one in the route's chain (its fallbacks not yet tried). */
  readonly later: readonly Model[];
  readonly priority: 'interactive' | 'background';
  /** Time since this request's route began, ms (what it waited for a place, and any attempt it spent throttled). */
  readonly waitedMs: number;
  /** The model's typical served deep call time, ms (null: not known yet). */
  readonly typicalMs: number | null;
  /** How long a call joining the wait rung's line now would wait for a place, ms (router/take.ts; null: not known). */
  readonly expectedWaitMs: number | null;
  /** The request's reasoning effort (null: the model's default). */
  readonly effort: string | null;
  /** The longest wait a 503 names (routing.retry_after_cap_ms), ms: on the last rung the wait is longer by it. */
  readonly capMs: number;
}

/**
 * The longest wait for a place, as a share of the model's typical deep call time, when a
 * model to move to is left: a step that waited this long and then ran still ends within
 * 1 + WAIT_SHARE typical calls, and the reasoning model keeps the call.
 */
const WAIT_SHARE = 0.75;

const REJECT: ShedDecision = { kind: 'reject', notify: 'reject' };

/** The next rung for a deep call to `model` whose every account is hot. */
export function shedDecision(model: Model, ctx: ShedContext): ShedDecision {
  const { shed } = model;
  switch (shed.policy) {
    case 'reject':
      return REJECT;
    case 'queue':
      return ctx.waitedMs < shed.queue_timeout_ms ? { kind: 'wait', ms: shed.queue_timeout_ms - ctx.waitedMs, notify: 'queue' } : REJECT;
    case 'downgrade': {
      const to = rungsBelow(model, ctx, true).fallback;
      return to ? { kind: 'downgrade', to, notify: 'downgrade' } : REJECT;
    }
    default: {
      const { reasoning, fallback: downgrade } = rungsBelow(model, ctx);
      // With only the 503 left below, wait_ms and then as long as that 503 would have told the
      // client to wait (capMs): the client keeps its place in line instead of coming back to
      // the end of it. With the typical call time not known yet, the whole wait_ms; with a
      // model to move to, WAIT_SHARE of a typical call at most, and only when a place is
      // expected that soon.
      const last = !reasoning && !downgrade;
      const known = !last && ctx.typicalMs !== null;
      const waitFor = last ? shed.wait_ms + ctx.capMs : known ? Math.min(shed.wait_ms, ctx.typicalMs! * WAIT_SHARE) : shed.wait_ms;
      const left = waitFor - ctx.waitedMs;
      const worth = !known || (ctx.expectedWaitMs !== null && ctx.expectedWaitMs <= left);
      if (ctx.priority === 'interactive' && left > 0 && worth) return { kind: 'wait', ms: Math.ceil(left), notify: 'wait', untilKnown: !last && !known };
      const from = ctx.effort ?? model.defaultEffort;
      if (shed.lower_effort !== undefined && (effortRank(shed.lower_effort) ?? Infinity) < requestRank(model, ctx.effort))
        return { kind: 'lower', from, effort: shed.lower_effort, notify: 'lower_effort' };
      if (reasoning) return { kind: 'reasoning', to: reasoning, notify: 'fallback' };
      return downgrade ? { kind: 'downgrade', to: downgrade, notify: 'downgrade' } : REJECT;
    }
  }
}

/**
 * The wait rung's bound for a deep call to `model`, ms from its route's start: min(`wait_ms`,
 * WAIT_SHARE × the typical call), when a rung lies below the wait (another reasoning model
 * later in the route, or the shed fallback) and the typical call time is known; null when the
 * wait is not bounded so (no rung below, the time not known yet, or another policy); 0 for a
 * background call with a rung below (it skips the wait rung). `ladder` policy only.
 * A deep call that waited past it goes down the ladder even when a place has freed meanwhile
 * (router/shed-run.ts roomFor), so a step that waited still ends within about 1 + WAIT_SHARE
 * typical calls, as the wait rung promises. The case it is for: at a cold start the bound
 * becomes known only as the first calls end, freeing places that went to requests which had
 * waited a whole call (measured at stall/16: four 2.2 s steps against 1.1 s uncongested).
 */
export function waitBoundMs(model: Model, ctx: Pick<ShedContext, 'lookup' | 'later' | 'priority' | 'typicalMs'>): number | null {
  const { shed } = model;
  if (shed.policy !== 'ladder') return null;
  const below = rungsBelow(model, ctx);
  if (!below.reasoning && !below.fallback) return null;
  // A background call skips the wait rung: with a rung below, it does not wait at all.
  if (ctx.priority !== 'interactive') return 0;
  return ctx.typicalMs === null ? null : Math.min(shed.wait_ms, ctx.typicalMs * WAIT_SHARE);
}

/**
 * The models below the wait rung for `model`: another reasoning model later in the route's
 * chain, and the shed fallback (`shed.fallback`, or `orFirst`: the first of `fallbacks` when
 * none is set, as the `downgrade` policy takes it); each undefined when there is none or it is
 * `model` itself.
 */
export function rungsBelow(model: Model, ctx: Pick<ShedContext, 'lookup' | 'later'>, orFirst = false): { reasoning?: Model; fallback?: Model } {
  const name = model.shed.fallback ?? (orFirst ? model.fallbacks[0] : undefined);
  const fallback = name === undefined ? undefined : ctx.lookup(name);
  const reasoning = ctx.later.find((m) => m.reasoning && m !== model);
  return { ...(reasoning ? { reasoning } : {}), ...(fallback && fallback !== model ? { fallback } : {}) };
}
