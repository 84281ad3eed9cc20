/**
 * One classifier for every upstream failure (an HTTP error answer, an error event inside a
 * stream, a thrown network error), so routing, health, retries, metrics and the client
 * response all agree on what a failure means. Idea after Bifrost's `core/failureclass.go`:
 * one function reads the status, the provider's error type, code and message, and the more
 * specific fact wins.
 *
 * Sources of the provider facts below:
 * - OpenAI error guide (platform.openai.com/docs/guides/error-codes): 401 invalid_api_key,
 *   429 rate_limit_exceeded vs 429 insufficient_quota ("You exceeded your current quota,
 *   please check your plan and billing details"), 503 "The engine is currently overloaded";
 *   codes context_length_exceeded and content_policy_violation. Recordings:
 *   openai-error-429-rate-limit-exceeded.json, openai-chat-error-404-model-not-found.json,
 *   openai-responses-error-400.json (a 400 with code model_not_found),
 *   openai-responses-stream-midstream-error-insufficient-quota.chunks.jsonl (in-stream quota).
 * - Anthropic errors (docs.anthropic.com/en/api/errors): 400 invalid_request_error (also
 *   "prompt is too long" and "Your credit balance is too low"), 401 authentication_error,
 *   402 billing_error, 403 permission_error, 404 not_found_error, 413 request_too_large,
 *   429 rate_limit_error, 500 api_error, 504 timeout_error, 529 overloaded_error (also sent
 *   as a stream `error` event after a 200). Recordings: anthropic-error-400-invalid-request.json,
 *   anthropic-error-404-not-found.json.
 * - OpenRouter errors (openrouter.ai/docs/api-reference/errors): `error.code` is the numeric
 *   status, also inside a 200 stream; 402 insufficient credits, 403 moderation flag.
 *   Recordings: openrouter-error-429.json, openrouter-chat-stream-midstream-error.sse.
 * - Azure OpenAI: code content_filter for prompts its filter refused.
 * - Gemini: 429 RESOURCE_EXHAUSTED for per-minute quota with RetryInfo (recording
 *   gemini-error-429-retry-info.json): a rate limit, not billing, though its message says
 *   "quota".
 * - undici (`UND_ERR_*`) and Node (`E*`) error codes for thrown errors.
 */

export type FailureClass =
  | 'rate_limited' // 429 rate limit: this account is throttled now
  | 'quota' // out of credit / billing (OpenAI 429 insufficient_quota, Anthropic 402 billing_error)
  | 'overloaded' // provider capacity (Anthropic 529 overloaded_error, 503 "overloaded")
  | 'server' // other 5xx, 408
  | 'timeout' // connect / headers / body timeout
  | 'stall' // no first event within the first-token timeout (set by the caller, not derived from status)
  | 'connect' // refused / reset / DNS: nothing was processed
  | 'credential' // the provider key itself is bad (401, invalid_api_key, authentication_error, a 403 that says the key is invalid/revoked)
  | 'permission' // 403 for this model/feature only (Anthropic permission_error, OpenAI "does not have access to model")
  | 'context_length' // prompt too long for the model (OpenAI context_length_exceeded, Anthropic "prompt is too long")
  | 'content_policy' // refused by the provider's safety system (content_policy_violation, content_filter)
  | 'bad_request' // other 400/413/422: the caller's request
  | 'not_found' // the model is not served at this upstream (model_not_found, a 404 naming the model): this target cannot serve it
  | 'stream' // a stream broke or carried an error after bytes reached the client
  | 'bad_response' // unreadable upstream answer (bad JSON, wrong content type)
  | 'unknown' // a thrown network error with a code this table does not know
  | 'gateway'; // the gateway itself failed (a thrown error with no code: a bug or limit of ours), never the upstream's fault

export interface Classified {
  readonly class: FailureClass;
  /** Whether another attempt (another target, or later) may succeed. */
  readonly retryable: boolean;
  /** What is broken: the caller's request, this target (account + model), or the whole account. */
  readonly scope: 'request' | 'target' | 'account' | 'gateway';
}

