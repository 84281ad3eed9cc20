/**
 * Failures as translators report them: the wire API's error fields (already read by the
 * wire API's reader) sorted by the one classifier (`errors/classify.ts`) and turned into the
 * gateway error the client may get. Every string that came from the upstream is scrubbed of
 * key material here, so no translator can relay a credential.
 */
import { classifiedAs, classifyFailure, isCallerFault, type Classified, type FailureFacts } from '../errors/classify.js';
import { GatewayError } from '../errors/codes.js';
import type { Heals } from '../errors/table.js';
import { quotaResetAt } from '../errors/quota-reset.js';
import { relayedWait } from '../errors/wait.js';
import { redactSecrets } from '../util/redact.js';
import type { Failure, TranslatorContext } from './types.js';

/** An upstream error's fields in the wire API's terms (OpenAI `error.{message,type,code,param}`, Anthropic `error.{type,message}`). */
export interface WireErrorFields {
  readonly message?: string;
  readonly type?: string;
  readonly code?: string;
  readonly param?: string;
}

/** How the client's API names the error, when it differs from the wire's (a translated answer). */
export interface ClientErrorShape {
  readonly status?: number;
  readonly type?: string;
  readonly code?: string | null;
}

type Headers = Readonly<Record<string, string | string[] | undefined>>;

/** What relaying an upstream's error needs of the attempt: the secrets to scrub and the longest wait to relay. */
export type RelayContext = Pick<TranslatorContext, 'secrets' | 'retryAfterCapMs'>;

function scrub(v: string | undefined, secrets: readonly (string | undefined)[]): string | undefined {
  return v === undefined ? undefined : redactSecrets(v, secrets);
}

/**
 * Whether a client's retry can heal a relayed upstream failure: never for the caller's own
 * request, an empty account or a model the upstream does not have; after the upstream's
 * wait for a rate limit; otherwise it depends (errors/table.ts `Heals`).
 */
function healsOf(c: Classified): Heals {
  if (isCallerFault(c) || c.class === 'quota' || c.class === 'not_found') return 'never';
  return c.class === 'rate_limited' ? 'wait' : 'maybe';
}

/**
 * The failure of a non-2xx answer. A credential or permission failure is the gateway's
 * problem, never the caller's: the client gets 502 `upstream_auth_failed` without the
 * upstream's text. Anything else keeps the upstream's status (or `client.status`) and
 * fields, and its `Retry-After` / `retry-after-ms` as errors/wait.ts `relayedWait` passes
 * them on: capped at `ctx.retryAfterCapMs`, and a wait beyond it makes the answer final
 * (`heals: never`, so `x-should-retry: false`; errors/reply.ts drops the wait of a final 5xx).
 * @param fields null when the body was not an error object of the wire API.
 */
export function answerFailure(status: number, headers: Headers, fields: WireErrorFields | null, ctx: RelayContext, client: ClientErrorShape = {}): Failure {
  const { secrets } = ctx;
  const classified = classifyFailure({ status, type: fields?.type ?? null, code: fields?.code ?? null, message: fields?.message ?? null });
  const reason = scrub(fields?.message, secrets) ?? `HTTP ${status}`;
  if (classified.class === 'credential' || classified.class === 'permission') {
    return { classified, error: new GatewayError('GW_ERR_UPSTREAM_AUTH'), reason };
  }
  const wait = relayedWait(headers, ctx.retryAfterCapMs);
  const clientStatus = client.status ?? status;
  const error = new GatewayError('GW_ERR_UPSTREAM_ERROR', {
    status: clientStatus,
    message: scrub(fields?.message, secrets) ?? `The upstream provider returned HTTP ${status}.`,
    type: client.type ?? scrub(fields?.type, secrets) ?? (clientStatus >= 500 ? 'server_error' : 'invalid_request_error'),
    openaiCode: client.code !== undefined ? client.code : (scrub(fields?.code, secrets) ?? null),
    param: scrub(fields?.param, secrets) ?? null,
    headers: wait.headers,
    heals: wait.beyondCap ? 'never' : healsOf(classified),
  });
  const resetAt = classified.class === 'quota' ? quotaResetAt(fields?.message, headers, Date.now()) : undefined;
  return { classified, error, reason, ...(resetAt !== undefined ? { resetAt } : {}) };
}

/**
 * The failure of an error the upstream reported inside a 2xx stream. Before the first byte
 * reached the client it may still fail over; a caller fault (a 4xx-like code other than
 * 408/429) is answered as a 400.
 */
export function streamErrorFailure(fields: WireErrorFields | null, secrets: readonly (string | undefined)[], client: ClientErrorShape = {}): Failure {
  const classified = classifyFailure({ type: fields?.type ?? null, code: fields?.code ?? null, message: fields?.message ?? null });
  const message = scrub(fields?.message, secrets) ?? 'The upstream stream reported an error.';
  const reason = message;
  // The gateway's key refused: its problem, never the caller's, and the upstream's words stay in the log.
  if (classified.class === 'credential' || classified.class === 'permission') return { classified, error: new GatewayError('GW_ERR_UPSTREAM_AUTH'), reason };
  const code = client.code !== undefined ? client.code : (scrub(fields?.code, secrets) ?? 'upstream_stream_error');
  if (isCallerFault(classified)) {
    return {
      classified,
      error: new GatewayError('GW_ERR_UPSTREAM_ERROR', { status: 400, message, type: 'invalid_request_error', openaiCode: code, heals: 'never' }),
      reason,
    };
  }
  const type = client.type ?? scrub(fields?.type, secrets) ?? 'server_error';
  // A rate limit or an empty account before the first byte is what an HTTP 429 would have said.
  const status = classified.class === 'rate_limited' || classified.class === 'quota' ? 429 : undefined;
  const error = new GatewayError('GW_ERR_UPSTREAM_STREAM', {
    message,
    type,
    openaiCode: code,
    param: scrub(fields?.param, secrets) ?? null,
    ...(status ? { status } : {}),
    heals: healsOf(classified),
  });
  const resetAt = classified.class === 'quota' ? quotaResetAt(fields?.message, undefined, Date.now()) : undefined;
  return { classified, error, reason, ...(resetAt !== undefined ? { resetAt } : {}) };
}

function local(kind: NonNullable<FailureFacts['local']>, error: GatewayError): Failure {
  return { classified: classifyFailure({ local: kind }), error };
}

/** An event or body the wire API's reader could not read (not JSON, not an object). */
export function unreadable(what = 'The upstream stream carried an event that is not JSON.'): Failure {
  return local('unreadable', new GatewayError('GW_ERR_UPSTREAM_BAD_RESPONSE', { message: what }));
}

/** A stream that ended before its answer was complete. */
export function cutShort(): Failure {
  return local('cut', new GatewayError('GW_ERR_UPSTREAM_STREAM', { message: 'The upstream stream ended before the response was complete.' }));
}

/**
 * The gateway's own failure during an attempt (a thrown error with no network code: a bug
 * or a limit of ours). The client gets 500 `internal_error`; the operator's log line gets
 * the error's name and message (never the request body); no upstream is blamed.
 */
export function gatewayFailure(thrown: unknown): Failure {
  const reason = thrown instanceof Error ? `${thrown.name}: ${thrown.message}`.slice(0, 500) : `thrown ${typeof thrown}`;
  return { classified: classifiedAs('gateway'), error: new GatewayError('GW_ERR_INTERNAL'), reason };
}
