/**
 * Authentication for client routes: an `onRequest` hook, so a request with a bad key is
 * refused before its body is read. Accepts `Authorization: Bearer <key>` (OpenAI SDKs),
 * `api-key` (Azure OpenAI SDKs) and `x-api-key` (Anthropic SDKs).
 */
import { hash } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { GatewayError } from '../errors/codes.js';
import type { AuthThrottle, ThrottleVerdict } from '../limits/index.js';
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

/** What a client that sent no key should send, in its own SDK's terms. */
function missingKeyMessage(req: FastifyRequest): string {
  return req.url.startsWith('/v1/messages')
    ? 'Missing API key. Send it as "x-api-key: <key>" (Anthropic SDKs, Claude Code) or "Authorization: Bearer <key>".'
    : 'Missing API key. Send it as "Authorization: Bearer <key>".';
}

/** The 429 for a key or address the throttle holds back; `x-should-retry: false`, since retrying cannot fix a key. */
export function throttledError(v: ThrottleVerdict): GatewayError {
  const message =
    v.by === 'key'
      ? `This API key failed authentication too many times within a minute; it is not a valid key here. Fix the key; this one is refused for ${v.retryAfterS} s.`
      : `Too many unknown API keys from this address within a minute; retry after ${v.retryAfterS} s with a valid key (valid keys are not affected).`;
  return new GatewayError('GW_ERR_AUTH_THROTTLED', { message, headers: { 'retry-after': String(v.retryAfterS), 'x-should-retry': 'false' } });
}

/**
 * Builds the hook; it sets `request.caller` or fails the request with 401 `invalid_api_key`.
 * With a `throttle` (see {@link AuthThrottle}): a key that failed too often within a minute
 * gets 429 whoever sends it; an address that sent too many never-valid keys gets 429 for
 * further unknown keys. A valid key is always accepted, whatever else failed from its address.
 *
 * A key the current key store accepted before is let through at once, without the
 * throttle's lookup: within one store such a key never fails, so it has no failures to count
 * (a reload builds a new store, and a key added by it is checked against the throttle once).
 * The hook is callback-style so that path costs no promise.
 */
export function authHook(keys: () => KeyStore, throttle?: AuthThrottle, onThrottled?: () => void) {
  async function check(req: FastifyRequest, hex: string): Promise<void> {
    const held = throttle ? await throttle.keyBlocked(hex) : null;
    if (held) {
      onThrottled?.();
      throw throttledError(held);
    }
    const caller = keys().byHex(hex);
    if (caller) {
      throttle?.remember(hex);
      req.caller = caller;
      return;
    }
    if (throttle) {
      const byAddress = throttle.wasValid(hex) ? null : await throttle.addressBlocked(req.ip);
      await throttle.failed(req.ip, hex);
      if (byAddress) {
        onThrottled?.();
        throw throttledError(byAddress);
      }
    }
    throw new GatewayError('GW_ERR_INVALID_API_KEY', { message: 'Incorrect API key provided.' });
  }
  return function authenticate(req: FastifyRequest, _reply: FastifyReply, done: (err?: Error) => void): void {
    const key = presentedKey(req);
    if (key === undefined) return done(new GatewayError('GW_ERR_INVALID_API_KEY', { message: missingKeyMessage(req) }));
    // One-shot hash (Node >= 20.12): a third of createHash's cost on a short key, no Hash object per request.
    const hex = hash('sha256', key, 'hex');
    const known = keys().acceptedBefore(hex);
    if (known) {
      req.caller = known;
      return done();
    }
    // A rejection that is not an Error (none today) must still fail the request: done() with
    // a falsy value would let it through without a caller.
    check(req, hex).then(
      () => done(),
      (err: unknown) => done(err instanceof Error ? err : new GatewayError('GW_ERR_INTERNAL')),
    );
  };
}
