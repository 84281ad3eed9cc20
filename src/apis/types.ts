/**
 * An API as a *client* speaks it to the gateway (OpenAI chat completions, OpenAI Responses,
 * Anthropic Messages): where its stream flag, reasoning effort and session hint sit, how a
 * body is reshaped for a model, and how its errors look. The pipeline (`pipeline/handle.ts`)
 * is the same for all of them; how a response travels from the API an upstream speaks to
 * the API the client speaks is the translators' job (`translate/`).
 */
import type { Model } from '../config/types.js';
import type { GatewayError } from '../errors/codes.js';
import type { Prompt } from '../usage/prompt-parts.js';
import type { ApiName } from './names.js';

/** The body sent to one target and the parameters removed from it. */
export interface PreparedBody {
  readonly body: Record<string, unknown>;
  /** Top-level parameters dropped for this model (for `x-switchyard-dropped-params`). */
  readonly dropped: readonly string[];
}

/** A body's session hints, each absent when not a non-empty string. */
export interface SessionHints {
  /** The client's own prompt-cache key (chat's and Responses' `prompt_cache_key`). */
  readonly cacheKey?: string | undefined;
  /** The end user (`user`; Messages' `metadata.user_id`). */
  readonly user?: string | undefined;
  /** How long the request asked its prompt cache to live, ms (apis/cache-lifetime.ts); the session's pin lasts at least that. */
  readonly cacheLifetimeMs?: number | undefined;
}

/** An operation of a client API other than asking for an answer: `compact` (Responses, `POST /v1/responses/compact`). */
export type ApiOperation = 'compact';

export interface InboundApi {
  readonly name: ApiName;
  /** The route, for messages (`/v1/chat/completions` …). */
  readonly path: string;
  /**
   * Set for an operation other than an answer (a compaction): the call is sent to the
   * account as that operation, only to accounts that speak `name` itself (no translator
   * bridges it to another wire API), and its answer is not journalled for follow-ups.
   * Recorded as `<name>/<operation>` (`responses/compact`).
   */
  readonly operation?: ApiOperation;
  /** The request's `reasoning_effort` equivalent (`minimal` … `xhigh`), for deep-call detection; null when none. */
  effort(body: Record<string, unknown>): string | null;
  /**
   * The body with its reasoning effort set to `effort` (the shed ladder's lower-effort rung),
   * in this API's own field; the body itself is not modified.
   */
  withEffort(body: Record<string, unknown>, effort: string): Record<string, unknown>;
  /** Whether the client asked to receive the usage event (chat's `stream_options.include_usage`). */
  wantsUsage(body: Record<string, unknown>): boolean;
  /**
   * What the body says about the `sticky` session (before hashing; pipeline/session.ts
   * ranks them among the headers): the client's prompt-cache key, and the end user.
   */
  sessionHints(body: Record<string, unknown>): SessionHints;
  /** Whether the prompt holds image parts (models without `vision` are then left out of fallbacks). */
  hasImages(body: Record<string, unknown>): boolean;
  /**
   * The prompt for token estimates (usage/prompt-parts.ts): the turns, system or
   * instructions first, and the tool definitions, in this API's own shapes.
   */
  prompt(body: Record<string, unknown>): Prompt;
  /** The requested output-token cap, if any. */
  maxOutputTokens(body: Record<string, unknown>): number | undefined;
  /**
   * The body for one target: `model` set to the upstream model id, gateway fields removed,
   * parameters normalised for `model` (see `apis/normalise.ts`), still in this API's shape.
   * @param primary whether `model` is the one the client asked for (only then may a
   *        parameter be rejected; fallbacks and shed targets drop what they cannot take).
   * @throws GatewayError 400 `unsupported_parameter` when the model rejects a parameter.
   */
  prepare(body: Record<string, unknown>, upstreamModel: string, model: Model, primary: boolean): PreparedBody;
  /** The JSON error body in this API's dialect. */
  errorBody(err: GatewayError): unknown;
  /** The final SSE event of a stream broken after it started, in this API's dialect. */
  sseErrorFrame(err: GatewayError): Buffer;
  /** Client request headers forwarded to the upstream (lower-case names). */
  readonly forwardHeaders: readonly string[];
}
