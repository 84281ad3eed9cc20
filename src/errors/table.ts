/**
 * The one table of errors Switchyard itself produces. Each entry fixes the HTTP status and
 * the OpenAI error `type` / `code` the client sees, so SDKs map them to the same exception
 * classes they raise against OpenAI (see the `ErrorResponse` schema in OpenAI's OpenAPI spec
 * and the error guide: 401 invalid_api_key, 404 model_not_found, 429 rate_limit_exceeded).
 *
 * Written here rather than with `@fastify/error` because each code also carries the
 * OpenAI-side `type` and `code`, which that helper has no place for.
 */

/**
 * Whether a client's retry can heal an error (the response headers follow from it, in
 * errors/reply.ts):
 * - `never`: retrying the same request cannot succeed (the key, the model, the body, a spent
 *   budget, a provider key the upstream refuses): `x-should-retry: false`, which the
 *   `openai` and `@anthropic-ai/sdk` SDKs and Claude Code obey (SDK `shouldRetry`: the header
 *   wins over the status);
 * - `wait`: the gateway's own capacity or the key's limits; a retry after the wait in
 *   `Retry-After` / `retry-after-ms` (the real expected wait) succeeds: `x-should-retry: true`;
 * - `maybe`: an upstream failure; final (`x-should-retry: false`) once the gateway itself
 *   tried and gave up (pipeline/endings.ts), else the SDK's own rule by status.
 */
export type Heals = 'never' | 'wait' | 'maybe';

export interface ErrorSpec {
  readonly status: number;
  readonly type: string;
  readonly code: string | null;
  readonly message: string;
  readonly heals: Heals;
}

