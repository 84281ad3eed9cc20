/**
 * An inbound API: one request/response dialect the gateway serves (OpenAI chat completions,
 * OpenAI Responses, Anthropic Messages). The pipeline (`pipeline/handle.ts`) is the same
 * for all of them; what differs — where the stream flag and reasoning effort sit, how a
 * body is reshaped for a model, which SSE event carries usage or ends the stream, how an
 * error looks — is answered by the API's descriptor.
 */
import type { Model } from '../config/load.js';
import type { GatewayError } from '../errors/codes.js';
import type { Usage } from '../pipeline/usage.js';
import type { ApiName } from '../providers/types.js';
import type { SseEvent } from '../sse/parse.js';

/** What one upstream SSE event means for the relay. */
export interface EventInfo {
  /** The upstream reported an error in the stream. */
  readonly error?: GatewayError;
  /** The response is complete (OpenAI `[DONE]` or a finish reason, `response.completed`, `message_stop`). */
  readonly end?: boolean;
  /** Token usage carried by the event. */
  readonly usage?: Usage;
  /** Not forwarded to the client. */
  readonly drop?: boolean;
  /** Carries generated text: kept to estimate usage if the upstream never reports it. */
  readonly delta?: boolean;
}

/** The body sent to one target and the parameters removed from it. */
export interface PreparedBody {
  readonly body: Record<string, unknown>;
  /** Top-level parameters dropped for this model (for `x-switchyard-dropped-params`). */
  readonly dropped: readonly string[];
}

/** Sorts the events of one upstream stream, in order. */
export interface StreamReader {
  inspect(ev: SseEvent): EventInfo;
}

export interface InboundApi {
  readonly name: ApiName;
  /** The route, for messages (`/v1/chat/completions` …). */
  readonly path: string;
  /** The request's `reasoning_effort` equivalent (`minimal` … `xhigh`), for deep-call detection; null when none. */
  effort(body: Record<string, unknown>): string | null;
  /** Whether the client asked to receive the usage event (chat's `stream_options.include_usage`). */
  wantsUsage(body: Record<string, unknown>): boolean;
  /** Client-supplied session hint for `sticky` routing (before hashing), if any. */
  sessionHint(body: Record<string, unknown>): string | undefined;
  /** Whether the prompt holds image parts (models without `vision` are then left out of fallbacks). */
  hasImages(body: Record<string, unknown>): boolean;
  /** The prompt as chat-style messages (`[{role, content}]`), for token estimates. */
  promptMessages(body: Record<string, unknown>): unknown;
  /** The requested output-token cap, if any. */
  maxOutputTokens(body: Record<string, unknown>): number | undefined;
  /**
   * The body for one target: `model` set to the upstream model id, gateway fields removed,
   * parameters normalised for `model` (see `apis/normalise.ts`).
   * @param primary whether `model` is the one the client asked for (only then may a
   *        parameter be rejected; fallbacks and shed targets drop what they cannot take).
   * @throws GatewayError 400 `unsupported_parameter` when the model rejects a parameter.
   */
  prepare(body: Record<string, unknown>, upstreamModel: string, model: Model, primary: boolean): PreparedBody;
  /**
   * A reader for one upstream stream (some APIs spread usage over several events).
   * @param secrets exact strings scrubbed from relayed error messages.
   */
  streamReader(wantsUsage: boolean, secrets: readonly (string | undefined)[]): StreamReader;
  /** Output and reasoning text of the `data` payloads of delta events, for estimates. */
  deltaTexts(data: readonly string[]): { output: string[]; reasoning: string[] };
  /** Usage of a non-streaming response body (parsed JSON). */
  jsonUsage(body: unknown): Usage | null;
  /** The JSON error body in this API's dialect. */
  errorBody(err: GatewayError): unknown;
  /** The final SSE event of a stream broken after it started, in this API's dialect. */
  sseErrorFrame(err: GatewayError): Buffer;
  /** Client request headers forwarded to the upstream (lower-case names). */
  readonly forwardHeaders: readonly string[];
}