export interface FailureFacts {
  /** The upstream's HTTP status; absent for thrown errors and for errors inside a 200 stream. */
  readonly status?: number;
  /** The provider's error fields, already read from its body or stream event (OpenAI error.type / error.code / error.message; Anthropic error.type / error.message). */
  readonly type?: string | null;
  readonly code?: string | null;
  readonly message?: string | null;
  /** A thrown network error (undici UND_ERR_* codes, Node E* codes, looked up through `cause`). */
  readonly thrown?: unknown;
  /**
   * A failure the gateway saw itself: an unreadable answer (`bad_response`), a stream cut
   * short (`stream`, retryable: before the first byte it may fail over; the caller clears
   * `retryable` once bytes reached the client), no first event in time (`stall`).
   */
  readonly local?: 'unreadable' | 'cut' | 'stall';
}

/** What each class means for routing: retry elsewhere or not, and what is broken. */
const MEANING: Readonly<Record<FailureClass, Omit<Classified, 'class'>>> = {
  rate_limited: { retryable: true, scope: 'target' },
  overloaded: { retryable: true, scope: 'target' },
  server: { retryable: true, scope: 'target' },
  timeout: { retryable: true, scope: 'target' },
  stall: { retryable: true, scope: 'target' },
  connect: { retryable: true, scope: 'target' },
  not_found: { retryable: true, scope: 'target' },
  permission: { retryable: true, scope: 'target' },
  bad_response: { retryable: true, scope: 'target' },
  unknown: { retryable: true, scope: 'target' },
  // Our own failure: another target would fail the same way, and no upstream is to blame.
  gateway: { retryable: false, scope: 'gateway' },
  // Another account may still serve the request; this account is out until it is fixed.
  quota: { retryable: true, scope: 'account' },
  credential: { retryable: true, scope: 'account' },
  context_length: { retryable: false, scope: 'request' },
  content_policy: { retryable: false, scope: 'request' },
  bad_request: { retryable: false, scope: 'request' },
  // Bytes already reached the client: the request cannot be replayed (the target is at fault).
  stream: { retryable: false, scope: 'target' },
};

/**
 * The `Classified` for a class the caller decided itself (`stall`, `stream`, `bad_response`,
 * a queue that is full), with the retryable flag and scope every class carries.
 */
export function classifiedAs(cls: FailureClass): Classified {
  return { class: cls, ...MEANING[cls] };
}

/** The caller's fault (scope 'request'): answered as a client error, never counted against a target's health. */
export function isCallerFault(c: Classified): boolean {
  return c.scope === 'request';
}

/** Not the upstream's doing (the caller's request or the gateway itself): health, cooldown and upstream metrics stay as they were. */
export function isUpstreamBlameless(c: Classified): boolean {
  return c.scope === 'request' || c.scope === 'gateway';
}

const TIMEOUT_CODES = new Set(['UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT', 'ETIMEDOUT']);
const CONNECT_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'UND_ERR_SOCKET',
  'UND_ERR_CLOSED',
]);

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

/**
 * A thrown error: undici / Node timeout codes, connect codes, any other code `unknown`.
 * Every undici and Node network error carries a `code`; one without (a TypeError, a
 * RangeError from serialising, a thrown string) came from the gateway's own code: `gateway`.
 */
function fromThrown(err: unknown): FailureClass {
  const code = errorCode(err);
  if (code === undefined) return 'gateway';
  if (code && TIMEOUT_CODES.has(code)) return 'timeout';
  if (code && CONNECT_CODES.has(code)) return 'connect';
  return 'unknown';
}

/** The provider's fields, lower-cased, plus the status (a numeric `code` stands in for a missing one). */
interface Words {
  readonly status: number | undefined;
  readonly type: string;
  readonly code: string;
  readonly message: string;
}

