/**
 * The Responses API objects built from a chat-completions answer (OpenAI API reference,
 * "The response object", and the recordings `openai-responses-stream-text.sse`,
 * `openai-responses-stream-function-call.sse` for their exact shapes): output items, the
 * response around them, its usage. Shared by the JSON answer (`index.ts`) and the stream
 * (`stream.ts`), so both give the client the same objects.
 *
 * - Chat `reasoning_content` (DeepSeek) / `reasoning` (OpenRouter, vLLM) is the model's raw
 *   reasoning: a `reasoning` item with `content: [{type:'reasoning_text'}]` and an empty
 *   `summary` (as OpenAI's open-weight models answer on the Responses API); no summary and
 *   no `encrypted_content` are invented.
 * - `finish_reason` `length` -> status `incomplete`, `incomplete_details.reason`
 *   `max_output_tokens`; `content_filter` -> `incomplete` / `content_filter`.
 */
import { randomBytes } from 'node:crypto';
import type { Usage } from '../../usage/usage.js';
import type { Obj } from '../read.js';

/** A Responses-style id: `prefix_` and 48 hex digits (the recordings' ids are that long). */
export function newId(prefix: string): string {
  return `${prefix}_${randomBytes(24).toString('hex')}`;
}

export function reasoningItem(id: string, text: string, status: 'in_progress' | 'completed'): Obj {
  return { id, type: 'reasoning', summary: [], content: status === 'completed' ? [{ type: 'reasoning_text', text }] : [], status };
}

export function messageItem(id: string, text: string, status: 'in_progress' | 'completed'): Obj {
  return { id, type: 'message', status, role: 'assistant', content: status === 'completed' ? [{ type: 'output_text', annotations: [], logprobs: [], text }] : [] };
}

/** A function call, or (for a tool the client declared `custom`) a custom tool call with the `input` argument. */
export function callItem(id: string, call: { callId: string; name: string; args: string }, custom: boolean, status: 'in_progress' | 'completed'): Obj {
  if (custom) return { id, type: 'custom_tool_call', status, call_id: call.callId, name: call.name, input: status === 'completed' ? customInput(call.args) : '' };
  return { id, type: 'function_call', status, arguments: status === 'completed' ? call.args : '', call_id: call.callId, name: call.name };
}

/** The `input` string of a custom tool's call, from the arguments of the function it was offered as. */
export function customInput(args: string): string {
  try {
    const parsed: unknown = JSON.parse(args);
    if (parsed && typeof parsed === 'object' && typeof (parsed as Obj)['input'] === 'string') return (parsed as Obj)['input'] as string;
  } catch {
    // not JSON: the model wrote the input itself
  }
  return args;
}

/** The Responses `usage` object. */
export function responsesUsage(u: Usage): Obj {
  return {
    input_tokens: u.input,
    input_tokens_details: { cached_tokens: u.cached },
    output_tokens: u.output,
    output_tokens_details: { reasoning_tokens: u.reasoning },
    total_tokens: u.input + u.output,
  };
}

/** What the response object echoes of the request. */
export interface Echo {
  readonly instructions: unknown;
  readonly tools: unknown;
  readonly toolChoice: unknown;
  readonly parallelToolCalls: unknown;
  readonly reasoningEffort: unknown;
  readonly maxOutputTokens: unknown;
  readonly text: unknown;
  readonly temperature: unknown;
  readonly topP: unknown;
  readonly metadata: unknown;
}

/** The request fields the response echoes. */
export function echoOf(body: Readonly<Obj>): Echo {
  const reasoning = body['reasoning'] as Obj | null | undefined;
  return {
    instructions: body['instructions'] ?? null,
    tools: Array.isArray(body['tools']) ? body['tools'] : [],
    toolChoice: body['tool_choice'] ?? 'auto',
    parallelToolCalls: body['parallel_tool_calls'] ?? true,
    reasoningEffort: reasoning?.['effort'] ?? null,
    maxOutputTokens: body['max_output_tokens'] ?? null,
    text: body['text'] ?? { format: { type: 'text' } },
    temperature: body['temperature'] ?? null,
    topP: body['top_p'] ?? null,
    metadata: body['metadata'] ?? {},
  };
}

/** Chat `finish_reason` -> the response's status and `incomplete_details`. */
export function statusOf(finish: string | null): { status: 'completed' | 'incomplete'; incomplete_details: Obj | null } {
  if (finish === 'length') return { status: 'incomplete', incomplete_details: { reason: 'max_output_tokens' } };
  if (finish === 'content_filter') return { status: 'incomplete', incomplete_details: { reason: 'content_filter' } };
  return { status: 'completed', incomplete_details: null };
}

/** The response object (`status` in_progress while streaming, with no output yet). */
export function responseObject(
  r: { id: string; createdAt: number; model: string; echo: Echo },
  state: { status: 'in_progress' | 'completed' | 'incomplete'; incomplete_details?: Obj | null; output: readonly Obj[]; usage: Usage | null },
): Obj {
  const e = r.echo;
  return {
    id: r.id,
    object: 'response',
    created_at: r.createdAt,
    status: state.status,
    background: false,
    error: null,
    incomplete_details: state.incomplete_details ?? null,
    instructions: e.instructions,
    max_output_tokens: e.maxOutputTokens,
    model: r.model,
    output: state.output,
    parallel_tool_calls: e.parallelToolCalls,
    previous_response_id: null,
    reasoning: { effort: e.reasoningEffort, summary: null },
    store: false,
    temperature: e.temperature,
    text: e.text,
    tool_choice: e.toolChoice,
    tools: e.tools,
    top_p: e.topP,
    truncation: 'disabled',
    usage: state.usage ? responsesUsage(state.usage) : null,
    metadata: e.metadata,
  };
}
