/**
 * OpenAI Chat Completions (`POST /v1/chat/completions`; OpenAI API reference, "Create chat
 * completion", and the `CreateChatCompletionRequest` / `CreateChatCompletionStreamResponse`
 * / `ErrorResponse` schemas of OpenAI's OpenAPI spec): the client side of the API, and the
 * readers of its usage and error objects that every translator speaking it shares.
 */
import { errorBody, sseErrorFrame } from '../errors/render.js';
import { badCount, tokenCount, type Usage } from '../usage/usage.js';
import { openaiCacheLifetimeMs } from './cache-lifetime.js';
import { int, str } from './fields.js';
import { checkVision, hasImages, normalise, type ApiFields } from './normalise.js';
import type { InboundApi } from './types.js';

const FIELDS: ApiFields = {
  always: ['model', 'messages', 'stream', 'stream_options'],
  reasoning: ['reasoning_effort'],
  tools: ['tools', 'tool_choice', 'parallel_tool_calls', 'functions', 'function_call'],
  maxTokensField: true,
};

/**
 * Reads an OpenAI-shaped `usage` object (`prompt_tokens`, `prompt_tokens_details.cached_tokens`,
 * `completion_tokens`, `completion_tokens_details.reasoning_tokens`; OpenAI API reference,
 * "The chat completion object"); null when there is none. Two dialects of the same object
 * are read too: DeepSeek's `prompt_cache_hit_tokens` when `cached_tokens` is absent (DeepSeek
 * API docs, "Context caching"), and `cache_creation_input_tokens` for prompt-cache writes
 * (Anthropic's name, as OpenAI-compatible relays of Claude report it). A count that is not
 * one (negative, a string) makes it null too: the gateway counts instead (usage/usage.ts badCount).
 */
export function readChatUsage(usage: unknown): Usage | null {
  if (!usage || typeof usage !== 'object') return null;
  const u = usage as Record<string, unknown>;
  if (badCount(u['prompt_tokens']) || badCount(u['completion_tokens'])) return null;
  const pd = (u['prompt_tokens_details'] ?? {}) as Record<string, unknown>;
  const cd = (u['completion_tokens_details'] ?? {}) as Record<string, unknown>;
  const input = tokenCount(u['prompt_tokens']);
  const cached = Math.min(input, tokenCount(pd['cached_tokens']) || tokenCount(u['prompt_cache_hit_tokens']));
  const output = tokenCount(u['completion_tokens']);
  const out: Usage = { input, cached, output, reasoning: Math.min(output, tokenCount(cd['reasoning_tokens'])) };
  const written = Math.min(input - cached, tokenCount(u['cache_creation_input_tokens']));
  if (written > 0) out.cacheWrite = written;
  return out;
}

/**
 * The reasoning text of a chat message or delta: `reasoning_content` (DeepSeek; recording
 * `deepseek-reasoner-stream.sse`), else `reasoning` (OpenRouter, vLLM; recording
 * `openrouter-chat-stream-reasoning-claude.sse`); '' when it has none.
 */
export function chatReasoning(o: Readonly<Record<string, unknown>>): string {
  if (typeof o['reasoning_content'] === 'string') return o['reasoning_content'];
  return typeof o['reasoning'] === 'string' ? o['reasoning'] : '';
}

/** The fields of an OpenAI error object, as sent. */
export interface OpenAIErrorFields {
  readonly message?: string;
  readonly type?: string;
  readonly code?: string;
  readonly param?: string;
}

/**
 * Reads an OpenAI error object (`{message, type, param, code}`), or a bare string as some
 * OpenAI-compatible servers send; null when `err` is neither. `code` may be a number
 * (OpenRouter sends HTTP statuses there: recording `openrouter-chat-stream-midstream-error.sse`).
 */
export function readOpenAIError(err: unknown): OpenAIErrorFields | null {
  if (typeof err === 'string') return { message: err };
  if (!err || typeof err !== 'object' || Array.isArray(err)) return null;
  const e = err as Record<string, unknown>;
  const out: { message?: string; type?: string; code?: string; param?: string } = {};
  if (typeof e['message'] === 'string') out.message = e['message'];
  if (typeof e['type'] === 'string') out.type = e['type'];
  if (typeof e['code'] === 'string' || typeof e['code'] === 'number') out.code = String(e['code']);
  if (typeof e['param'] === 'string') out.param = e['param'];
  return out;
}

export const chatApi: InboundApi = {
  name: 'chat',
  path: '/v1/chat/completions',
  effort: (body) => str(body['reasoning_effort']) ?? null,
  withEffort: (body, effort) => ({ ...body, reasoning_effort: effort }),
  wantsUsage: (body) => body['stream'] === true && (body['stream_options'] as { include_usage?: unknown } | null | undefined)?.include_usage === true,
  sessionHints: (body) => ({ cacheKey: str(body['prompt_cache_key']), user: str(body['user']), cacheLifetimeMs: openaiCacheLifetimeMs(body) }),
  hasImages: (body) => hasImages(body['messages']),
  prompt: (body) => ({ messages: Array.isArray(body['messages']) ? body['messages'] : [], tools: body['tools'] ?? body['functions'] }),
  maxOutputTokens: (body) => int(body['max_completion_tokens']) ?? int(body['max_tokens']),
  prepare(body, upstreamModel, model, primary) {
    checkVision(body['messages'], model, 'messages');
    return normalise(body, upstreamModel, model, primary, FIELDS);
  },
  errorBody,
  sseErrorFrame: (err) => sseErrorFrame(errorBody(err)),
  forwardHeaders: [],
};
