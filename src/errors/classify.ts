/**
 * One classifier for every upstream failure, so routing, retries, metrics and the client
 * response all agree on what a failure means. Status meanings follow RFC 9110 plus the
 * provider conventions: 429 rate limited (OpenAI, Anthropic), 529 overloaded (Anthropic).
 */

export type FailureClass =
  /** TCP connect refused / reset / DNS: nothing was processed upstream. */
  | 'connect'
  /** connect, first-byte or idle timeout. */
  | 'timeout'
  /** 429: the provider throttled this account. */
  | 'rate_limited'
  /** 408, 5xx, 529: the provider failed on its side. */
  | 'server'
  /** 401 / 403 from the upstream: the gateway's provider key is wrong or revoked. */
  | 'credential'
  /** 400, 404, 413, 422 …: the caller's request is at fault; retrying elsewhere will not help. */
  | 'caller'
  /** the stream broke or carried an error after it had started. */
  | 'stream'
  /** unreadable upstream response (bad JSON, wrong content type). */
  | 'bad_response';

export interface Classified {
  readonly class: FailureClass;
  /** Whether another attempt (elsewhere or later) may succeed. */
  readonly retryable: boolean;
}

const RETRYABLE_STATUS = new Set([408, 429, 500, 502, 503, 504, 529]);

/** Sorts an upstream HTTP error status. */
export function classifyStatus(status: number): Classified {
  if (status === 429) return { class: 'rate_limited', retryable: true };
  if (status === 401 || status === 403) return { class: 'credential', retryable: true };
  if (RETRYABLE_STATUS.has(status)) return { class: 'server', retryable: true };
  if (status >= 500) return { class: 'server', retryable: false };
  return { class: 'caller', retryable: false };
}

const TIMEOUT_CODES = new Set(['UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT', 'ETIMEDOUT']);
const CONNECT_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'UND_ERR_SOCKET', 'UND_ERR_CLOSED']);

/** The error code of an undici / Node network error, looking through `cause`. */
export function errorCode(err: unknown): string | undefined {
  let cur: unknown = err;
  for (let i = 0; i < 4 && cur && typeof cur === 'object'; i++) {
    const code = (cur as { code?: unknown }).code;
    if (typeof code === 'string') return code;
    cur = (cur as { cause?: unknown }).cause;
  }
  return undefined;
}

/** Sorts a thrown network error (undici `UND_ERR_*` codes or Node `E*` codes). */
export function classifyError(err: unknown): Classified {
  const code = errorCode(err);
  if (code && TIMEOUT_CODES.has(code)) return { class: 'timeout', retryable: true };
  if (code && CONNECT_CODES.has(code)) return { class: 'connect', retryable: true };
  return { class: 'connect', retryable: true };
}

/** True for the timeout before response headers (a candidate for failover). */
export function isTimeout(err: unknown): boolean {
  const code = errorCode(err);
  return code !== undefined && TIMEOUT_CODES.has(code);
}
