/**
 * The errors a route stops with when it is not the last upstream failure itself: a spent
 * retry budget, a full queue, and a model whose every target sits in a long cooldown.
 */
import { GatewayError } from '../errors/codes.js';
import type { Model } from '../config/types.js';
import type { HealthBoard, LongCooldown } from './health.js';

/**
 * The retry budget is spent.
 * @param last the last upstream failure of this request, if any.
 * @param retryAfterS seconds until a target of the model may take traffic (Retry-After).
 */
export function budgetStop(last: GatewayError | undefined, retryAfterS: string): GatewayError {
  const tail = last ? ` Last upstream error: ${last.openaiCode ?? last.status}.` : '';
  return new GatewayError('GW_ERR_RETRY_BUDGET', {
    message: `The upstreams for this model are failing and the gateway is not retrying more right now.${tail}`,
    headers: { 'retry-after': retryAfterS },
  });
}

/** Every target of `model` is at its concurrency limit and the queue is full or timed out. */
export function queueFullError(model: string, reason: 'full' | 'timeout'): GatewayError {
  return new GatewayError('GW_ERR_UPSTREAM_OVERLOADED', {
    message: `Every upstream for ${model} is at its concurrency limit (${reason === 'full' ? 'queue full' : 'queue wait timed out'}).`,
    headers: { 'retry-after': '1' },
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
      return new GatewayError('GW_ERR_NO_TARGET', { message: 'The upstream account for this model is out of credit or quota.' });
    case 'not_found':
      return new GatewayError('GW_ERR_NO_TARGET', { message: 'The upstream does not serve this model.' });
    default:
      return new GatewayError('GW_ERR_NO_TARGET');
  }
}

/**
 * Seconds until a target of `model` may take traffic (its soonest cooldown end), else the
 * upstreams' own Retry-After hint (`hintMs`); at least 1, for a `Retry-After` header.
 */
export function retryAfterSeconds(model: Model, health: HealthBoard, hintMs: number): string {
  const soonest = Math.min(...model.targets.map((t) => health.availableAt(t.key, t.upstream.id) || Infinity));
  const ms = Number.isFinite(soonest) ? soonest - Date.now() : hintMs;
  return String(Math.max(1, Math.ceil(ms / 1000)));
}
