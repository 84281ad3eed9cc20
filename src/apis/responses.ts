/**
 * OpenAI Responses API (`POST /v1/responses`; OpenAI API reference, "Create a model
 * response" and "Streaming events"; recordings `openai-responses-stream-*.sse|jsonl`): the
 * client side of the API and the reader of its usage object. Errors have chat's OpenAI
 * shape (`readOpenAIError` in chat.ts).
 */
import { errorBody } from '../errors/render.js';
import { badCount, tokenCount, type Usage } from '../usage/usage.js';
import { openaiCacheLifetimeMs } from './cache-lifetime.js';
import { str } from './fields.js';
import { checkVision, hasImages, normalise, type ApiFields } from './normalise.js';
import type { Prompt } from '../usage/prompt-parts.js';
import type { InboundApi } from './types.js';

const FIELDS: ApiFields = {
  always: ['model', 'input', 'instructions', 'stream', 'previous_response_id', 'conversation'],
  reasoning: ['reasoning'],
  tools: ['tools', 'tool_choice', 'parallel_tool_calls'],
  maxTokensField: false,
};

/**
 * Reads a Responses API `usage` object (`input_tokens`, `input_tokens_details.cached_tokens`,
 * `output_tokens`, `output_tokens_details.reasoning_tokens`); null when there is none, or
 * when a count is not one (usage/usage.ts badCount).
 */
export function readResponsesUsage(usage: unknown): Usage | null {
  if (!usage || typeof usage !== 'object') return null;
  const u = usage as Record<string, unknown>;
  if (badCount(u['input_tokens']) || badCount(u['output_tokens'])) return null;
  const inDetails = (u['input_tokens_details'] ?? {}) as Record<string, unknown>;
  const outDetails = (u['output_tokens_details'] ?? {}) as Record<string, unknown>;
  const input = tokenCount(u['input_tokens']);
  const output = tokenCount(u['output_tokens']);
  return {
    input,
    cached: Math.min(input, tokenCount(inDetails['cached_tokens'])),
    output,
    reasoning: Math.min(output, tokenCount(outDetails['reasoning_tokens'])),
  };
}

/** `instructions` as the first turn, then `input` (a string prompt, or the input items as sent), and the tool definitions. */
function prompt(body: Record<string, unknown>): Prompt {
  const input = body['input'];
  const items = typeof input === 'string' ? [{ role: 'user', content: input }] : Array.isArray(input) ? (input as unknown[]) : [];
  const instructions = body['instructions'];
  return { messages: typeof instructions === 'string' ? [{ role: 'system', content: instructions }, ...items] : items, tools: body['tools'] };
}

export const responsesApi: InboundApi = {
  name: 'responses',
  path: '/v1/responses',
  effort: (body) => str((body['reasoning'] as { effort?: unknown } | null | undefined)?.effort) ?? null,
  withEffort: (body, effort) => ({ ...body, reasoning: { ...((body['reasoning'] as Record<string, unknown> | null | undefined) ?? {}), effort } }),
  wantsUsage: () => true,
  sessionHints: (body) => ({ cacheKey: str(body['prompt_cache_key']), user: str(body['user']), cacheLifetimeMs: openaiCacheLifetimeMs(body) }),
  hasImages: (body) => Array.isArray(body['input']) && hasImages(body['input']),
  prompt,
  maxOutputTokens: (body) => (typeof body['max_output_tokens'] === 'number' ? body['max_output_tokens'] : undefined),
  prepare(body, upstreamModel, model, primary) {
    checkVision(Array.isArray(body['input']) ? body['input'] : [], model, 'input');
    return normalise(body, upstreamModel, model, primary, FIELDS);
  },
  errorBody,
  // The Responses API's own `error` event (`type`, `code`, `message`, `param`), plus the
  // `error` object the `openai` SDKs raise on.
  sseErrorFrame: (err) => {
    const { error } = errorBody(err);
    return Buffer.from(`event: error\ndata: ${JSON.stringify({ type: 'error', code: error.code, message: error.message, param: error.param, error })}\n\n`);
  },
  forwardHeaders: [],
};

/**
 * `POST /v1/responses/compact` (OpenAI API reference, "Compact a response"; OpenAPI
 * `CompactResponseMethodPublicBody` / `CompactResource`): the same body fields as a response
 * (`model`, `input`, `instructions`, `previous_response_id`, `prompt_cache_key` …), no
 * output cap and no stream; answered with a `response.compaction` object whose `usage` has
 * the Responses shape. A billable model call like any other, served only by Responses accounts.
 */
export const compactApi: InboundApi = {
  ...responsesApi,
  path: '/v1/responses/compact',
  operation: 'compact',
  maxOutputTokens: () => undefined,
};
