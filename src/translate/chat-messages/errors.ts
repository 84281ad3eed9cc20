/**
 * Anthropic error bodies -> OpenAI error bodies, so OpenAI SDKs raise the same exception
 * classes they would against OpenAI (the SDKs pick the class from the HTTP status).
 *
 * Anthropic's shape (API reference, "Errors"): `{"type":"error","error":{"type","message"},
 * "request_id"}`, with 400 invalid_request_error, 401 authentication_error, 402
 * billing_error, 403 permission_error, 404 not_found_error, 413 request_too_large, 429
 * rate_limit_error, 500 api_error, 504 timeout_error, 529 overloaded_error. The same
 * `error` object arrives mid-stream as an SSE `event: error`.
 */

/** The fields of an OpenAI error object (`{"error": OpenAIErrorFields}`). */
export interface OpenAIErrorFields {
  message: string;
  type: string;
  param: string | null;
  code: string | null;
}

/** What one Anthropic error type becomes on the OpenAI side. */
export interface MappedError {
  /** HTTP status the client gets. */
  readonly status: number;
  /** OpenAI `error.type`. */
  readonly type: string;
  /** OpenAI `error.code`. */
  readonly code: string | null;
}

/**
 * Anthropic `error.type` -> OpenAI status / type / code. Statuses follow what OpenAI sends
 * for the same condition: 529 (non-standard) becomes 503, and an exhausted balance
 * (billing_error, 402) becomes OpenAI's 429 `insufficient_quota`.
 */
export const ANTHROPIC_ERROR_MAP: Readonly<Record<string, MappedError>> = {
  invalid_request_error: { status: 400, type: 'invalid_request_error', code: null },
  authentication_error: { status: 401, type: 'authentication_error', code: 'invalid_api_key' },
  billing_error: { status: 429, type: 'insufficient_quota', code: 'insufficient_quota' },
  permission_error: { status: 403, type: 'permission_error', code: null },
  not_found_error: { status: 404, type: 'invalid_request_error', code: null },
  request_too_large: { status: 413, type: 'invalid_request_error', code: 'request_too_large' },
  rate_limit_error: { status: 429, type: 'rate_limit_error', code: 'rate_limit_exceeded' },
  api_error: { status: 500, type: 'server_error', code: null },
  timeout_error: { status: 504, type: 'server_error', code: 'timeout' },
  overloaded_error: { status: 503, type: 'server_error', code: 'overloaded' },
};

/** Status for an HTTP status whose error type is unknown: 529 -> 503, anything else kept. */
function fallbackStatus(status: number): number {
  return status === 529 ? 503 : status;
}

/**
 * Maps one Anthropic `error` object (from an error body or a stream `error` event).
 * @param httpStatus the upstream's HTTP status (200 for a mid-stream error).
 * @param err the value of the `error` field; anything.
 */
export function mapAnthropicError(httpStatus: number, err: unknown): { status: number; error: OpenAIErrorFields } {
  const e = err && typeof err === 'object' ? (err as Record<string, unknown>) : {};
  const aType = typeof e['type'] === 'string' ? e['type'] : undefined;
  const message = typeof e['message'] === 'string' && e['message'] !== '' ? e['message'] : `The upstream provider returned ${aType ?? `HTTP ${httpStatus}`}.`;
  const known = aType !== undefined ? ANTHROPIC_ERROR_MAP[aType] : undefined;
  if (known) {
    let code = known.code;
    if (aType === 'not_found_error' && /\bmodel\b/i.test(message)) code = 'model_not_found';
    return { status: known.status, error: { message, type: known.type, param: null, code } };
  }
  const status = httpStatus >= 400 ? fallbackStatus(httpStatus) : 500;
  return {
    status,
    error: { message, type: status >= 500 ? 'server_error' : 'invalid_request_error', param: null, code: aType ?? null },
  };
}

/**
 * Translates an Anthropic error response.
 * @param status the upstream's HTTP status (>= 400).
 * @param body the (decoded, possibly capped) response body; non-JSON gets a generic message.
 * @returns the status and `{"error":{message,type,param,code}}` body the client gets.
 */
export function toOpenAIError(status: number, body: Buffer): { status: number; body: { error: OpenAIErrorFields } } {
  let err: unknown;
  try {
    err = (JSON.parse(body.toString('utf8')) as { error?: unknown } | null)?.error;
  } catch {
    err = undefined;
  }
  if (err && typeof err === 'object') {
    const mapped = mapAnthropicError(status, err);
    return { status: mapped.status, body: { error: mapped.error } };
  }
  const mapped = fallbackStatus(status);
  return {
    status: mapped,
    body: {
      error: {
        message: `The upstream provider returned HTTP ${status}.`,
        type: mapped >= 500 ? 'server_error' : 'invalid_request_error',
        param: null,
        code: null,
      },
    },
  };
}
