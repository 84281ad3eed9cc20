/**
 * An Anthropic message (Anthropic API reference, "Messages": `{id, model, content: [blocks],
 * stop_reason, usage}`; recordings `anthropic-messages-*.json`) as a Responses API response,
 * and what the JSON answer and the stream share:
 *
 * - `thinking` block -> a `reasoning` item: the thinking text as its summary (Claude 4 models
 *   return a summary of their thinking; Anthropic docs, "Extended thinking"), the block
 *   itself in `encrypted_content` (`thinking.ts`); `redacted_thinking` -> a reasoning item
 *   with no summary, the block in `encrypted_content`;
 * - `text` block -> a `message` item with one `output_text` part;
 * - client `tool_use` block -> a `function_call` item (`call_id` the block's id, `arguments`
 *   its input as JSON), or a `custom_tool_call` (`input` the one string argument) for a
 *   custom tool, named back by `../responses-tools.ts` (with its namespace, if any);
 * - server tool blocks and their results are left out (the client can neither see nor run them);
 * - `stop_reason` `end_turn` / `tool_use` / `stop_sequence` / `pause_turn` -> `completed`;
 *   `max_tokens` / `model_context_window_exceeded` -> `incomplete` (`max_output_tokens`);
 *   `refusal` -> `incomplete` (`content_filter`).
 */
import type { Usage } from '../../usage/usage.js';
import { isObj, type Obj } from '../read.js';
import {
  callItem,
  COMPLETED,
  customInput,
  type Echo,
  type Ending,
  incomplete,
  messageItem,
  newId,
  reasoningSummaryItem,
  responseObject,
} from '../responses-output.js';
import type { ResponsesTools } from '../responses-tools.js';
import { sealThinking } from './thinking.js';
import { asText } from '../../util/as-text.js';

/** Anthropic `stop_reason` -> how the response ends. */
export function endingOf(stopReason: unknown): Ending {
  if (stopReason === 'max_tokens' || stopReason === 'model_context_window_exceeded') return incomplete('max_output_tokens');
  if (stopReason === 'refusal') return incomplete('content_filter');
  return COMPLETED;
}

/** The `arguments` (function) or `input` (custom tool) of a complete `tool_use` block's input. */
export function callArguments(input: unknown, custom: boolean): string {
  const json = JSON.stringify(isObj(input) ? input : {});
  return custom ? customInput(json) : json;
}

/** What a response is made for: its id, what it echoes, the tools to name calls back, the upstream model id (thinking is sealed with it). */
export interface ResponseContext {
  readonly id: string;
  readonly echo: Echo;
  readonly tools: ResponsesTools;
  readonly model: string;
}

/** The output items of a complete message's content blocks, in order. */
function outputOf(content: readonly unknown[], r: ResponseContext): Obj[] {
  const output: Obj[] = [];
  for (const b of content) {
    if (!isObj(b)) continue;
    switch (b['type']) {
      case 'thinking': {
        const thinking = typeof b['thinking'] === 'string' ? b['thinking'] : '';
        const sealed =
          typeof b['signature'] === 'string' && b['signature'] !== ''
            ? sealThinking({ type: 'thinking', thinking, signature: b['signature'] }, r.model)
            : undefined;
        output.push(reasoningSummaryItem(newId('rs'), thinking, sealed, 'completed'));
        break;
      }
      case 'redacted_thinking':
        if (typeof b['data'] === 'string')
          output.push(reasoningSummaryItem(newId('rs'), null, sealThinking({ type: 'redacted_thinking', data: b['data'] }, r.model), 'completed'));
        break;
      case 'text':
        if (typeof b['text'] === 'string') output.push(messageItem(newId('msg'), b['text'], 'completed'));
        break;
      case 'tool_use': {
        const tool = r.tools.back(asText(b['name'] ?? ''));
        const custom = tool.kind === 'custom';
        const call = { callId: asText(b['id'] ?? newId('call')), name: tool.name, namespace: tool.namespace, custom };
        output.push(callItem(newId(custom ? 'ctc' : 'fc'), call, callArguments(b['input'], custom), 'completed'));
        break;
      }
      default:
        break;
    }
  }
  return output;
}

/** A complete Anthropic message as the response object. */
export function toResponse(msg: Obj, r: ResponseContext, usage: Usage | null): Obj {
  const output = outputOf(Array.isArray(msg['content']) ? (msg['content'] as unknown[]) : [], r);
  // The response is made now, by the gateway.
  const createdAt = Math.floor(Date.now() / 1000);
  return responseObject({ id: r.id, createdAt, model: asText(msg['model'] ?? ''), echo: r.echo }, { ...endingOf(msg['stop_reason']), output, usage });
}
