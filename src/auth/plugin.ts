/**
 * Authentication for client routes: an `onRequest` hook, so a request with a bad key is
 * refused before its body is read. Accepts `Authorization: Bearer <key>` (OpenAI SDKs),
 * `api-key` (Azure OpenAI SDKs) and `x-api-key` (Anthropic SDKs).
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { GatewayError } from '../errors/codes.js';
import type { AuthThrottle } from '../limits/index.js';
import type { Caller, KeyStore } from './keys.js';

declare module 'fastify' {
  interface FastifyRequest {
    caller: Caller | null;
  }
}

/** The token of an `Authorization: Bearer <token>` header, if any. */
export function bearerToken(req: FastifyRequest): string | undefined {
  const auth = req.headers.authorization;
  return typeof auth === 'string' ? /^\s*Bearer\s+(\S+)\s*$/i.exec(auth)?.[1] : undefined;
}

function presentedKey(req: FastifyRequest): string | undefined {
  const bearer = bearerToken(req);
  if (bearer !== undefined) return bearer;
  for (const h of ['api-key', 'x-api-key']) {
    const v = req.headers[h];
    if (typeof v === 'string' && v.trim() !== '') return v.trim();
  }
  return undefined;
}

/**
 * Builds the hook; it sets `request.caller` or throws 401 `invalid_api_key`. With a
 * `throttle`, an address that sent too many bad keys within a minute gets 429 (whatever
 * key it sends) until the minute is over; other addresses are not affected.
 */
export function authHook(keys: () => KeyStore, throttle?: AuthThrottle, onThrottled?: () => void) {
  return async function authenticate(req: FastifyRequest, _reply: FastifyReply): Promise<void> {
    if (throttle) {
      const wait = await throttle.blocked(req.ip);
      if (wait > 0) {
        onThrottled?.();
        throw new GatewayError('GW_ERR_AUTH_THROTTLED', { headers: { 'retry-after': String(wait) } });
      }
    }
    const key = presentedKey(req);
    const caller = key === undefined ? null : keys().authenticate(key);
    if (!caller) {
      if (throttle && key !== undefined) await throttle.failed(req.ip);
      throw new GatewayError('GW_ERR_INVALID_API_KEY', {
        message: key === undefined ? 'Missing API key. Send it as "Authorization: Bearer <key>".' : 'Incorrect API key provided.',
      });
    }
    req.caller = caller;
  };
}
