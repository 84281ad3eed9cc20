/**
 * OpenAI Responses API (`POST /v1/responses`; OpenAI API reference, "Create a model
 * response" and "Streaming events"; recordings `openai-responses-stream-*.sse|jsonl`).
 * Served by upstreams that speak it natively; bytes pass through, the model id rewritten.
 * A stream ends with `response.completed` (usage in `response.usage`: `input_tokens`,
 * `input_tokens_details.cached_tokens`, `output_tokens`, `output_tokens_details.reasoning_tokens`)
 * or `response.incomplete`; `error` and `response.failed` events are failures.
 */
import { GatewayError } from '../errors/codes.js';
import { errorBody } from '../errors/render.js';
import { upstreamErrorFields } from '../errors/upstream-fields.js';
import { tokenCount as num, type Usage } from '../pipeline/usage.js';
import type { SseEvent } from '../sse/parse.js';
import { openAIStreamError } from './chat.js';
import { checkVision, hasImages, normalise, type ApiFields } from './normalise.js';
import { eventType, str } from './fields.js';
import type { EventInfo, InboundApi, StreamReader } from './types.js';

const DELTAS = new Set([
  'response.output_text.delta',
  'response.reasoning_summary_text.delta',
  'response.reasoning_text.delta',
  'response.function_call_arguments.delta',
  'response.refusal.delta',
]);
const REASONING_DELTAS = new Set(['response.reasoning_summary_text.delta', 'response.reasoning_text.delta']);

const FIELDS: ApiFields = {
  always: ['model', 'input', 'instructions', 'stream', 'previous_response_id', 'conversation'],
  reasoning: ['reasoning'],
  tools: ['tools', 'tool_choice', 'parallel_tool_calls'],
  maxTokensField: false,
};

/** Reads a Responses API `usage` object; null when there is none. */
export function readResponsesUsage(usage: unknown): Usage | null {
  if (!usage || typeof usage !== 'object') return null;
  const u = usage as Record<string, unknown>;
  const inDetails = (u['input_tokens_details'] ?? {}) as Record<string, unknown>;
  const outDetails = (u['output_tokens_details'] ?? {}) as Record<string, unknown>;
  const input = num(u['input_tokens']);
  const output = num(u['output_tokens']);
  return { input, cached: Math.min(input, num(inDetails['cached_tokens'])), output, reasoning: Math.min(output, num(outDetails['reasoning_tokens'])) };
}

class ResponsesReader implements StreamReader {
  constructor(private readonly secrets: readonly (string | undefined)[]) {}

  inspect(ev: SseEvent): EventInfo {
    if (ev.data === null) return {};
    const type = eventType(ev);
    if (type !== null && DELTAS.has(type)) return { delta: true };
    if (type === 'response.completed' || type === 'response.incomplete' || type === 'response.failed') {
      let response: Record<string, unknown> | undefined;
      try {
        response = (JSON.parse(ev.data) as { response?: Record<string, unknown> }).response;
      } catch {
        response = undefined;
      }
      const usage = readResponsesUsage(response?.['usage']) ?? undefined;
      if (type === 'response.failed') {
        const f = upstreamErrorFields(
          response?.['error'],
          { message: 'The upstream response failed.', type: 'server_error', code: 'response_failed', param: null },
          this.secrets,
        );
        const error = new GatewayError('GW_ERR_UPSTREAM_STREAM', { message: f.message, type: f.type, openaiCode: f.code, param: f.param });
        return usage ? { error, usage } : { error };
      }
      return usage ? { end: true, usage } : { end: true };
    }
    const error = openAIStreamError(ev, this.secrets);
    return error ? { error } : {};
  }
}

function responsesDeltaTexts(rawEvents: readonly string[]): { output: string[]; reasoning: string[] } {
  const output: string[] = [];
  const reasoning: string[] = [];
  for (const data of rawEvents) {
    try {
      const ev = JSON.parse(data) as { type?: string; delta?: unknown };
      if (typeof ev.delta !== 'string') continue;
      (REASONING_DELTAS.has(ev.type ?? '') ? reasoning : output).push(ev.delta);
    } catch {
      // skip
    }
  }
  return { output, reasoning };
}

/** `input` as chat-style messages: a string prompt, or the input items (which carry `role` and `content`). */
function promptMessages(body: Record<string, unknown>): unknown {
  const input = body['input'];
  const items = typeof input === 'string' ? [{ role: 'user', content: input }] : Array.isArray(input) ? input : [];
  const instructions = body['instructions'];
  return typeof instructions === 'string' ? [{ role: 'system', content: instructions }, ...items] : items;
}


export const responsesApi: InboundApi = {
  name: 'responses',
  path: '/v1/responses',
  effort: (body) => str((body['reasoning'] as { effort?: unknown } | null | undefined)?.effort) ?? null,
  wantsUsage: () => true,
  sessionHint: (body) => str(body['prompt_cache_key']) ?? str(body['previous_response_id']) ?? str(body['user']),
  hasImages: (body) => Array.isArray(body['input']) && hasImages(body['input']),
  promptMessages,
  maxOutputTokens: (body) => (typeof body['max_output_tokens'] === 'number' ? body['max_output_tokens'] : undefined),
  prepare(body, upstreamModel, model, primary) {
    checkVision(Array.isArray(body['input']) ? body['input'] : [], model, 'input');
    return normalise(body, upstreamModel, model, primary, FIELDS);
  },
  streamReader: (_wantsUsage, secrets) => new ResponsesReader(secrets),
  deltaTexts: responsesDeltaTexts,
  jsonUsage: (body) => readResponsesUsage((body as { usage?: unknown } | null)?.usage),
  errorBody,
  // The Responses API's own `error` event (`type`, `code`, `message`, `param`), plus the
  // `error` object the `openai` SDKs raise on.
  sseErrorFrame: (err) => {
    const { error } = errorBody(err);
    return Buffer.from(`event: error\ndata: ${JSON.stringify({ type: 'error', code: error.code, message: error.message, param: error.param, error })}\n\n`);
  },
  forwardHeaders: [],
};