function words(f: FailureFacts): Words {
  const code = (f.code ?? '').trim().toLowerCase();
  // OpenRouter puts the HTTP status in `error.code`, also for errors inside a 200 stream.
  const numeric = /^[1-5]\d\d$/.test(code) ? Number(code) : undefined;
  return { status: f.status ?? numeric, type: (f.type ?? '').toLowerCase(), code, message: (f.message ?? '').toLowerCase() };
}

const is = (w: Words, ...names: string[]): boolean => names.includes(w.type) || names.includes(w.code);
/** A 4xx, or no status at all (an in-stream error): where message wording may decide. */
const clientSide = (w: Words): boolean => w.status === undefined || (w.status >= 400 && w.status < 500);

/**
 * Out of credit. Type/code from OpenAI (insufficient_quota) and Anthropic (billing_error);
 * 402 Payment Required (Anthropic billing_error, OpenRouter "insufficient credits"); the
 * wording of Anthropic's 400 "Your credit balance is too low". A 429 is quota only by its
 * type/code: Gemini's per-minute 429 says "exceeded your current quota" and stays a rate
 * limit (recording gemini-error-429-retry-info.json); or by naming a daily quota (OpenAI's
 * "… on requests per day (RPD)", Gemini's quota id `…PerDayPerProjectPerModel`, Vertex's
 * "Requests per day per user"): a day's allowance, not a concurrency window. Anthropic's
 * spend limit is a 400 "You have reached your specified API usage limits. You will regain
 * access on …" (anthropics/claude-code issues #2127, #38035).
 */
function isQuota(w: Words): boolean {
  if (is(w, 'insufficient_quota', 'billing_error', 'payment_required') || w.status === 402) return true;
  if ((w.status === 429 || w.status === undefined) && /\bper ?day\b|perday|_per_day\b/.test(w.message)) return true;
  if (clientSide(w) && /specified (workspace )?api usage limits|regain access on \d{4}-/.test(w.message)) return true;
  // Not the word "billing": OpenAI's free-tier rate-limit message links to account/billing.
  return clientSide(w) && w.status !== 429 && /credit balance|insufficient credits?|out of credits?/.test(w.message);
}

/** A message saying the key is bad ("Incorrect API key provided", "API key not valid", "API key expired", "the API key was revoked"). */
const KEY_BAD =
  /(api[ _-]?key|credential|access token)\b.{0,40}\b(invalid|not valid|incorrect|revoked|expired|disabled|deactivated)\b|\b(invalid|incorrect|revoked|expired|disabled|deactivated)\b.{0,40}(api[ _-]?key|credential|access token)/;

/**
 * The key is bad: 401, authentication_error (Anthropic), invalid_api_key (OpenAI), a 403 or
 * an in-stream error whose message says so, or Gemini's 400 "API key not valid" / "API key
 * expired" (Gemini API troubleshooting guide). Other 400s stay the caller's even when they
 * mention a key. Anthropic's 403 "Your API key does not have permission to use the
 * specified resource" names no fault of the key: `permission`.
 */
function isCredential(w: Words): boolean {
  if (w.status === 401 || is(w, 'authentication_error', 'invalid_api_key', 'invalid_authentication', 'unauthorized')) return true;
  if (w.status === 400) return /^api key (not valid|expired)\b/.test(w.message);
  return (w.status === 403 || w.status === undefined) && KEY_BAD.test(w.message);
}

/** Prompt too long: OpenAI context_length_exceeded, Anthropic "prompt is too long", OpenAI "maximum context length". */
function isContextLength(w: Words): boolean {
  if (is(w, 'context_length_exceeded')) return true;
  return clientSide(w) && /prompt is too long|maximum context length|context window|context length exceeded/.test(w.message);
}

/** Safety refusals: OpenAI content_policy_violation, Azure content_filter, OpenAI "safety system", OpenRouter's 403 moderation flag. */
function isContentPolicy(w: Words): boolean {
  if (is(w, 'content_policy_violation', 'content_filter', 'content_policy')) return true;
  return clientSide(w) && /safety system|\bflagged\b/.test(w.message);
}

