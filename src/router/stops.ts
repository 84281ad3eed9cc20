/**
 * The errors a route stops with when it is not the last upstream failure itself: a model
 * whose every target sits in a long cooldown.
 */
import { GatewayError } from '../errors/codes.js';
import type { LongCooldown } from './health.js';

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
