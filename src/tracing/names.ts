/**
 * Span attribute names. The `gen_ai.*` ones are the OpenTelemetry GenAI semantic conventions
 * (status: Development; "Semantic conventions for generative client AI spans",
 * opentelemetry.io/docs/specs/semconv/gen-ai/gen-ai-spans/, and the attribute registry there;
 * `gen_ai.provider.name` replaced `gen_ai.system` in semconv 1.37). They are written out here
 * rather than imported: `@opentelemetry/semantic-conventions` marks its incubating `gen_ai`
 * constants deprecated since they moved to the GenAI conventions' own repository, and this
 * file is loaded only when tracing is on. `server.*`, `error.type` and `http.*` are stable
 * general conventions. `switchyard.*` are the gateway's own.
 */

export const GEN_AI_OPERATION_NAME = 'gen_ai.operation.name';
export const GEN_AI_PROVIDER_NAME = 'gen_ai.provider.name';
export const GEN_AI_REQUEST_MODEL = 'gen_ai.request.model';
export const GEN_AI_RESPONSE_MODEL = 'gen_ai.response.model';
export const GEN_AI_USAGE_INPUT_TOKENS = 'gen_ai.usage.input_tokens';
export const GEN_AI_USAGE_OUTPUT_TOKENS = 'gen_ai.usage.output_tokens';
/** Part of `gen_ai.usage.input_tokens` served from the provider's prompt cache. */
export const GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS = 'gen_ai.usage.cache_read.input_tokens';
/** Part of `gen_ai.usage.input_tokens` written to the provider's prompt cache. */
export const GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS = 'gen_ai.usage.cache_creation.input_tokens';
/** Part of `gen_ai.usage.cache_creation.input_tokens` written to the 1-hour cache (the GenAI conventions have no lifetime split). */
export const SY_CACHE_WRITE_1H_TOKENS = 'switchyard.usage.cache_write_1h_tokens';
/** The well-known `gen_ai.operation.name` of a chat-style model call (chat completions, Responses, Messages). */
export const OPERATION_CHAT = 'chat';

export const SERVER_ADDRESS = 'server.address';
export const SERVER_PORT = 'server.port';
export const ERROR_TYPE = 'error.type';
export const HTTP_RESPONSE_STATUS_CODE = 'http.response.status_code';

/** The upstream id (config `upstreams[].id`) an attempt went to, or that served the request. */
export const SY_UPSTREAM = 'switchyard.upstream';
/** 1-based attempt number within the request. */
export const SY_ATTEMPT = 'switchyard.attempt';
/** Attempts made for the request. */
export const SY_ATTEMPTS = 'switchyard.attempts';
/** Time queued for an upstream slot, ms (an attempt's own; the request's is the sum). */
export const SY_QUEUE_MS = 'switchyard.queue_ms';
/** `x-switchyard-shed`: `model->fallback`, `queued:<ms>ms`, `effort:<a>-><b>` or `rejected`. */
export const SY_SHED = 'switchyard.shed';
/** `primary->fallback` when a fallback model served or was tried. */
export const SY_FALLBACK = 'switchyard.fallback';
/** The client key's configured name, never the key. */
export const SY_KEY = 'switchyard.key';
/** The request's cost, USD. */
export const SY_COST_USD = 'switchyard.cost_usd';
/** The public model that served (request) or that the attempt serves (attempt). */
export const SY_MODEL = 'switchyard.model';
/** The client API: `chat`, `responses`, `messages`. */
export const SY_API = 'switchyard.api';
export const SY_STREAM = 'switchyard.stream';
/** The request record's outcome (`ok`, `client_error`, `upstream_error`, `gateway_shed`, `gateway_refused`, `gateway_error`, `client_aborted`), or an attempt's (`answered`, `failed`, `refused`, `aborted`). */
export const SY_OUTCOME = 'switchyard.outcome';
/** The gateway's request id (`x-request-id`), which the log line and the ledger carry too. */
export const SY_REQUEST_ID = 'switchyard.request_id';
/** Arrival to the first event sent to the client, ms (streams). */
export const SY_TTFT_MS = 'switchyard.ttft_ms';
/** Hidden reasoning tokens, a part of `gen_ai.usage.output_tokens`. */
export const SY_REASONING_TOKENS = 'switchyard.usage.reasoning_tokens';
/** The usage was counted by the gateway's tokenizer (the upstream reported none). */
export const SY_USAGE_ESTIMATED = 'switchyard.usage.estimated';
/** The attempt counts against its account's learned capacity for deep (reasoning) calls. */
export const SY_DEEP = 'switchyard.deep';
