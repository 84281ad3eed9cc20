/** The 2xx JSON answer of a same-API translator: the upstream's bytes, unchanged, and the usage read from them. */
import { GatewayError } from '../../errors/codes.js';
import type { Usage } from '../../usage/usage.js';
import { isObj, type Obj } from '../read.js';
import type { JsonResult } from '../types.js';

/**
 * @throws GatewayError `GW_ERR_UPSTREAM_BAD_RESPONSE` when the answer is not a JSON object.
 */
export function jsonAnswer(raw: Buffer, parsed: unknown, usage: (o: Obj) => Usage | null): JsonResult {
  if (!isObj(parsed)) throw new GatewayError('GW_ERR_UPSTREAM_BAD_RESPONSE', { message: 'The upstream answered with JSON that is not an object.' });
  return { body: raw, usage: usage(parsed) };
}
