/**
 * The errors a route stops with when it is not the last upstream failure itself: a spent
 * retry budget, a full queue, a deep call with no place and no rung left, and a model whose
 * every target sits in a long cooldown. Each says whether a client's retry can heal it
 * (errors/table.ts `Heals`) and names only a wait the gateway expects to be over by then.
 */
import type { RoutingConfig } from '../config/schema.js';
import { GatewayError } from '../errors/codes.js';
import { waitHeaders } from '../errors/wait.js';
import type { LongCooldown } from './health.js';

/**
 * The retry budget is spent. When a rate-limited upstream named its wait (`Retry-After`),
 * the client may retry after what is left of it, never longer than the budget's window: by
 * then the retries it spent have left the window (`heals: wait`). Otherwise the upstreams
 * are failing (a wait named with a 5xx is no promise) with no end in sight: no wait is named,
 * and the route's answer is final once it tried (pipeline/endings.ts; errors/reply.ts says
 * why a final 5xx names no wait).
 * @param last the last upstream failure of this request, if any.
 * @param waitMs what is left of a rate limit's named wait, ms (null: none was named).
 * @param routing the route's settings: the budget's window and the longest wait named.
 */
export function budgetStop(
  last: GatewayError | undefined,
  waitMs: number | null,
  routing: Pick<RoutingConfig, 'retry_budget' | 'retry_after_cap_ms'>,
): GatewayError {
  const said = last ? ` (${last.message.length > 200 ? `${last.message.slice(0, 200)}…` : last.message})` : '';
  const tail = last ? ` Last upstream error: ${last.openaiCode ?? last.status}${said}.` : '';
  const wait = waitMs === null ? null : Math.min(waitMs, routing.retry_budget.window_ms);
  return new GatewayError('GW_ERR_RETRY_BUDGET', {
    message: `The upstreams for this model are failing and the gateway is not retrying more right now.${tail}`,
    ...(wait === null ? {} : { heals: 'wait' as const, headers: waitHeaders(wait, routing.retry_after_cap_ms) }),
  });
}

/** Every target of `model` is at its concurrency limit and the queue is full or timed out: a slot frees as one running call ends. */
export function queueFullError(model: string, reason: 'full' | 'timeout'): GatewayError {
  return new GatewayError('GW_ERR_UPSTREAM_OVERLOADED', {
    message: `Every upstream for ${model} is at its concurrency limit (${reason === 'full' ? 'queue full' : 'queue wait timed out'}).`,
    headers: waitHeaders(1_000),
  });
}

/**
 * A deep call that waited for a place and has no rung left to shed to (router/shed.ts): 503
 * `reasoning_burst_shed` (a 429 is only ever the client's own key over its limits), naming
 * the expected wait for a place (router/take.ts expectedPlaceWaitMs; 1 s when the model's
 * typical call time is not known yet). A wait longer than `capMs` is not one a client should
 * sit out: the answer is final instead.
 * @param waitMs the expected wait for a place, ms (null: not known).
 * @param capMs the longest wait the gateway names (routing.retry_after_cap_ms), ms.
 */
export function shedStop(model: string, waitMs: number | null, capMs: number): GatewayError {
  if (waitMs !== null && waitMs > capMs) {
    return new GatewayError('GW_ERR_SHED_REJECTED', {
      message: `Every account of ${model} is busy with deep-reasoning calls, and no place is expected to free within ${Math.round(capMs / 1000)} s.`,
      heals: 'never',
    });
  }
  return new GatewayError('GW_ERR_SHED_REJECTED', {
    message: `Every account of ${model} is busy with deep-reasoning calls; retry after the time in Retry-After.`,
    headers: waitHeaders(waitMs ?? 1_000, capMs),
  });
}

/**
 * A request its accounts throttled `max_attempts` times, which then waited the shed ladder's
 * longest wait for a call there to end without getting a place (router/shed-run.ts
 * afterThrottles): 503 `upstream_overloaded` (not the upstream's 429: the client's key is
 * within its limits), naming a short wait.
 */
export function overloadedStop(model: string, throttles: number, capMs: number): GatewayError {
  return new GatewayError('GW_ERR_UPSTREAM_OVERLOADED', {
    message: `Every account of ${model} refused calls as over its limits (${throttles} times) and none took one more in time; retry after the time in Retry-After.`,
    headers: waitHeaders(1_000, capMs),
  });
}

/**
 * A request that found every target in a long cooldown and made no attempt: a bad key or a
 * refused model is the gateway's problem (502 upstream_auth_failed, as for the failure
 * itself); an empty account or a model the upstream does not have leaves no upstream to
 * serve (503 no_upstream_available). The upstream's reason stays in the gateway's log.
 */
export function cooledStop(cd: LongCooldown | null): GatewayError {
  switch (cd?.class) {
    case 'credential':
      return new GatewayError('GW_ERR_UPSTREAM_AUTH');
    case 'permission':
      return new GatewayError('GW_ERR_UPSTREAM_AUTH', { message: 'The upstream provider refused the gateway access to this model.' });
    case 'quota':
      return new GatewayError('GW_ERR_NO_TARGET', {
        message: `The upstream account for this model is out of credit or quota; the gateway tries it again at ${new Date(cd.probeAt).toISOString()} (its reset, when the provider named one).`,
        heals: 'never',
      });
    case 'not_found':
      return new GatewayError('GW_ERR_NO_TARGET', { message: 'The upstream does not serve this model.', heals: 'never' });
    default:
      return new GatewayError('GW_ERR_NO_TARGET');
  }
}
