/**
 * OpenAI-compatible upstreams (OpenAI, DeepSeek, Groq, Together, OpenRouter, vLLM, Gemini's
 * OpenAI endpoint …): the body is already in the upstream's dialect, so this only adds the
 * provider key and posts to `<base_url>/chat/completions` (OpenAI API reference, "Create chat
 * completion") or, when the upstream serves it (`options.responses: true`), to
 * `<base_url>/responses` (OpenAI API reference, "Create a model response").
 */
import { Type, type Static } from '@sinclair/typebox';
import type { LiveUpstream } from '../../config/load.js';
import { createPool } from '../../upstream/pools.js';
import { sendUpstream } from '../../upstream/send.js';
import type { ApiName, Provider, ProviderKind, SendRequest, UpstreamResponse } from '../types.js';

export const OpenAICompatibleOptionsSchema = Type.Object(
  {
    /** The upstream serves the Responses API (`POST /responses`): OpenAI does, most others do not. */
    responses: Type.Boolean({ default: false }),
  },
  { additionalProperties: false, default: {} },
);
type Options = Static<typeof OpenAICompatibleOptionsSchema>;

const PATHS: Partial<Record<ApiName, string>> = { chat: '/chat/completions', responses: '/responses' };

export function createOpenAICompatible(upstream: LiveUpstream): Provider {
  const options = upstream.options as Options;
  const base = new URL(upstream.base_url!);
  const prefix = base.pathname.replace(/\/+$/, '');
  const pool = createPool(upstream, base);
  const fixed: Record<string, string> = {
    ...upstream.headers,
    'content-type': 'application/json',
    'accept-encoding': 'gzip, deflate, br',
  };
  if (upstream.apiKey) fixed['authorization'] = `Bearer ${upstream.apiKey}`;
  const apis = new Set<ApiName>(options.responses ? ['chat', 'responses'] : ['chat']);

  return {
    apis,
    send(req: SendRequest): Promise<UpstreamResponse> {
      return sendUpstream(pool, {
        path: `${prefix}${PATHS[req.api] ?? PATHS.chat}`,
        method: 'POST',
        headers: { ...fixed, accept: req.stream ? 'text/event-stream' : 'application/json', 'x-request-id': req.requestId },
        body: JSON.stringify(req.body),
        signal: req.signal,
        firstByteMs: upstream.timeouts.first_byte_ms,
        idleMs: upstream.timeouts.idle_ms,
      });
    },
    close: () => pool.close(),
  };
}

/** Registry entry. */
export const openAICompatibleKind: ProviderKind = { create: createOpenAICompatible, options: OpenAICompatibleOptionsSchema, needsBaseUrl: true };
