/**
 * The contract between the request pipeline and a provider. A provider is transport and
 * auth only: which wire APIs an account speaks, how to send one wire request to it (URL,
 * auth header, vendor headers, connection pool), how to read its vendor's rate-limit
 * headers on an answer, and how to close. It never reads or writes
 * an API's JSON shapes (that is `translate/`), and knows nothing about Fastify, metrics,
 * Redis or other providers.
 */
import type { ApiName } from '../apis/names.js';
import type { LiveUpstream, ProviderKindInfo } from '../config/types.js';

export type { ApiName } from '../apis/names.js';
import type { UpstreamResponse } from '../upstream/send.js';
export type { UpstreamResponse } from '../upstream/send.js';

/** One request in a wire API's shape, as a translator made it. */
export interface WireRequest {
  /** The wire API of `body` (one the provider speaks). */
  readonly api: ApiName;
  /** The JSON body; `model` is the upstream model id. Providers must not mutate it. */
  readonly body: Readonly<Record<string, unknown>>;
  readonly stream: boolean;
  /** Protocol headers from the translator (lower-case names), e.g. a client's `anthropic-beta`. */
  readonly headers?: Readonly<Record<string, string>>;
  /** Propagated to the upstream as `x-request-id` for cross-system tracing. */
  readonly requestId: string;
  /** A Responses API operation other than creating a response: `compact` (`POST /responses/compact`). */
  readonly operation?: 'compact';
  /** Aborts the upstream call (client disconnect, deadline, shutdown). */
  readonly signal: AbortSignal;
}

/** One rate-limit window of an account, as its provider's headers state it. */
export interface Allowance {
  /** The window's size (requests or tokens), null when not sent. */
  readonly limit: number | null;
  /** What is left of it. */
  readonly remaining: number;
  /** Time until the window refills, ms; null when not sent or unreadable. */
  readonly resetInMs: number | null;
}

/** What an answer's rate-limit headers say about the account's windows (each absent when not sent). */
export interface RateWindows {
  readonly requests?: Allowance;
  readonly tokens?: Allowance;
}

export interface Provider {
  /** The wire APIs the account speaks. */
  readonly wireApis: ReadonlySet<ApiName>;
  /**
   * The account's vendor as the OpenTelemetry GenAI conventions name it (`gen_ai.provider.name`:
   * `openai`, `anthropic`, `azure.ai.openai` …), for trace spans; absent: the upstream's
   * `provider` kind is used.
   */
  readonly genAiProvider?: string;
  /**
   * Reads the vendor's rate-limit headers of an answer (any status); absent for providers
   * whose vendor sends none.
   */
  readonly rateWindows?: (headers: Readonly<Record<string, string | string[] | undefined>>) => RateWindows;
  /**
   * Counts a Messages request's input tokens at the vendor (Anthropic's `count_tokens`);
   * absent for providers whose vendor has no such endpoint (the gateway estimates).
   */
  readonly countTokens?: (
    body: Readonly<Record<string, unknown>>,
    headers: Readonly<Record<string, string>>,
    requestId: string,
    signal: AbortSignal,
  ) => Promise<UpstreamResponse>;
  /**
   * Sends one wire request and returns the upstream's answer as it is (status, headers,
   * decoded body stream).
   * @throws network errors (undici `UND_ERR_*`, Node `E*` codes) before response headers;
   *         the pipeline sorts them with `errors/classify.ts`.
   */
  send(req: WireRequest): Promise<UpstreamResponse>;
  /** Releases connections; called when the app closes or a reload replaces the upstream. */
  close(): Promise<void>;
}

export type ProviderFactory = (upstream: LiveUpstream) => Provider;

/** One registry entry: how to make the provider, plus what the config loader checks (its `options` schema …). */
export interface ProviderKind extends ProviderKindInfo {
  readonly create: ProviderFactory;
}
