/**
 * The Responses API objects the translators for a Responses client build (OpenAI API
 * reference, "The response object"; the recordings `openai-responses-stream-text.sse`,
 * `openai-responses-stream-function-call.sse` for their exact shapes): output items, the
 * response around them, its usage. Shared by every translator whose client is a Responses
 * client over another wire API (responses-chat, responses-messages), JSON answers and
 * streams alike, so each gives the client the same objects.
 */
import { randomBytes } from 'node:crypto';
import type { Usage } from '../usage/usage.js';
import type { Obj } from './read.js';

/** A Responses-style id: `prefix_` and 48 hex digits (the recordings' ids are that long). */
export function newId(prefix: string): string {
  return `${prefix}_${randomBytes(24).toString('hex')}`;
}

type ItemStatus = 'in_progress' | 'completed';

/** A reasoning item carrying raw reasoning text (`content: [{type:'reasoning_text'}]`, no summary). */
export function reasoningTextItem(id: string, text: string, status: ItemStatus): Obj {
  return { id, type: 'reasoning', summary: [], content: status === 'completed' ? [{ type: 'reasoning_text', text }] : [], status };
}

/**
 * A reasoning item carrying a summary (`summary: [{type:'summary_text'}]`; null: none, as
 * for reasoning the provider keeps hidden) and, once complete, the `encrypted_content` a
 * client sends back to continue the reasoning.
 */
export function reasoningSummaryItem(id: string, summary: string | null, encrypted: string | undefined, status: ItemStatus): Obj {
  const done = status === 'completed';
  return {
    id,
    type: 'reasoning',
    summary: done && summary !== null ? [{ type: 'summary_text', text: summary }] : [],
    ...(done && encrypted !== undefined ? { encrypted_content: encrypted } : {}),
    status,
  };
}

export function messageItem(id: string, text: string, status: ItemStatus): Obj {
  return {
    id,
    type: 'message',
    status,
    role: 'assistant',
    content: status === 'completed' ? [{ type: 'output_text', annotations: [], logprobs: [], text }] : [],
  };
}

/** What a tool call item is made of: the call's id, the tool (its namespace, if any) and the arguments (a custom tool: its input). */
export interface CallFields {
  readonly callId: string;
  readonly name: string;
  readonly namespace: string | null;
  readonly custom: boolean;
}

/** A `function_call` item, or a `custom_tool_call` (input `args`) for a custom tool; `namespace` set for a namespaced tool. */
export function callItem(id: string, call: CallFields, args: string, status: ItemStatus): Obj {
  const ns = call.namespace !== null ? { namespace: call.namespace } : {};
  if (call.custom) return { id, type: 'custom_tool_call', status, call_id: call.callId, name: call.name, ...ns, input: status === 'completed' ? args : '' };
  return { id, type: 'function_call', status, arguments: status === 'completed' ? args : '', call_id: call.callId, name: call.name, ...ns };
}

/** The `input` string of a custom tool's call, from the arguments of the function it was offered as (`{"input": "..."}`). */
export function customInput(args: string): string {
  try {
    const parsed: unknown = JSON.parse(args);
    if (parsed && typeof parsed === 'object' && typeof (parsed as Obj)['input'] === 'string') return (parsed as Obj)['input'] as string;
  } catch {
    // not JSON: the model wrote the input itself
  }
  return args;
}

/** The Responses `usage` object (input tokens include cached ones; output tokens include reasoning ones). */
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

/** How a response ended: `completed`, or `incomplete` with the reason (`max_output_tokens`, `content_filter`). */
export interface Ending {
  readonly status: 'completed' | 'incomplete';
  readonly incomplete_details: Obj | null;
}

export const COMPLETED: Ending = Object.freeze({ status: 'completed', incomplete_details: null });

/** An `incomplete` ending for `reason`. */
export function incomplete(reason: 'max_output_tokens' | 'content_filter'): Ending {
  return { status: 'incomplete', incomplete_details: { reason } };
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
