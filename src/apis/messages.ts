/**
 * Anthropic Messages (`POST /v1/messages`; Anthropic API reference, "Messages" and
 * "Streaming Messages"; recordings `anthropic-messages-*`), for Anthropic-SDK clients.
 * The client side of the API, and the readers of its usage and error objects that every
 * translator speaking it shares. Errors go back in Anthropic's shape
 * `{"type":"error","error":{type,message}}`.
 */
import type { Model } from '../config/types.js';
import { EFFORT_WORD } from '../config/schema-model.js';
import { effortFor, levelOfBudget, thinkingBudgetOf } from './effort.js';
import type { GatewayError } from '../errors/codes.js';
import { badCount, tokenCount as num, type Usage } from '../usage/usage.js';
import { checkVision, hasImages, normalise, type ApiFields } from './normalise.js';
import { messagesCacheLifetimeMs } from './cache-lifetime.js';
import { str } from './fields.js';
import type { Prompt } from '../usage/prompt-parts.js';
import type { InboundApi, PreparedBody } from './types.js';

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

/**
 * The Anthropic error `type` for a gateway error: by status, else the upstream's own when it
 * is one. A 503 or a relayed 529 is `overloaded_error` only when the client should come back after a wait
 * (`heals: wait`): Claude Code retries `overloaded_error` whatever `x-should-retry` says, so
 * a final one (an upstream down or overloaded, retries spent) is `api_error`, which it stops on.
 */
export function anthropicErrorType(err: GatewayError): string {
  if (err.status === 503 || err.status === 529) return err.heals === 'wait' ? 'overloaded_error' : 'api_error';
  const byStatus = TYPE_BY_STATUS[err.status];
  if (byStatus) return byStatus;
  if (ANTHROPIC_TYPES.has(err.type)) return err.type;
  return err.status >= 500 ? 'api_error' : 'invalid_request_error';
}

/** `{"type":"error","error":{"type","message"}}`. */
export function anthropicErrorBody(err: GatewayError): { type: 'error'; error: { type: string; message: string } } {
  return { type: 'error', error: { type: anthropicErrorType(err), message: err.message } };
}

/** `usage.cache_creation`'s fields: prompt tokens written to the 5-minute and the 1-hour cache. */
const M5 = 'ephemeral_5m_input_tokens';
const H1 = 'ephemeral_1h_input_tokens';

/**
 * Reads an Anthropic `usage` object. `input_tokens` excludes cache reads and writes, so
 * the prompt is their sum; cache reads are the cached part. Writes are split by lifetime when
 * `cache_creation: {ephemeral_5m_input_tokens, ephemeral_1h_input_tokens}` is there
 * (Anthropic API reference, "Messages", `usage.cache_creation`; recordings
 * `anthropic-messages-*`), else all count as 5-minute. Null when a count is not one
 * (usage/usage.ts badCount).
 */
export function readAnthropicUsage(usage: unknown): Usage | null {
  if (!usage || typeof usage !== 'object') return null;
  const u = usage as Record<string, unknown>;
  if (badCount(u['input_tokens']) || badCount(u['output_tokens'])) return null;
  const read = num(u['cache_read_input_tokens']);
  const split = creation(u);
  const written = num(u['cache_creation_input_tokens']) || split.m5 + split.h1;
  const input = num(u['input_tokens']) + read + written;
  const out: Usage = { input, cached: read, output: num(u['output_tokens']), reasoning: 0 };
  if (written > 0) out.cacheWrite = written;
  const h1 = Math.min(written, split.h1);
  if (h1 > 0) out.cacheWrite1h = h1;
  return out;
}

/** `usage.cache_creation`'s counts, as sent or as folded from a stream ({@link foldAnthropicUsage}); 0 when absent. */
function creation(u: Record<string, unknown>): { m5: number; h1: number } {
  const c = u['cache_creation'];
  const o = c && typeof c === 'object' ? (c as Record<string, unknown>) : {};
  return { m5: num(o[M5] ?? u[`cache_creation.${M5}`]), h1: num(o[H1] ?? u[`cache_creation.${H1}`]) };
}

/** Usage fields of Anthropic stream events; each event carries the latest cumulative values. */
const USAGE_FIELDS = ['input_tokens', 'output_tokens', 'cache_read_input_tokens', 'cache_creation_input_tokens'] as const;

/**
 * Folds the `usage` of one stream event (`message_start`'s `message.usage`, `message_delta`'s
 * `usage`) into `into`: the counts are cumulative, so the latest value of each field wins
 * (Anthropic API reference, "Streaming Messages": "the token counts shown in the usage
 * field of the message_delta event are cumulative"). `cache_creation`'s two counts are kept
 * flat as `cache_creation.ephemeral_5m_input_tokens` / `…1h…`, which readAnthropicUsage reads.
 */
export function foldAnthropicUsage(into: Record<string, number>, usage: unknown): void {
  if (!usage || typeof usage !== 'object') return;
  const u = usage as Record<string, unknown>;
  for (const f of USAGE_FIELDS) {
    const v = u[f];
    if (typeof v === 'number' && Number.isFinite(v) && v >= 0) into[f] = v;
  }
  const c = u['cache_creation'];
  if (!c || typeof c !== 'object') return;
  for (const f of [M5, H1]) {
    const v = (c as Record<string, unknown>)[f];
    if (typeof v === 'number' && Number.isFinite(v) && v >= 0) into[`cache_creation.${f}`] = v;
  }
}

