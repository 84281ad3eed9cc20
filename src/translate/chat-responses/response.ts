/**
 * A Responses API response object -> an OpenAI `chat.completion` (non-streaming), plus the
 * finish-reason and usage mappings the stream shares (OpenAI API reference, "The response
 * object"; the recordings `openai-responses-stream-*.sse`, whose `response.completed` carries
 * the full object).
 *
 * - `message` items -> `content` (their `output_text` parts) and `refusal`; `function_call`
 *   items -> `tool_calls`; `reasoning` items -> `reasoning_content`, from their summary or
 *   reasoning text (an encrypted-only item carries nothing readable and gives nothing).
 * - finish: `tool_calls` when the output calls a function; `length` for an incomplete
 *   response out of output tokens; `content_filter` for a filtered one; else `stop`.
 */
import { isObj, type Obj } from '../read.js';
import { asText } from '../../util/as-text.js';

/** The chat `usage` object for a Responses `usage` object. */
export function chatUsage(u: unknown): Obj | undefined {
  if (!isObj(u)) return undefined;
  const input = typeof u['input_tokens'] === 'number' ? u['input_tokens'] : 0;
  const output = typeof u['output_tokens'] === 'number' ? u['output_tokens'] : 0;
  const cached =
    isObj(u['input_tokens_details']) && typeof u['input_tokens_details']['cached_tokens'] === 'number' ? u['input_tokens_details']['cached_tokens'] : 0;
  const reasoning =
    isObj(u['output_tokens_details']) && typeof u['output_tokens_details']['reasoning_tokens'] === 'number'
      ? u['output_tokens_details']['reasoning_tokens']
      : 0;
  return {
    prompt_tokens: input,
    completion_tokens: output,
    total_tokens: input + output,
    prompt_tokens_details: { cached_tokens: cached },
    completion_tokens_details: { reasoning_tokens: reasoning },
  };
}

/** The chat `finish_reason` of a finished response. */
export function finishOf(response: Obj, calledTools: boolean): string {
  const reason = isObj(response['incomplete_details']) ? response['incomplete_details']['reason'] : undefined;
  if (reason === 'max_output_tokens') return 'length';
  if (reason === 'content_filter') return 'content_filter';
  return calledTools ? 'tool_calls' : 'stop';
}

/** The readable reasoning of a `reasoning` item: its summary, else its reasoning text. */
export function reasoningText(item: Obj): string {
  const parts = [...(Array.isArray(item['summary']) ? item['summary'] : []), ...(Array.isArray(item['content']) ? item['content'] : [])];
  return parts.map((p) => (isObj(p) && typeof p['text'] === 'string' ? p['text'] : '')).join('');
}

/** A complete response as a chat completion, with its generated text (for estimates). */
export function toChatCompletion(response: Obj): { body: Obj; text: string } {
  let content = '';
  let refusal = '';
  let reasoning = '';
  const calls: Obj[] = [];
  for (const item of Array.isArray(response['output']) ? (response['output'] as unknown[]) : []) {
    if (!isObj(item)) continue;
    if (item['type'] === 'message') {
      for (const p of Array.isArray(item['content']) ? (item['content'] as unknown[]) : []) {
        if (isObj(p) && p['type'] === 'output_text' && typeof p['text'] === 'string') content += p['text'];
        if (isObj(p) && p['type'] === 'refusal' && typeof p['refusal'] === 'string') refusal += p['refusal'];
      }
    } else if (item['type'] === 'function_call') {
      calls.push({
        id: asText(item['call_id'] ?? ''),
        type: 'function',
        function: { name: asText(item['name'] ?? ''), arguments: typeof item['arguments'] === 'string' ? item['arguments'] : '{}' },
      });
    } else if (item['type'] === 'reasoning') {
      reasoning += reasoningText(item);
    }
  }
  const message: Obj = { role: 'assistant', content: content === '' && calls.length > 0 ? null : content, refusal: refusal === '' ? null : refusal };
  if (calls.length > 0) message['tool_calls'] = calls;
  if (reasoning !== '') message['reasoning_content'] = reasoning;
  const usage = chatUsage(response['usage']);
  const body: Obj = {
    id: asText(response['id'] ?? ''),
    object: 'chat.completion',
    created: typeof response['created_at'] === 'number' ? response['created_at'] : Math.floor(Date.now() / 1000),
    model: asText(response['model'] ?? ''),
    choices: [{ index: 0, message, logprobs: null, finish_reason: finishOf(response, calls.length > 0) }],
    ...(usage ? { usage } : {}),
  };
  const text = content + refusal + calls.map((c) => asText((c['function'] as Obj)['name']) + asText((c['function'] as Obj)['arguments'])).join('');
  return { body, text: text + reasoning };
}
