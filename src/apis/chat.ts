/**
 * OpenAI Chat Completions (`POST /v1/chat/completions`; OpenAI API reference, "Create chat
 * completion", and the `CreateChatCompletionRequest` / `CreateChatCompletionStreamResponse`
 * schemas of OpenAI's OpenAPI spec). Stream events are sorted with cheap byte patterns;
 * only events that look like usage or an error are parsed.
 */
import { GatewayError } from '../errors/codes.js';
import { errorBody, sseErrorFrame } from '../errors/render.js';
import { upstreamErrorFields } from '../errors/upstream-fields.js';
import { readUsage } from '../pipeline/usage.js';
import type { SseEvent } from '../sse/parse.js';
import { checkVision, hasImages, normalise, type ApiFields } from './normalise.js';
import { int, str } from './fields.js';
import type { EventInfo, InboundApi, StreamReader } from './types.js';

const USAGE = /"usage"\s*:\s*\{/;
const TOP_ERROR = /"error"\s*:/;
const FINISH = /"finish_reason"\s*:\s*"/;
const DELTA = /"(?:content|reasoning_content|reasoning|arguments)"\s*:\s*"[^"]/;

const FIELDS: ApiFields = {
  always: ['model', 'messages', 'stream', 'stream_options'],
  reasoning: ['reasoning_effort'],
  tools: ['tools', 'tool_choice', 'parallel_tool_calls', 'functions', 'function_call'],
  maxTokensField: true,
};

/**
 * An in-stream error from an OpenAI-compatible upstream: an `event: error`, or a chunk
 * with a top-level `error` (OpenRouter, recording `openrouter-chat-stream-midstream-error.sse`).
 */
export function openAIStreamError(ev: SseEvent, secrets: readonly (string | undefined)[]): GatewayError | null {
  const data = ev.data ?? '';
  if (ev.event !== 'error' && !TOP_ERROR.test(data)) return null;
  let parsed: unknown;
  try {
    parsed = JSON.parse(data);
  } catch {
    if (ev.event !== 'error') return null;
  }
  const top = parsed as Record<string, unknown> | undefined;
  const inner = top && typeof top === 'object' ? (top['error'] ?? (ev.event === 'error' ? top : undefined)) : undefined;
  if (inner === undefined || inner === null) return ev.event === 'error' ? new GatewayError('GW_ERR_UPSTREAM_STREAM') : null;
  const fields = upstreamErrorFields(
    typeof inner === 'object' ? inner : String(inner),
    { message: 'The upstream stream reported an error.', type: 'server_error', code: 'upstream_stream_error', param: null },
    secrets,
  );
  return new GatewayError('GW_ERR_UPSTREAM_STREAM', { message: fields.message, type: fields.type, openaiCode: fields.code, param: fields.param });
}

class ChatReader implements StreamReader {
  constructor(
    private readonly wantsUsage: boolean,
    private readonly secrets: readonly (string | undefined)[],
  ) {}

  inspect(ev: SseEvent): EventInfo {
    const data = ev.data;
    if (data === null) return {};
    if (data === '[DONE]') return { end: true };
    const error = openAIStreamError(ev, this.secrets);
    if (error) return { error };
    let usage;
    if (USAGE.test(data)) {
      try {
        const chunk = JSON.parse(data) as { usage?: unknown; choices?: unknown[] };
        usage = readUsage(chunk.usage) ?? undefined;
        // The gateway always asks for the usage chunk; the client gets it only if it asked.
        if (!this.wantsUsage && Array.isArray(chunk.choices) && chunk.choices.length === 0) return usage ? { usage, drop: true } : { drop: true };
      } catch {
        // Not JSON: relayed as-is; the client's parser decides.
      }
    }
    const info: { end?: boolean; usage?: typeof usage; delta?: boolean } = {};
    if (usage) info.usage = usage;
    if (FINISH.test(data)) info.end = true;
    if (DELTA.test(data)) info.delta = true;
    return info;
  }
}

function chatDeltaTexts(rawEvents: readonly string[]): { output: string[]; reasoning: string[] } {
  const output: string[] = [];
  const reasoning: string[] = [];
  for (const data of rawEvents) {
    let chunk: { choices?: { delta?: Record<string, unknown> }[] };
    try {
      chunk = JSON.parse(data) as typeof chunk;
    } catch {
      continue;
    }
    if (!Array.isArray(chunk.choices)) continue;
    for (const choice of chunk.choices) {
      const d = choice?.delta;
      if (!d || typeof d !== 'object') continue;
      if (typeof d['content'] === 'string') output.push(d['content']);
      if (typeof d['reasoning_content'] === 'string') reasoning.push(d['reasoning_content']);
      else if (typeof d['reasoning'] === 'string') reasoning.push(d['reasoning']);
      if (Array.isArray(d['tool_calls'])) {
        for (const call of d['tool_calls'] as unknown[]) {
          const fn = (call as { function?: { name?: unknown; arguments?: unknown } } | null)?.function;
          if (typeof fn?.name === 'string') output.push(fn.name);
          if (typeof fn?.arguments === 'string') output.push(fn.arguments);
        }
      }
    }
  }
  return { output, reasoning };
}


export const chatApi: InboundApi = {
  name: 'chat',
  path: '/v1/chat/completions',
  effort: (body) => str(body['reasoning_effort']) ?? null,
  wantsUsage: (body) => body['stream'] === true && (body['stream_options'] as { include_usage?: unknown } | null | undefined)?.include_usage === true,
  sessionHint: (body) => str(body['prompt_cache_key']) ?? str(body['user']),
  hasImages: (body) => hasImages(body['messages']),
  promptMessages: (body) => body['messages'],
  maxOutputTokens: (body) => int(body['max_completion_tokens']) ?? int(body['max_tokens']),
  prepare(body, upstreamModel, model, primary) {
    checkVision(body['messages'], model, 'messages');
    const prepared = normalise(body, upstreamModel, model, primary, FIELDS);
    // Usage is always asked for on streams, so cost is never unknown.
    if (body['stream'] === true) {
      prepared.body['stream_options'] = { ...((body['stream_options'] as object | null | undefined) ?? {}), include_usage: true };
    }
    return prepared;
  },
  streamReader: (wantsUsage, secrets) => new ChatReader(wantsUsage, secrets),
  deltaTexts: chatDeltaTexts,
  jsonUsage: (body) => readUsage((body as { usage?: unknown } | null)?.usage),
  errorBody,
  sseErrorFrame: (err) => sseErrorFrame(errorBody(err)),
  forwardHeaders: [],
};