/** The fields of an Anthropic error object (`{"type","message"}`), as sent; null when `err` is not one. */
export function readAnthropicError(err: unknown): { readonly type?: string; readonly message?: string } | null {
  if (typeof err === 'string') return { message: err };
  if (!err || typeof err !== 'object' || Array.isArray(err)) return null;
  const e = err as Record<string, unknown>;
  const out: { type?: string; message?: string } = {};
  if (typeof e['type'] === 'string') out.type = e['type'];
  if (typeof e['message'] === 'string') out.message = e['message'];
  return out;
}

/**
 * The request's effort level, for deep-call detection and the bridges' reasoning effort:
 * `output_config.effort` when set, else `thinking` (`adaptive`: medium; `enabled`: the level
 * whose budget is nearest `budget_tokens`, by the effort table, apis/effort.ts; `disabled` or
 * absent: none).
 */
function effort(body: Record<string, unknown>): string | null {
  const thinking = body['thinking'] as { type?: unknown; budget_tokens?: unknown } | null | undefined;
  const explicit = (body['output_config'] as { effort?: unknown } | null | undefined)?.effort;
  // Anthropic's levels (Anthropic docs, "Effort": low … max) are the gateway's words; `max` ranks above `xhigh` (router/deep.ts).
  if (typeof explicit === 'string' && EFFORT_WORD.test(explicit.toLowerCase())) return explicit.toLowerCase();
  if (!thinking || thinking.type === 'disabled') return null;
  if (thinking.type === 'adaptive') return 'medium';
  return levelOfBudget(typeof thinking.budget_tokens === 'number' ? thinking.budget_tokens : 0);
}

/**
 * A Messages body at `effort`: `output_config.effort` when the client set one (the table's
 * Anthropic effort for the level: one every effort-capable Claude model takes, so `minimal`
 * is sent as `low`, `xhigh` as `high`), else a `thinking.budget_tokens` no larger than the
 * level's budget in the effort table (never raised; it reads back as the level); a body
 * without either has no effort to lower.
 */
function withEffort(body: Record<string, unknown>, level: string): Record<string, unknown> {
  const config = body['output_config'] as Record<string, unknown> | null | undefined;
  if (config && typeof config['effort'] === 'string') return { ...body, output_config: { ...config, effort: effortFor(level, 'anthropic') ?? level } };
  const thinking = body['thinking'] as { type?: unknown; budget_tokens?: unknown } | null | undefined;
  if (!thinking || thinking.type !== 'enabled' || typeof thinking.budget_tokens !== 'number') return body;
  return { ...body, thinking: { ...thinking, budget_tokens: Math.min(thinking.budget_tokens, thinkingBudgetOf(level) ?? thinking.budget_tokens) } };
}

/** `system` as the first turn, the messages, and the tool definitions. */
function prompt(body: Record<string, unknown>): Prompt {
  const messages = Array.isArray(body['messages']) ? (body['messages'] as unknown[]) : [];
  return { messages: body['system'] !== undefined ? [{ role: 'system', content: body['system'] }, ...messages] : messages, tools: body['tools'] };
}

/**
 * A prepared body without `output_config.effort` for a model that does not reason (as
 * `normalise` drops `thinking` there): the effort is a reasoning control, and a bridge would
 * send it on as the wire's reasoning effort, which such a model refuses.
 */
function withoutEffort(prepared: PreparedBody, model: Model): PreparedBody {
  const config = prepared.body['output_config'];
  if (model.reasoning || !config || typeof config !== 'object' || !('effort' in config)) return prepared;
  const { effort: _effort, ...rest } = config as Record<string, unknown>;
  const body = { ...prepared.body };
  if (Object.keys(rest).length > 0) body['output_config'] = rest;
  else delete body['output_config'];
  return { body, dropped: [...prepared.dropped, 'output_config.effort'] };
}

export const messagesApi: InboundApi = {
  name: 'messages',
  path: '/v1/messages',
  effort,
  withEffort,
  wantsUsage: () => true,
  sessionHints: (body) => ({
    user: str((body['metadata'] as { user_id?: unknown } | null | undefined)?.user_id),
    cacheLifetimeMs: messagesCacheLifetimeMs(body),
  }),
  hasImages: (body) => hasImages(body['messages']),
  prompt,
  maxOutputTokens: (body) => (typeof body['max_tokens'] === 'number' ? body['max_tokens'] : undefined),
  prepare(body, upstreamModel, model, primary) {
    checkVision(body['messages'], model, 'messages');
    return withoutEffort(normalise(body, upstreamModel, model, primary, FIELDS), model);
  },
  errorBody: anthropicErrorBody,
  sseErrorFrame: (err) => Buffer.from(`event: error\ndata: ${JSON.stringify(anthropicErrorBody(err))}\n\n`),
  forwardHeaders: ['anthropic-beta'],
};
