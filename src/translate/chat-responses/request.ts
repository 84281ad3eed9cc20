/**
 * A Chat Completions request as a Responses API request (OpenAI API reference, "Create a
 * model response"), for an account that serves a model on the Responses API only (OpenAI's
 * Codex models).
 *
 * - `messages` -> `input` items: system, developer, user and assistant messages as messages
 *   (user parts: `text` -> `input_text`, `image_url` -> `input_image`); an assistant's
 *   `tool_calls` -> `function_call` items; a `tool` message -> a `function_call_output`.
 *   `reasoning_content` in the history is dropped: the account reads only its own reasoning.
 * - `tools` (functions) -> Responses function tools, `strict` as the client set it (false when
 *   unset: the Responses API would default it to true); `tool_choice` and
 *   `parallel_tool_calls` follow.
 * - `max_completion_tokens` / `max_tokens` -> `max_output_tokens`; `reasoning_effort` ->
 *   `reasoning.effort`; `response_format` -> `text.format`; `temperature`, `top_p`, `user` as
 *   they are. `store: false`: the chat client keeps its own history, nothing is left at the
 *   account.
 * @throws GatewayError 400 (`param` set) for what the Responses API has no field for: `n`
 *   above 1, `stop`, `logprobs`, `audio`.
 */
import { GatewayError } from '../../errors/codes.js';
import { isObj, type Obj } from '../read.js';
import { asText } from '../../util/as-text.js';

function invalid(message: string, param: string): GatewayError {
  return new GatewayError('GW_ERR_UNSUPPORTED_PARAMETER', { message, param });
}

/** A message's text (a string, or the text of its parts). */
function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .map((p) => (isObj(p) && typeof p['text'] === 'string' ? p['text'] : isObj(p) && typeof p['refusal'] === 'string' ? p['refusal'] : ''))
    .join('');
}

function userContent(content: unknown): unknown {
  if (!Array.isArray(content)) return textOf(content);
  return content.map((p) => {
    if (isObj(p) && p['type'] === 'image_url') {
      const img = isObj(p['image_url']) ? p['image_url'] : {};
      return { type: 'input_image', image_url: asText(img['url'] ?? ''), detail: typeof img['detail'] === 'string' ? img['detail'] : 'auto' };
    }
    return { type: 'input_text', text: isObj(p) && typeof p['text'] === 'string' ? p['text'] : '' };
  });
}

function toInput(messages: unknown): Obj[] {
  const out: Obj[] = [];
  for (const m of Array.isArray(messages) ? messages : []) {
    if (!isObj(m)) continue;
    const role = m['role'];
    if (role === 'tool') {
      out.push({ type: 'function_call_output', call_id: asText(m['tool_call_id'] ?? ''), output: textOf(m['content']) });
    } else if (role === 'assistant') {
      const text = textOf(m['content']);
      if (text !== '') out.push({ role: 'assistant', content: text });
      for (const call of Array.isArray(m['tool_calls']) ? (m['tool_calls'] as unknown[]) : []) {
        const fn = isObj(call) && isObj(call['function']) ? call['function'] : {};
        out.push({
          type: 'function_call',
          call_id: asText((call as Obj)['id'] ?? ''),
          name: asText(fn['name'] ?? ''),
          arguments: typeof fn['arguments'] === 'string' ? fn['arguments'] : '{}',
        });
      }
    } else if (role === 'user') {
      out.push({ role: 'user', content: userContent(m['content']) });
    } else if (role === 'system' || role === 'developer') {
      out.push({ role, content: textOf(m['content']) });
    }
  }
  return out;
}

function toTools(tools: unknown): Obj[] {
  const out: Obj[] = [];
  for (const t of Array.isArray(tools) ? tools : []) {
    const fn = isObj(t) && t['type'] === 'function' && isObj(t['function']) ? t['function'] : undefined;
    if (!fn) continue;
    out.push({
      type: 'function',
      name: asText(fn['name'] ?? ''),
      ...(typeof fn['description'] === 'string' ? { description: fn['description'] } : {}),
      parameters: isObj(fn['parameters']) ? fn['parameters'] : { type: 'object', properties: {} },
      strict: fn['strict'] === true,
    });
  }
  return out;
}

function toToolChoice(choice: unknown): unknown {
  if (choice === 'auto' || choice === 'none' || choice === 'required') return choice;
  if (isObj(choice) && isObj(choice['function']) && typeof choice['function']['name'] === 'string')
    return { type: 'function', name: choice['function']['name'] };
  return undefined;
}

function toTextFormat(format: unknown): unknown {
  if (!isObj(format)) return undefined;
  if (format['type'] === 'json_object') return { format: { type: 'json_object' } };
  if (format['type'] === 'json_schema' && isObj(format['json_schema'])) return { format: { type: 'json_schema', ...format['json_schema'] } };
  return undefined;
}

/** @throws GatewayError 400 (see the file comment). */
export function toResponsesRequest(body: Readonly<Obj>, stream: boolean): Obj {
  if (typeof body['n'] === 'number' && body['n'] > 1)
    throw invalid("'n' above 1 is not available for this model: its upstream speaks the Responses API, which answers once. Send one request per answer.", 'n');
  for (const k of ['stop', 'logprobs', 'audio'] as const) {
    const v = body[k];
    if (v !== undefined && v !== null && v !== false)
      throw invalid(`'${k}' is not available for this model: its upstream speaks the Responses API, which has no such field.`, k);
  }
  const out: Obj = { model: body['model'], input: toInput(body['messages']), store: false };
  const tools = toTools(body['tools']);
  if (tools.length > 0) {
    out['tools'] = tools;
    const choice = toToolChoice(body['tool_choice']);
    if (choice !== undefined) out['tool_choice'] = choice;
    if (typeof body['parallel_tool_calls'] === 'boolean') out['parallel_tool_calls'] = body['parallel_tool_calls'];
  }
  const cap = body['max_completion_tokens'] ?? body['max_tokens'];
  if (typeof cap === 'number') out['max_output_tokens'] = cap;
  if (typeof body['reasoning_effort'] === 'string') out['reasoning'] = { effort: body['reasoning_effort'] };
  const text = toTextFormat(body['response_format']);
  if (text !== undefined) out['text'] = text;
  for (const k of ['temperature', 'top_p', 'user'] as const) if (body[k] !== undefined && body[k] !== null) out[k] = body[k];
  if (stream) out['stream'] = true;
  return out;
}
