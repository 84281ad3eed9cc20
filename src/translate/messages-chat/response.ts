/**
 * A chat completion -> an Anthropic Messages answer (Anthropic API reference, "Messages":
 * `{id, type:'message', role, model, content, stop_reason, stop_sequence, usage}`; the
 * recordings `anthropic-messages-text.json`, `anthropic-messages-thinking-tool-use.json`),
 * plus the stop-reason and usage mappings the stream shares.
 *
 * - Chat `reasoning_content` / `reasoning` -> a `thinking` block first, with an empty
 *   `signature`: the reasoning is carried, no signature is invented (a block without one is
 *   never sent to an Anthropic account: see `passthrough/messages.ts`).
 * - `content` -> a `text` block; each tool call -> a `tool_use` block with its arguments
 *   parsed as the `input` object (arguments that are not a JSON object give `{}`, as a
 *   broken call cannot be run either way).
 * - Usage: Anthropic counts input apart from cache reads and writes, so `input_tokens` is
 *   chat's `prompt_tokens` minus the cached (and cache-written) tokens.
 */
import { chatReasoning } from '../../apis/chat.js';
import type { Usage } from '../../usage/usage.js';
import { isObj, type Obj } from '../read.js';
import { newMessageId } from './ids.js';
import { asText } from '../../util/as-text.js';

/** Chat `finish_reason` -> Anthropic `stop_reason`. */
export function toStopReason(finish: string | null): string {
  switch (finish) {
    case 'length':
      return 'max_tokens';
    case 'tool_calls':
    case 'function_call':
      return 'tool_use';
    case 'content_filter':
      return 'refusal';
    default:
      return 'end_turn';
  }
}

/** The Anthropic `usage` object for a usage in gateway terms (zeros while unknown). */
export function anthropicUsage(u: Usage | null): Obj {
  if (!u) return { input_tokens: 0, output_tokens: 0 };
  const written = u.cacheWrite ?? 0;
  return {
    input_tokens: Math.max(0, u.input - u.cached - written),
    cache_creation_input_tokens: written,
    cache_read_input_tokens: u.cached,
    output_tokens: u.output,
  };
}

/** A tool call's arguments as a `tool_use` input object. */
export function toolInput(args: string): Obj {
  try {
    const parsed: unknown = JSON.parse(args === '' ? '{}' : args);
    return isObj(parsed) ? parsed : {};
  } catch {
    return {};
  }
}

/** A complete chat completion as a Messages answer, with its generated text (for estimates). */
export function toMessage(chat: Obj, usage: Usage | null): { body: Obj; text: string } {
  const choice = Array.isArray(chat['choices']) && isObj(chat['choices'][0]) ? chat['choices'][0] : {};
  const message = isObj(choice['message']) ? choice['message'] : {};
  const content: Obj[] = [];
  let text = '';
  const reasoning = chatReasoning(message);
  if (reasoning !== '') content.push({ type: 'thinking', thinking: reasoning, signature: '' });
  if (typeof message['content'] === 'string' && message['content'] !== '') {
    text += message['content'];
    content.push({ type: 'text', text: message['content'] });
  }
  for (const call of Array.isArray(message['tool_calls']) ? (message['tool_calls'] as unknown[]) : []) {
    if (!isObj(call)) continue;
    const fn = isObj(call['function']) ? call['function'] : {};
    const args = typeof fn['arguments'] === 'string' ? fn['arguments'] : '';
    text += asText(fn['name'] ?? '') + args;
    content.push({ type: 'tool_use', id: asText(call['id'] ?? newMessageId('toolu')), name: asText(fn['name'] ?? ''), input: toolInput(args) });
  }
  const finish = typeof choice['finish_reason'] === 'string' ? choice['finish_reason'] : null;
  return {
    body: {
      id: newMessageId('msg'),
      type: 'message',
      role: 'assistant',
      model: asText(chat['model'] ?? ''),
      content,
      stop_reason: toStopReason(finish),
      stop_sequence: null,
      usage: anthropicUsage(usage),
    },
    text: text + reasoning,
  };
}
