/**
 * The contract between the request pipeline and a provider. A provider turns one
 * OpenAI-style chat request into a call to its upstream and hands back the raw response;
 * it knows nothing about Fastify, metrics, Redis or other providers.
 */
import type { Readable } from 'node:stream';
import type { LiveUpstream } from '../config/load.js';

export interface ChatSendRequest {
  /** JSON body, already rewritten for this target (upstream model id, gateway fields stripped). */
  readonly body: string;
  readonly stream: boolean;
  /** Propagated to the upstream as `x-request-id` for cross-system tracing. */
  readonly requestId: string;
  /** Aborts the upstream call (client disconnect, deadline). */
  readonly signal: AbortSignal;
}

export interface UpstreamResponse {
  readonly statusCode: number;
  /** Lower-case header names. `content-encoding` is already decoded away. */
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  /** The decoded body, streamed as it arrives. */
  readonly body: Readable;
}

export interface Provider {
  /**
   * Sends one chat completion request.
   * @throws network errors (undici `UND_ERR_*`, Node `E*` codes) before response headers;
   *         sort them with `errors/classify.ts`.
   */
  sendChat(req: ChatSendRequest): Promise<UpstreamResponse>;
  /** Releases connections; called when the app closes. */
  close(): Promise<void>;
}

export type ProviderFactory = (upstream: LiveUpstream) => Provider;
