/**
 * The translator contract: one translator per (client API, wire API) pair, made per
 * attempt (it keeps the state of one response: tool-call indexes, usage so far, whether the
 * answer completed). The pipeline hands it the client's body once, then every upstream SSE
 * event exactly once (or the JSON body, or the error answer), writes the frames it returns
 * and takes usage only from it. A same-API ("passthrough") translator forwards each event's
 * bytes unchanged and only reads what it must (usage, completion, errors, generated text).
 *
 * Translators know API shapes, never a provider's transport (URLs, auth, pools: providers/)
 * and never the gateway's routing or records (pipeline/, router/).
 */
import type { ApiName } from '../apis/names.js';
import type { GatewayError } from '../errors/codes.js';
import type { Classified } from '../errors/classify.js';
import type { SseEvent } from '../sse/parse.js';
import type { Usage } from '../usage/usage.js';

/** An upstream failure, sorted once: what the router acts on, and what the client may get. */
export interface Failure {
  readonly classified: Classified;
  /** The error in gateway terms (status, type, code, message scrubbed of secrets). */
  readonly error: GatewayError;
  /**
   * The upstream's own words (scrubbed), for the operator's log line, kept even when the
   * client gets a generic error (a bad provider key); absent: `error.message` says it.
   */
  readonly reason?: string;
  /** For an account out of quota: when the provider said it comes back, epoch ms (errors/quota-reset.ts). */
  readonly resetAt?: number;
}

/** The body and protocol headers of one wire request (the provider adds URL, auth and transport headers). */
export interface WireBody {
  /** The JSON body in the wire API's shape. */
  readonly body: Record<string, unknown>;
  /** Protocol headers for the upstream (lower-case names), e.g. a forwarded `anthropic-beta`. */
  readonly headers?: Readonly<Record<string, string>>;
}

/** What one upstream event (or the end of the stream) means for the client. */
export interface StreamStep {
  /** Bytes to write to the client, in order (a passthrough event's own bytes). */
  readonly frames?: readonly Buffer[];
  /** Token usage so far (cumulative; the latest wins). */
  readonly usage?: Usage;
  /** The stream must end here with this failure; nothing after it is forwarded. */
  readonly error?: Failure;
  /**
   * The frames are a preamble (a response's `created` / `in_progress`, a message's
   * `message_start`): written with the first event that carries the answer, not before, so
   * an error right after a preamble can still fail over.
   */
  readonly hold?: boolean;
  /**
   * The frames end the answer in the client API's own terms: they hold its terminal event
   * (chat's `data: [DONE]`, Responses' `response.completed` / `response.incomplete`,
   * Messages' `message_stop`). Once those frames were written the request is complete, with
   * the usage reported so far, whatever the client or the upstream does afterwards.
   */
  readonly done?: boolean;
  /** Generated answer text (content, tool names and arguments), for an estimate when no usage comes. */
  readonly text?: string;
  /** Generated reasoning text, likewise. */
  readonly reasoning?: string;
  /**
   * The event's data, when it carries generated text the translator did not read yet (a
   * cheap path): handed back to `generated()` only if the answer ends without usage, or
   * once a long stream's waiting data passes its budget (pipeline/generated-text.ts).
   */
  readonly deferred?: string;
}

/** A 2xx JSON answer in the client's shape. */
export interface JsonResult {
  readonly body: Buffer;
  readonly usage: Usage | null;
  /** Generated text of an answer that reported no usage, for an estimate. */
  readonly text?: string;
  /** The answer is an error object sent with a 2xx status: nothing is sent, the route may fail over. */
  readonly failure?: Failure;
}

/** What an answered Responses call leaves for a follow-up (`previous_response_id`): the response's id and output items. */
export interface ResponseAnswer {
  readonly id: string;
  readonly output: readonly unknown[];
}

export interface Translator {
  readonly client: ApiName;
  readonly wire: ApiName;
  /**
   * The wire request for one client body, already prepared for the target (`model` is the
   * upstream model id, parameters normalised for the model).
   * @throws GatewayError 400 (`param` set) when the request cannot be expressed in the wire API.
   */
  request(body: Readonly<Record<string, unknown>>): WireBody;
  /**
   * A 2xx JSON answer.
   * @param raw the body's bytes; @param parsed the same, parsed once by the pipeline.
   * @throws GatewayError `GW_ERR_UPSTREAM_BAD_RESPONSE` when it is not an answer of the wire API.
   */
  json(raw: Buffer, parsed: unknown): JsonResult;
  /** One upstream SSE event, in order. */
  event(ev: SseEvent): StreamStep;
  /** The upstream stream ended: final frames (e.g. a missing `[DONE]`), or the failure of an incomplete answer. */
  end(): StreamStep;
  /** The generated text (and reasoning) of events whose steps were `deferred`, in order. */
  generated?(events: readonly string[]): { readonly text: string; readonly reasoning: string };
  /**
   * A non-2xx answer.
   * @param headers lower-case response headers (`retry-after` is kept on the error).
   * @param body the first bytes of the body (capped); anything, JSON or not.
   */
  error(status: number, headers: Readonly<Record<string, string | string[] | undefined>>, body: Buffer): Failure;
  /** A Responses client's translators: the completed response's id and output (null until it completed). */
  answer?(): ResponseAnswer | null;
}

/** What a translator is made with, per attempt. */
export interface TranslatorContext {
  readonly stream: boolean;
  /** The client asked to receive the usage event (chat's `stream_options.include_usage`). */
  readonly wantsUsage: boolean;
  /** Exact strings scrubbed from relayed error messages (the upstream's key). */
  readonly secrets: readonly (string | undefined)[];
  /** The longest upstream wait (`Retry-After`) relayed with an upstream error, ms (routing.retry_after_cap_ms). */
  readonly retryAfterCapMs: number;
  /** The upstream's kind options, defaults applied (translation options such as thinking budgets live there). */
  readonly options: Readonly<Record<string, unknown>>;
  /** Client headers the client API forwards (lower-case names, e.g. `anthropic-beta`). */
  readonly forwardHeaders?: Readonly<Record<string, string>>;
  /**
   * The gateway's estimate of the prompt's input tokens (o200k_base, tool definitions
   * included: `usage/estimate.ts`), for a client API whose stream announces the prompt size
   * before a bridged wire reports any (Messages' `message_start`); absent: not counted.
   */
  readonly promptTokens?: number;
  /** The field the target model takes its output cap in (its `capabilities.max_tokens_field`), for translators that write one. */
  readonly maxTokensField?: 'max_tokens' | 'max_completion_tokens' | undefined;
  /**
   * Prompt-cache breakpoints on a Messages wire request (the target model's
   * `cache_breakpoints`; translate/messages-cache.ts): `auto` (also when absent) or `off`.
   */
  readonly cacheBreakpoints?: 'auto' | 'off';
}

export type TranslatorFactory = (ctx: TranslatorContext) => Translator;