export const ERRORS = {
  GW_ERR_INVALID_API_KEY: {
    status: 401,
    type: 'invalid_request_error',
    code: 'invalid_api_key',
    message: 'Incorrect or missing API key. Send it as "Authorization: Bearer <key>".',
    heals: 'never',
  },
  GW_ERR_MODEL_NOT_FOUND: {
    status: 404,
    type: 'invalid_request_error',
    code: 'model_not_found',
    message: 'The model does not exist or you do not have access to it.',
    heals: 'never',
  },
  GW_ERR_FORBIDDEN: {
    status: 403,
    type: 'invalid_request_error',
    code: 'insufficient_permissions',
    message: 'This key may not use this endpoint.',
    heals: 'never',
  },
  GW_ERR_INVALID_CONFIG: { status: 400, type: 'invalid_request_error', code: 'invalid_config', message: 'The config file is invalid.', heals: 'never' },
  GW_ERR_INVALID_REQUEST: { status: 400, type: 'invalid_request_error', code: null, message: 'Invalid request.', heals: 'never' },
  // OpenAI's own code for a string over its bound (`Invalid 'x': string too long. Expected a string with maximum length …`).
  GW_ERR_MODEL_ID_TOO_LONG: {
    status: 400,
    type: 'invalid_request_error',
    code: 'string_above_max_length',
    message: 'The model id is too long.',
    heals: 'never',
  },
  GW_ERR_INVALID_JSON: {
    status: 400,
    type: 'invalid_request_error',
    code: 'invalid_json',
    message: 'We could not parse the JSON body of your request.',
    heals: 'never',
  },
  GW_ERR_BODY_TOO_LARGE: {
    status: 413,
    type: 'invalid_request_error',
    code: 'request_too_large',
    message: 'The request body is larger than this gateway accepts.',
    heals: 'never',
  },
  GW_ERR_UNSUPPORTED_MEDIA_TYPE: {
    status: 415,
    type: 'invalid_request_error',
    code: 'unsupported_media_type',
    message: 'Send the request body as application/json.',
    heals: 'never',
  },
  // RFC 9110 §15.5.16: 415 also answers a Content-Encoding the server cannot decode (server/http/body-decoding.ts).
  GW_ERR_UNSUPPORTED_ENCODING: {
    status: 415,
    type: 'invalid_request_error',
    code: 'unsupported_content_encoding',
    message: 'Send the request body uncompressed.',
    heals: 'never',
  },
  GW_ERR_BODY_ENCODING: {
    status: 400,
    type: 'invalid_request_error',
    code: 'invalid_body_encoding',
    message: 'The request body could not be decoded as its Content-Encoding says.',
    heals: 'never',
  },
  // 426 Upgrade Required (RFC 9110, 15.5.22): Codex answers it by staying on HTTP for the session.
  GW_ERR_UPGRADE_REQUIRED: {
    status: 426,
    type: 'invalid_request_error',
    code: 'upgrade_required',
    message: "GET /v1/responses is the Responses API's WebSocket mode: open it with a WebSocket upgrade, or send the request as POST /v1/responses.",
    heals: 'never',
  },
  GW_ERR_WEBSOCKET_DISABLED: {
    status: 426,
    type: 'invalid_request_error',
    code: 'websocket_disabled',
    message:
      'WebSocket mode is turned off on this gateway (server.websocket.enabled: false): send the request as POST /v1/responses (Codex: drop supports_websockets from the provider).',
    heals: 'never',
  },
  GW_ERR_ROUTE_NOT_FOUND: { status: 404, type: 'invalid_request_error', code: 'unknown_url', message: 'Unknown request URL.', heals: 'never' },
  GW_ERR_PASSTHROUGH_OFF: {
    status: 404,
    type: 'invalid_request_error',
    code: 'unknown_url',
    message: 'This route is proxied to a passthrough upstream, and none is configured (passthrough.upstream).',
    heals: 'never',
  },
  GW_ERR_METHOD_NOT_ALLOWED: { status: 405, type: 'invalid_request_error', code: 'method_not_allowed', message: 'Method not allowed.', heals: 'never' },
  GW_ERR_UPSTREAM_UNREACHABLE: {
    status: 502,
    type: 'server_error',
    code: 'upstream_unreachable',
    message: 'The upstream provider could not be reached.',
    heals: 'maybe',
  },
  GW_ERR_UPSTREAM_TIMEOUT: { status: 504, type: 'server_error', code: 'upstream_timeout', message: 'The upstream provider timed out.', heals: 'maybe' },
  GW_ERR_UPSTREAM_AUTH: {
    status: 502,
    type: 'server_error',
    code: 'upstream_auth_failed',
    message: 'The gateway could not authenticate to the upstream provider.',
    heals: 'never',
  },
  GW_ERR_UPSTREAM_BAD_RESPONSE: {
    status: 502,
    type: 'server_error',
    code: 'upstream_bad_response',
    message: 'The upstream provider sent a response the gateway could not read.',
    heals: 'maybe',
  },
  GW_ERR_UPSTREAM_STREAM: {
    status: 502,
    type: 'server_error',
    code: 'upstream_stream_error',
    message: 'The upstream stream failed before it completed.',
    heals: 'maybe',
  },
  GW_ERR_UPSTREAM_ERROR: { status: 502, type: 'server_error', code: 'upstream_error', message: 'The upstream provider returned an error.', heals: 'maybe' },
  GW_ERR_RETRY_BUDGET: {
    status: 503,
    type: 'server_error',
    code: 'retry_budget_exhausted',
    message: 'The upstreams for this model are failing and the gateway is not retrying more right now.',
    heals: 'maybe',
  },
  GW_ERR_UPSTREAM_OVERLOADED: {
    status: 503,
    type: 'server_error',
    code: 'upstream_overloaded',
    message: 'Every upstream for this model is at its concurrency limit.',
    heals: 'wait',
  },
  // Not a 429: a 429 is the client's own key over its limits (docs/burst-control.md).
  GW_ERR_SHED_REJECTED: {
    status: 503,
    type: 'server_error',
    code: 'reasoning_burst_shed',
    message: 'Every account of this model is busy with deep-reasoning calls; retry after the time in Retry-After.',
    heals: 'wait',
  },
  GW_ERR_RATE_LIMITED: {
    status: 429,
    type: 'requests',
    code: 'rate_limit_exceeded',
    message: 'Rate limit reached for this key; retry after the time in Retry-After.',
    heals: 'wait',
  },
  GW_ERR_INSUFFICIENT_QUOTA: {
    status: 429,
    type: 'insufficient_quota',
    code: 'insufficient_quota',
    message: 'You exceeded your current quota: this key has spent its budget for the period.',
    heals: 'never',
  },
  // A tag budget (config `budgets:`): the same shape as a key's own, so clients handle it alike.
  GW_ERR_BUDGET_SPENT: {
    status: 429,
    type: 'insufficient_quota',
    code: 'insufficient_quota',
    message: 'You exceeded your current quota: a budget this request counts against is spent for the period.',
    heals: 'never',
  },
  GW_ERR_AUTH_THROTTLED: {
    status: 429,
    type: 'requests',
    code: 'rate_limit_exceeded',
    message: 'Too many failed authentication attempts; fix the API key and retry later.',
    heals: 'never',
  },
  GW_ERR_API_NOT_SUPPORTED: {
    status: 400,
    type: 'invalid_request_error',
    code: 'unsupported_api',
    message: 'This model is not served on this endpoint.',
    heals: 'never',
  },
  GW_ERR_PREVIOUS_RESPONSE_NOT_FOUND: {
    status: 400,
    type: 'invalid_request_error',
    // OpenAI's own code for an unknown previous_response_id, so clients handle it as they would there.
    code: 'previous_response_not_found',
    message: 'The previous response was not found.',
    heals: 'never',
  },
  GW_ERR_RESPONSE_NOT_FOUND: { status: 404, type: 'invalid_request_error', code: null, message: 'The response was not found.', heals: 'never' },
  // A prompt over the model's configured context_window (pipeline/context-window.ts): OpenAI's
  // own code for it, so agents compact as they would on the provider's answer; the message
  // (with the window and the estimate) is written per client API there.
  GW_ERR_CONTEXT_WINDOW: {
    status: 400,
    type: 'invalid_request_error',
    code: 'context_length_exceeded',
    message: "The request is longer than the model's context window; compact or shorten the conversation.",
    heals: 'never',
  },
  GW_ERR_UNSUPPORTED_PARAMETER: {
    status: 400,
    type: 'invalid_request_error',
    code: 'unsupported_parameter',
    message: 'A parameter is not supported with this model.',
    heals: 'never',
  },
  GW_ERR_SHUTTING_DOWN: {
    status: 503,
    type: 'server_error',
    code: 'shutting_down',
    message: 'This gateway instance is shutting down; retry the request.',
    heals: 'wait',
  },
  GW_ERR_OVERLOADED: {
    status: 503,
    type: 'server_error',
    code: 'server_overloaded',
    message: 'This gateway is processing too many large request bodies; retry the request shortly.',
    heals: 'wait',
  },
  // Written raw on a connection past server.max_connections(_per_address) (server/http/connection-cap.ts).
  GW_ERR_TOO_MANY_CONNECTIONS: {
    status: 503,
    type: 'server_error',
    code: 'too_many_connections',
    message: 'This gateway has too many connections open (in all, or from your address); retry shortly.',
    heals: 'wait',
  },
  GW_ERR_LEDGER_UNAVAILABLE: {
    status: 503,
    type: 'server_error',
    code: 'ledger_unavailable',
    message: 'The usage ledger cannot be read now.',
    heals: 'maybe',
  },
  // Every account left for the request spent its budget (config `budgets:` per upstream): the
  // same answer as GW_ERR_NO_TARGET for the client; the gateway's own refusal in its records.
  GW_ERR_ACCOUNTS_SPENT: {
    status: 503,
    type: 'server_error',
    code: 'no_upstream_available',
    message: 'Every upstream account for this model has spent its budget.',
    heals: 'never',
  },
  GW_ERR_NO_TARGET: { status: 503, type: 'server_error', code: 'no_upstream_available', message: 'No upstream can serve this model now.', heals: 'maybe' },
  GW_ERR_INTERNAL: { status: 500, type: 'server_error', code: 'internal_error', message: 'The gateway hit an internal error.', heals: 'maybe' },
} as const satisfies Record<string, ErrorSpec>;
export type ErrorCode = keyof typeof ERRORS;