/** A class named by type/code/message alone, whatever the status says; null when they name none. */
function fromFields(w: Words): FailureClass | null {
  if (isQuota(w)) return 'quota';
  if (isCredential(w)) return 'credential';
  if (isContentPolicy(w)) return 'content_policy';
  // A 403 that is not about the key: this model or feature is not open to this account.
  if (w.status === 403 || is(w, 'permission_error', 'permission_denied')) return 'permission';
  if (isContextLength(w)) return 'context_length';
  if (is(w, 'overloaded_error') || (w.status === 503 && /overloaded/.test(w.message))) return 'overloaded';
  if (is(w, 'rate_limit_error', 'rate_limit_exceeded')) return 'rate_limited';
  if (isModelNotFound(w)) return 'not_found';
  // Any other 404 names a resource of the caller's (a previous response, a file, a batch):
  // the caller's request, never a reason to take the target down for everyone.
  if (w.status === 404 || is(w, 'not_found_error')) return 'bad_request';
  return null;
}

/**
 * The upstream does not serve the model asked of it (the target's config is wrong for this
 * account): OpenAI and Groq `model_not_found`; a 404 or `not_found_error` whose message names
 * a model (Anthropic "model: claude-…", Gemini "models/… is not found").
 */
function isModelNotFound(w: Words): boolean {
  if (is(w, 'model_not_found')) return true;
  return (w.status === 404 || is(w, 'not_found_error')) && /\bmodels?\b/.test(w.message);
}

/** The class the status alone gives (RFC 9110; 529 is Anthropic's overloaded). */
function fromStatus(status: number): FailureClass {
  if (status === 429) return 'rate_limited';
  if (status === 529) return 'overloaded';
  if (status === 408 || status >= 500) return 'server';
  if (status >= 400) return 'bad_request';
  // A non-error status handed over as a failure: the answer was not what was expected.
  return 'bad_response';
}

/** Generic error types that only say which side failed; used when there is no status. */
function fromGenericType(w: Words): FailureClass | null {
  if (is(w, 'server_error', 'api_error', 'timeout_error', 'internal_error')) return 'server';
  if (is(w, 'invalid_request_error', 'request_too_large')) return 'bad_request';
  return null;
}

/**
 * Sorts any upstream failure.
 *
 * Order: a failure the gateway saw itself (`local`) is that class; a thrown error is sorted
 * by its code (timeout, connect, else unknown). Otherwise type/code/message win over the
 * status where they are more specific (a 429 with
 * insufficient_quota is `quota`, a 400 with context_length_exceeded is `context_length`, a
 * 400 with model_not_found is `not_found`, a 403 is `credential` when its type or message
 * says the key is bad, else `permission`); then the status (or a numeric `code` standing in
 * for it: 418 → bad_request, 599 → server); then a generic type (server_error,
 * invalid_request_error) for in-stream errors without a status; else `unknown`.
 */
export function classifyFailure(f: FailureFacts): Classified {
  if (f.local === 'unreadable') return classifiedAs('bad_response');
  if (f.local === 'stall') return classifiedAs('stall');
  if (f.local === 'cut') return { ...classifiedAs('stream'), retryable: true };
  const noFields = f.status === undefined && !f.type && !f.code && !f.message;
  if (f.thrown !== undefined && noFields) return classifiedAs(fromThrown(f.thrown));
  const w = words(f);
  const cls = fromFields(w) ?? (w.status !== undefined ? fromStatus(w.status) : null) ?? fromGenericType(w) ?? 'unknown';
  return classifiedAs(cls);
}

/**
 * A failure seen after bytes reached the client: nothing can be retried any more, and it
 * counts as a broken stream (`stream`), except a stall or timeout, which keep their class
 * (the latency they say something about is the target's), and the gateway's own failure.
 */
export function afterFirstByte(c: Classified): Classified {
  const cls: FailureClass = c.class === 'timeout' || c.class === 'stall' || c.class === 'gateway' ? c.class : 'stream';
  return { class: cls, retryable: false, scope: c.scope };
}
