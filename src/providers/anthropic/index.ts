/**
 * Anthropic upstreams (api.anthropic.com or a compatible proxy): speak the `messages` wire
 * API, `POST <base_url>/messages` with `x-api-key` and `anthropic-version` (Anthropic API
 * reference, "Messages", "Versions"). Transport and auth only: chat clients reach it through
 * the chat -> messages translator (`translate/chat-messages/`).
 */
import type { LiveUpstream } from '../../config/types.js';
import { createPool } from '../../upstream/pools.js';
import { sendUpstream } from '../../upstream/send.js';
import type { ApiName, Provider, ProviderKind, UpstreamResponse, WireRequest } from '../types.js';
import { AnthropicOptionsSchema, resolveAnthropicOptions } from './options.js';
import { anthropicRateWindows } from './rate-limits.js';

const WIRE_APIS: ReadonlySet<ApiName> = new Set<ApiName>(['messages']);

/** Joins comma-list header values (`anthropic-beta`), dropping duplicates. */
function joinList(...values: (string | undefined)[]): string | undefined {
  const items = values
    .flatMap((v) => (v ? v.split(',') : []))
    .map((s) => s.trim())
    .filter((s) => s !== '');
  return items.length > 0 ? [...new Set(items)].join(',') : undefined;
}

/**
 * Creates the provider for one upstream.
 * @param upstream needs `base_url` (e.g. `https://api.anthropic.com/v1`); `apiKey` is sent
 *   as `x-api-key`; `options` follows `AnthropicOptionsSchema` (defaults applied at load).
 */
export function createAnthropic(upstream: LiveUpstream): Provider {
  const opts = resolveAnthropicOptions(upstream.options);
  const base = new URL(upstream.base_url!);
  const prefix = base.pathname.replace(/\/+$/, '');
  const pool = createPool(upstream, base);

  function headersFor(req: WireRequest): Record<string, string> {
    const h: Record<string, string> = { ...upstream.headers, ...req.headers };
    // A client's betas and the upstream's configured ones both apply.
    const beta = joinList(upstream.headers['anthropic-beta'], req.headers?.['anthropic-beta']);
    if (beta) h['anthropic-beta'] = beta;
    h['anthropic-version'] = opts.anthropic_version;
    h['content-type'] = 'application/json';
    h['accept'] = req.stream ? 'text/event-stream' : 'application/json';
    h['accept-encoding'] = 'gzip, deflate, br';
    h['x-request-id'] = req.requestId;
    if (upstream.apiKey) h['x-api-key'] = upstream.apiKey;
    return h;
  }

  return {
    wireApis: WIRE_APIS,
    genAiProvider: 'anthropic',
    rateWindows: (h) => anthropicRateWindows(h),
    send(req: WireRequest): Promise<UpstreamResponse> {
      return sendUpstream(pool, {
        path: `${prefix}/messages`,
        method: 'POST',
        headers: headersFor(req),
        json: req.body,
        signal: req.signal,
        firstByteMs: upstream.timeouts.first_byte_ms,
        idleMs: upstream.timeouts.idle_ms,
      });
    },
    // Anthropic API reference, "Count tokens in a message": POST /v1/messages/count_tokens -> {"input_tokens": n}.
    countTokens(body, headers, requestId, signal) {
      return sendUpstream(pool, {
        path: `${prefix}/messages/count_tokens`,
        method: 'POST',
        headers: headersFor({ api: 'messages', body, stream: false, headers, requestId, signal }),
        json: body,
        signal,
        firstByteMs: upstream.timeouts.first_byte_ms,
        idleMs: upstream.timeouts.idle_ms,
      });
    },
    close: () => pool.close(),
  };
}

/** Registry entry for `provider: anthropic`. */
export const anthropicKind: ProviderKind = { create: createAnthropic, options: AnthropicOptionsSchema, needsBaseUrl: true };
