/**
 * The shed ladder for a deep call that found every account of its model hot (deep calls in
 * flight at the account's learned capacity), by the model's `shed.policy`:
 *
 * - `ladder` (default), rung by rung: wait for a place on the model's own accounts, first
 *   come first served (interactive keys only: background keys skip it), while the request is
 *   younger than half the model's typical deep call time (router/deep.ts DeepTimes) and
 *   `wait_ms`: a wait never costs more than half the call it saves, and a request that already
 *   spent that long (a refusal, a stall abandoned) waits no more; no wait before the model's
 *   typical time is known (the first burst of a cold replica sheds at once); when no model is
 *   left to move to (only the 429 below), up to the whole `wait_ms` instead; the
 *   next reasoning model among the model's fallbacks; the non-reasoning `shed.fallback`; 429
 *   with `Retry-After: 1` (a place frees as soon as one running call ends).
 * - `downgrade`: straight to `shed.fallback` (else the first fallback), else 429;
 * - `queue`: wait up to `queue_timeout_ms`, else 429;
 * - `reject`: 429 at once.
 * Each rung taken is counted (`switchyard_sheds_total{policy=<rung>}`) and named in
 * `x-switchyard-shed`.
 */
import type { Model } from '../config/types.js';
import { GatewayError } from '../errors/codes.js';

export type ShedDecision =
  /** Wait up to `ms` for a place on this model's accounts, then decide again. */
  | { readonly kind: 'wait'; readonly ms: number; readonly notify: 'wait' | 'queue' }
  /** Route on another reasoning model of the chain. */
  | { readonly kind: 'reasoning'; readonly to: Model; readonly notify: 'fallback' }
  /** Route on the non-reasoning model instead of this one. */
  | { readonly kind: 'downgrade'; readonly to: Model; readonly notify: 'downgrade' }
  | { readonly kind: 'reject'; readonly stop: GatewayError; readonly notify: 'reject' };

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
}

function reject(model: Model): ShedDecision {
  const stop = new GatewayError('GW_ERR_SHED_REJECTED', {
    message: `Too many deep-reasoning calls to ${model.name} right now; retry later.`,
    headers: { 'retry-after': '1' },
  });
  return { kind: 'reject', stop, notify: 'reject' };
}

/** The next rung for a deep call to `model` whose every account is hot. */
export function shedDecision(model: Model, ctx: ShedContext): ShedDecision {
  const { shed } = model;
  switch (shed.policy) {
    case 'reject':
      return reject(model);
    case 'queue':
      return ctx.waitedMs < shed.queue_timeout_ms ? { kind: 'wait', ms: shed.queue_timeout_ms - ctx.waitedMs, notify: 'queue' } : reject(model);
    case 'downgrade': {
      const name = shed.fallback ?? model.fallbacks[0];
      const to = name === undefined ? undefined : ctx.lookup(name);
      return to && to !== model ? { kind: 'downgrade', to, notify: 'downgrade' } : reject(model);
    }
    default: {
      const reasoning = ctx.later.find((m) => m.reasoning && m !== model);
      const fallback = shed.fallback === undefined ? undefined : ctx.lookup(shed.fallback);
      const downgrade = fallback && fallback !== model ? fallback : undefined;
      // With only a 429 left below, the whole wait_ms is worth it; with a model to move to, half a typical call at most.
      const waitFor = !reasoning && !downgrade ? shed.wait_ms : ctx.typicalMs === null ? 0 : Math.min(shed.wait_ms, ctx.typicalMs / 2);
      if (ctx.priority === 'interactive' && ctx.waitedMs < waitFor) return { kind: 'wait', ms: Math.ceil(waitFor - ctx.waitedMs), notify: 'wait' };
      if (reasoning) return { kind: 'reasoning', to: reasoning, notify: 'fallback' };
      return downgrade ? { kind: 'downgrade', to: downgrade, notify: 'downgrade' } : reject(model);
    }
  }
}
