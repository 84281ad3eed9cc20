/**
 * The shared base of providers whose upstream speaks OpenAI's APIs over HTTP with a fixed
 * key header (OpenAI-compatible vendors, Azure OpenAI): one keep-alive pool, fixed headers
 * (the vendor's auth header among them), the wire body serialised once, the answer returned
 * untouched. A vendor differs only in its auth header, its URL, and which APIs it speaks.
 */
import type { LiveUpstream } from '../../config/types.js';
import { createPool } from '../../upstream/pools.js';
import { sendUpstream } from '../../upstream/send.js';
import type { ApiName, Provider, WireRequest, UpstreamResponse } from '../types.js';
import { openAIRateWindows } from './rate-limits.js';

export interface OpenAIStyleOptions {
  /** The wire APIs the upstream speaks. */
  readonly wireApis: ReadonlySet<ApiName>;
  /** Headers carrying the provider key (e.g. `authorization: Bearer …`, Azure's `api-key`). */
  readonly authHeaders: Readonly<Record<string, string>>;
  /** The request path and query below the base URL's own path, for one call. */
  readonly path: (req: WireRequest) => string;
  /** `gen_ai.provider.name` of the vendor (Provider.genAiProvider). */
  readonly genAiProvider: string;
}

/**
 * @param upstream needs `base_url`; its path (e.g. `/v1`) prefixes every request path.
 * `send` throws what `sendUpstream` throws (undici / Node network errors before headers).
 */
export function createOpenAIStyle(upstream: LiveUpstream, opts: OpenAIStyleOptions): Provider {
  const base = new URL(upstream.base_url!);
  const prefix = base.pathname.replace(/\/+$/, '');
  const pool = createPool(upstream, base);
  const fixed: Record<string, string> = {
    ...upstream.headers,
    'content-type': 'application/json',
    'accept-encoding': 'gzip, deflate, br',
    ...opts.authHeaders,
  };
  return {
    wireApis: opts.wireApis,
    genAiProvider: opts.genAiProvider,
    rateWindows: openAIRateWindows,
    send(req: WireRequest): Promise<UpstreamResponse> {
      return sendUpstream(pool, {
        path: `${prefix}${opts.path(req)}`,
        method: 'POST',
        headers: { ...req.headers, ...fixed, accept: req.stream ? 'text/event-stream' : 'application/json', 'x-request-id': req.requestId },
        json: req.body,
        signal: req.signal,
        firstByteMs: upstream.timeouts.first_byte_ms,
        idleMs: upstream.timeouts.idle_ms,
      });
    },
    close: () => pool.close(),
  };
}
