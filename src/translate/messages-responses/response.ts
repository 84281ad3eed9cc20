/**
 * A Responses API response object (OpenAI API reference, "The response object"; the
 * recordings `openai-responses-stream-*`, whose `response.completed` carries the whole
 * object) -> an Anthropic Messages answer (Anthropic API reference, "Messages"), plus the
 * stop-reason mapping the stream shares.
 *
 * - `reasoning` items -> a `thinking` block from their summary, else their reasoning text,
 *   with an empty `signature` (none is invented; an encrypted-only item gives no block).
 * - `message` items -> `text` blocks (`output_text` parts; a refusal as text).
 * - `function_call` items -> `tool_use` blocks: `id` the call id, the arguments parsed as the
 *   `input` object.
 * - Stop reason: `max_tokens` for a response incomplete for `max_output_tokens`, `refusal`
 *   for one stopped by a content filter, `tool_use` when it calls a function, else `end_turn`.
 * - Usage: Anthropic counts input apart from cache reads, so `input_tokens` is the Responses
 *   `input_tokens` minus `cached_tokens`, which are `cache_read_input_tokens`.
 */
import { readResponsesUsage } from '../../apis/responses.js';
import { finishOf, reasoningText } from '../chat-responses/response.js';
import { newMessageId } from '../messages-chat/ids.js';
import { anthropicUsage, toolInput, toStopReason } from '../messages-chat/response.js';
import { isObj, type Obj } from '../read.js';
import { asText } from '../../util/as-text.js';

/** The Anthropic `stop_reason` of a finished response. */
export function stopReasonOf(response: Obj, calledTools: boolean): string {
  return toStopReason(finishOf(response, calledTools));
}

/** The text of a `message` item: its `output_text` parts and refusals. */
export function messageText(item: Obj): string {
  let out = '';
  for (const p of Array.isArray(item['content']) ? (item['content'] as unknown[]) : []) {
    if (isObj(p) && p['type'] === 'output_text' && typeof p['text'] === 'string') out += p['text'];
    if (isObj(p) && p['type'] === 'refusal' && typeof p['refusal'] === 'string') out += p['refusal'];
  }
  return out;
}

/** A complete response as a Messages answer, with its generated text (for estimates). */
export function toMessage(response: Obj): { body: Obj; text: string } {
  const content: Obj[] = [];
  let text = '';
  let reasoning = '';
  let called = false;
  for (const item of Array.isArray(response['output']) ? (response['output'] as unknown[]) : []) {
    if (!isObj(item)) continue;
    if (item['type'] === 'reasoning') {
      const r = reasoningText(item);
      reasoning += r;
      if (r !== '') content.push({ type: 'thinking', thinking: r, signature: '' });
    } else if (item['type'] === 'message') {
      const t = messageText(item);
      text += t;
      if (t !== '') content.push({ type: 'text', text: t });
    } else if (item['type'] === 'function_call') {
      called = true;
      const name = asText(item['name'] ?? '');
      const args = typeof item['arguments'] === 'string' ? item['arguments'] : '';
      text += name + args;
      content.push({ type: 'tool_use', id: asText(item['call_id'] ?? newMessageId('toolu')), name, input: toolInput(args) });
    }
  }
  const body = {
    id: newMessageId('msg'),
    type: 'message',
    role: 'assistant',
    model: asText(response['model'] ?? ''),
    content,
    stop_reason: stopReasonOf(response, called),
    stop_sequence: null,
    usage: anthropicUsage(readResponsesUsage(response['usage'])),
  };
  return { body, text: text + reasoning };
}
