/**
 * The contract between the request pipeline and a provider. A provider turns one request
 * in one of the gateway's inbound API dialects into a call to its upstream and hands back
 * the response in that same dialect (translating both ways when the upstream speaks another
 * API); it knows nothing about Fastify, metrics, Redis or other providers.
 */
import type { Readable } from 'node:stream';
import type { TSchema } from '@sinclair/typebox';
import type { LiveUpstream } from '../config/load.js';

/**
 * The inbound APIs the gateway serves:
 * - `chat`: OpenAI `POST /v1/chat/completions`;
 * - `responses`: OpenAI `POST /v1/responses`;
 * - `messages`: Anthropic `POST /v1/messages`.
 */
export type ApiName = 'chat' | 'responses' | 'messages';

export interface SendRequest {
  /** The dialect of `body` and of the response the provider must return. */
  readonly api: ApiName;
  /**
   * The client's JSON body, already rewritten for this target: `model` is the upstream
   * model id, gateway-only fields are gone, parameters are normalised for the model. For
   * `chat` streams, `stream_options.include_usage` is true. Providers must not mutate it.
   */
  readonly body: Readonly<Record<string, unknown>>;
  readonly stream: boolean;
  /** Propagated to the upstream as `x-request-id` for cross-system tracing. */
  readonly requestId: string;
  /** Aborts the upstream call (client disconnect, deadline). */
  readonly signal: AbortSignal;
  /** Client headers worth forwarding for this API (e.g. `anthropic-beta`), lower-case names. */
  readonly forwardHeaders?: Readonly<Record<string, string>>;
}

export interface UpstreamResponse {
  readonly statusCode: number;
  /** Lower-case header names. `content-encoding` is already decoded away. */
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  /** The decoded body, streamed as it arrives. */
  readonly body: Readable;
}

export interface Provider {
  /** The inbound APIs this provider can serve; `chat` always. */
  readonly apis: ReadonlySet<ApiName>;
  /**
   * Sends one request. The response is in the dialect of `req.api`: status code, error body
   * (`{"error":{message,type,param,code}}` for the OpenAI APIs, Anthropic's error shape for
   * `messages`), JSON body, or SSE stream (`text/event-stream`, translated event by event as
   * it arrives, never buffered whole).
   * @throws network errors (undici `UND_ERR_*`, Node `E*` codes) before response headers;
   *         sort them with `errors/classify.ts`. A `GatewayError` when the request cannot be
   *         expressed in the upstream's API (the client gets it as a 400).
   */
  send(req: SendRequest): Promise<UpstreamResponse>;
  /** Releases connections; called when the app closes. */
  close(): Promise<void>;
}

export type ProviderFactory = (upstream: LiveUpstream) => Provider;

/** One registry entry: how to make the provider, and the schema of its `options` block. */
export interface ProviderKind {
  readonly create: ProviderFactory;
  /**
   * TypeBox schema of the upstream's `options:` block for this kind (defaults applied at
   * load, errors reported with the config path). Absent: the kind takes no options.
   */
  readonly options?: TSchema;
  /** Whether `base_url` is required. */
  readonly needsBaseUrl: boolean;
  /** Answers in-process with recorded responses (never mixed into a live model's fallbacks). */
  readonly simulated?: boolean;
}
