/**
 * Which session a request belongs to, for cache affinity and the `sticky` strategy (one
 * session's turns on one account, so that account's prompt cache stays warm). The first of
 * these that is present names it (docs/agents.md, "Sessions and prompt caches"):
 *
 * 1. `x-session-id`: the gateway's own header, set on purpose by a client or a proxy, so it
 *    wins over what an agent sends by itself.
 * 2. `x-claude-code-session-id`: Claude Code's session header (2.1.332, test/captures/).
 * 3. `session-id`: Codex's session header (0.171.0 sends `session-id`, `thread-id` and
 *    `prompt_cache_key`, all the same id; seen on a local capture server), and `session_id`,
 *    the name earlier Codex releases gave it (an underscore: Node's HTTP parser keeps it).
 * 4. the body's prompt-cache key (`prompt_cache_key`: the API's `sessionHints`).
 * 5. the conversation a Responses follow-up continues (`previous_response_id`): the session
 *    of the response it names, as journalled (pipeline/continuation.ts); when not on record,
 *    that response's id itself.
 * 6. the end user the body names (`user`, Messages' `metadata.user_id`).
 *
 * Every value is hashed together with the name of the client key: two keys sending the same
 * session id are two sessions, and no client text is stored in the shared store.
 */
import { createHash } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import type { SessionHints } from '../apis/types.js';
import type { Continuation } from './continuation.js';

/** Session headers, first present wins (before the body's prompt-cache key): the gateway's own, then the agents'. */
const SESSION_HEADERS = ['x-session-id', 'x-claude-code-session-id', 'session-id', 'session_id'] as const;

/** A header's value when it is one non-empty string. */
function header(req: FastifyRequest, name: string): string | undefined {
  const v = req.headers[name];
  return typeof v === 'string' && v !== '' ? v : undefined;
}

/**
 * `value` as the session key of the request's client key: base64url SHA-256 of the key name
 * and the value (43 characters).
 */
export function hashSession(req: FastifyRequest, value: string): string {
  return createHash('sha256')
    .update(`${req.caller?.name ?? ''}\n${value}`)
    .digest('base64url');
}

/**
 * The request's `sticky` session key (hashed, see the module comment), or undefined when
 * nothing names a session.
 * @param hints what the body names (its API's `sessionHints`).
 * @param continuation the Responses conversation the request continues, if any.
 */
export function sessionKey(req: FastifyRequest, hints: SessionHints, continuation: Continuation | null): string | undefined {
  for (const name of SESSION_HEADERS) {
    const v = header(req, name);
    if (v) return hashSession(req, v);
  }
  if (hints.cacheKey) return hashSession(req, hints.cacheKey);
  if (continuation) return continuation.sessionFor(req.caller?.name ?? null) ?? hashSession(req, continuation.previousId);
  return hints.user ? hashSession(req, hints.user) : undefined;
}

/**
 * The session a response made by this request is journalled with, for the follow-ups that
 * continue it: the request's own session, or (it had none) one rooted at the response's id,
 * the key a follow-up naming it gets when the journal is gone.
 */
export function sessionOfResponse(req: FastifyRequest, session: string | undefined, responseId: string): string {
  return session ?? hashSession(req, responseId);
}

/**
 * The key a session's pin is kept under for calls of `model` (the gateway's model the request
 * named): one pin per session and model, since a provider's prompt cache is per model too
 * (Anthropic: "Cache prefixes are created ... per model"; OpenAI caches per model and
 * organization), and an agent mixes models in one session (Claude Code sends its small-model
 * calls with the same `x-claude-code-session-id`): a turn of the small model must not move
 * the main model's pin, nor count as a move.
 */
export function pinSession(session: string, model: string): string {
  return `${session}.${model}`;
}
