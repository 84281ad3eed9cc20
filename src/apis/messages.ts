/**
 * Anthropic Messages (`POST /v1/messages`; Anthropic API reference, "Messages" and
 * "Streaming Messages"; recordings `anthropic-messages-*`), for Anthropic-SDK clients.
 * Served by upstreams that speak it natively (the `anthropic` kind); bytes pass through,
 * the model id rewritten. Usage is spread over the stream: `message_start` carries
 * `input_tokens`, `cache_read_input_tokens`, `cache_creation_input_tokens`, and
 * `message_delta` the running `output_tokens`; `message_stop` ends it; an `error` event
 * is a failure. Errors go back in Anthropic's shape `{"type":"error","error":{type,message}}`.
 */
import { GatewayError } from '../errors/codes.js';
import { upstreamErrorFields } from '../errors/upstream-fields.js';
import { tokenCount as num, type Usage } from '../pipeline/usage.js';
import type { SseEvent } from '../sse/parse.js';
import { checkVision, hasImages, normalise, type ApiFields } from './normalise.js';
import { eventType, str } from './fields.js';
import type { EventInfo, InboundApi, StreamReader } from './types.js';


const FIELDS: ApiFields = {
  always: ['model', 'messages', 'system', 'max_tokens', 'stream'],
  reasoning: ['thinking'],
  tools: ['tools', 'tool_choice'],
  maxTokensField: false,
};

/** Anthropic's error types by HTTP status (Anthropic API reference, "Errors"). */
const TYPE_BY_STATUS: Record<number, string> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  403: 'permission_error',
  404: 'not_found_error',
  408: 'timeout_error',
  413: 'request_too_large',
  429: 'rate_limit_error',
  500: 'api_error',
  503: 'overloaded_error',
  504: 'timeout_error',
  529: 'overloaded_error',
};
const ANTHROPIC_TYPES = new Set(Object.values(TYPE_BY_STATUS));

/** The Anthropic error `type` for a gateway error: by status, else the upstream's own when it is one. */
export function anthropicErrorType(err: GatewayError): string {
  const byStatus = TYPE_BY_STATUS[err.status];
  if (byStatus) return byStatus;
  if (ANTHROPIC_TYPES.has(err.type)) return err.type;
  return err.status >= 500 ? 'api_error' : 'invalid_request_error';
}

/** `{"type":"error","error":{"type","message"}}`. */
export function anthropicErrorBody(err: GatewayError): { type: 'error'; error: { type: string; message: string } } {
  return { type: 'error', error: { type: anthropicErrorType(err), message: err.message } };
}

/**
 * Reads an Anthropic `usage` object. `input_tokens` excludes cache reads and writes, so
 * the prompt is their sum; cache reads are the cached part.
 */
export function readAnthropicUsage(usage: unknown): Usage | null {
  if (!usage || typeof usage !== 'object') return null;
  const u = usage as Record<string, unknown>;
  const read = num(u['cache_read_input_tokens']);
  const written = num(u['cache_creation_input_tokens']);
  const input = num(u['input_tokens']) + read + written;
  const out: Usage = { input, cached: read, output: num(u['output_tokens']), reasoning: 0 };
  if (written > 0) out.cacheWrite = written;
  return out;
}

class MessagesReader implements StreamReader {
  private usage: Usage | null = null;

  constructor(private readonly secrets: readonly (string | undefined)[]) {}

  inspect(ev: SseEvent): EventInfo {
    if (ev.data === null) return {};
    const type = eventType(ev);
    switch (type) {
      case 'content_block_delta':
        return { delta: true };
      case 'message_stop':
        return { end: true };
      case 'message_start':
      case 'message_delta': {
        let u: Record<string, unknown> | undefined;
        try {
          const parsed = JSON.parse(ev.data) as { message?: { usage?: Record<string, unknown> }; usage?: Record<string, unknown> };
          u = type === 'message_start' ? parsed.message?.usage : parsed.usage;
        } catch {
          return {};
        }
        const next = readAnthropicUsage(u);
        if (!next) return {};
        // message_delta counts are cumulative; input counts may come in either event.
        const prev = this.usage;
        if (prev) {
          const merged: Usage = { input: Math.max(prev.input, next.input), cached: Math.max(prev.cached, next.cached), output: Math.max(prev.output, next.output), reasoning: 0 };
          const written = Math.max(prev.cacheWrite ?? 0, next.cacheWrite ?? 0);
          if (written > 0) merged.cacheWrite = written;
          this.usage = merged;
        } else {
          this.usage = next;
        }
        return { usage: this.usage };
      }
      case 'error': {
        let inner: unknown;
        try {
          inner = (JSON.parse(ev.data) as { error?: unknown }).error;
        } catch {
          inner = undefined;
        }
        const f = upstreamErrorFields(inner, { message: 'The upstream stream reported an error.', type: 'api_error', code: null, param: null }, this.secrets);
        return { error: new GatewayError('GW_ERR_UPSTREAM_STREAM', { message: f.message, type: f.type, openaiCode: f.type }) };
      }
      default:
        return {};
    }
  }
}

function messagesDeltaTexts(rawEvents: readonly string[]): { output: string[]; reasoning: string[] } {
  const output: string[] = [];
  const reasoning: string[] = [];
  for (const data of rawEvents) {
    try {
      const d = (JSON.parse(data) as { delta?: Record<string, unknown> }).delta ?? {};
      if (typeof d['text'] === 'string') output.push(d['text']);
      if (typeof d['partial_json'] === 'string') output.push(d['partial_json']);
      if (typeof d['thinking'] === 'string') reasoning.push(d['thinking']);
    } catch {
      // skip
    }
  }
  return { output, reasoning };
}

/** `thinking.budget_tokens` as an effort level, for deep-call detection. */
function effort(body: Record<string, unknown>): string | null {
  const thinking = body['thinking'] as { type?: unknown; budget_tokens?: unknown } | null | undefined;
  const explicit = (body['output_config'] as { effort?: unknown } | null | undefined)?.effort;
  if (typeof explicit === 'string') return explicit;
  if (!thinking || thinking.type === 'disabled') return null;
  const budget = typeof thinking.budget_tokens === 'number' ? thinking.budget_tokens : 0;
  if (thinking.type === 'adaptive') return 'medium';
  return budget >= 16_384 ? 'high' : budget >= 4_096 ? 'medium' : 'low';
}


export const messagesApi: InboundApi = {
  name: 'messages',
  path: '/v1/messages',
  effort,
  wantsUsage: () => true,
  sessionHint: (body) => str((body['metadata'] as { user_id?: unknown } | null | undefined)?.user_id),
  hasImages: (body) => hasImages(body['messages']),
  promptMessages: (body) => (body['system'] !== undefined ? [{ role: 'system', content: body['system'] }, ...((body['messages'] as unknown[]) ?? [])] : body['messages']),
  maxOutputTokens: (body) => (typeof body['max_tokens'] === 'number' ? body['max_tokens'] : undefined),
  prepare(body, upstreamModel, model, primary) {
    checkVision(body['messages'], model, 'messages');
    return normalise(body, upstreamModel, model, primary, FIELDS);
  },
  streamReader: (_wantsUsage, secrets) => new MessagesReader(secrets),
  deltaTexts: messagesDeltaTexts,
  jsonUsage: (body) => readAnthropicUsage((body as { usage?: unknown } | null)?.usage),
  errorBody: anthropicErrorBody,
  sseErrorFrame: (err) => Buffer.from(`event: error\ndata: ${JSON.stringify(anthropicErrorBody(err))}\n\n`),
  forwardHeaders: ['anthropic-beta'],
};
