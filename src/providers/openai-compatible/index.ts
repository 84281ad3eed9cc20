/**
 * OpenAI-compatible upstreams (OpenAI, DeepSeek, Groq, Together, OpenRouter, vLLM …):
 * the body is already in the upstream's dialect, so this only adds the provider key and
 * posts to `<base_url>/chat/completions` (OpenAI API reference, "Create chat completion").
 */
import type { LiveUpstream } from '../../config/load.js';
import { createPool } from '../../upstream/pools.js';
import { sendUpstream } from '../../upstream/send.js';
import type { ChatSendRequest, Provider, UpstreamResponse } from '../types.js';

export function createOpenAICompatible(upstream: LiveUpstream): Provider {
  const base = new URL(upstream.base_url!);
  const prefix = base.pathname.replace(/\/+$/, '');
  const pool = createPool(upstream, base);
  const fixed: Record<string, string> = {
    ...upstream.headers,
    'content-type': 'application/json',
    'accept-encoding': 'gzip, deflate, br',
  };
  if (upstream.apiKey) fixed['authorization'] = `Bearer ${upstream.apiKey}`;

  return {
    sendChat(req: ChatSendRequest): Promise<UpstreamResponse> {
      return sendUpstream(pool, {
        path: `${prefix}/chat/completions`,
        method: 'POST',
        headers: { ...fixed, accept: req.stream ? 'text/event-stream' : 'application/json', 'x-request-id': req.requestId },
        body: req.body,
        signal: req.signal,
        firstByteMs: upstream.timeouts.first_byte_ms,
        idleMs: upstream.timeouts.idle_ms,
      });
    },
    close: () => pool.close(),
  };
}
