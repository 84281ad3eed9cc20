/**
 * An Anthropic Messages request (Anthropic API reference, "Messages": `system`, `messages`
 * of content blocks, `tools`, `tool_choice`, `thinking`, `stop_sequences`) as a Chat
 * Completions request, for an upstream that speaks only chat completions.
 *
 * - `system` (a string or text blocks) -> a leading `system` message; a `system` turn in
 *   `messages` (Claude Code's mid-conversation system turns) -> a `system` message in place.
 * - A user turn: `tool_result` blocks -> `tool` messages first (a chat server wants them
 *   right after the assistant's `tool_calls`), then the other blocks as one user message:
 *   `text`, `image` (base64 -> a data URL, url -> its URL), a text `document` as text.
 * - An assistant turn: `text` -> `content`, `tool_use` -> `tool_calls` (arguments: the input
 *   as JSON). `thinking` and `redacted_thinking` blocks are dropped: a chat server takes no
 *   reasoning in its input, and a signature means nothing off Anthropic's accounts.
 * - `tools`: client tools as chat functions (which tools: `messages-read.ts`).
 *   `tool_choice` `auto` / `any` / `tool` / `none` -> `auto` / `required` / the function /
 *   `none`; `disable_parallel_tool_use` -> `parallel_tool_calls: false`.
 * - `max_tokens` -> the output cap in the field the model takes; `thinking` (`enabled` or
 *   `adaptive`) or `output_config.effort` -> `reasoning_effort` at the level the gateway
 *   reads it as (`apis/messages.ts`), sent as the effort table's chat value (`apis/effort.ts`:
 *   above `high` -> `high`; `none` and unknown words left out); `stop_sequences` -> `stop` (the
 *   first 4, chat's limit); `metadata.user_id` -> `user` when it fits OpenAI's 64 characters
 *   (Claude Code's, a JSON object with device and session ids, is not sent);
 *   `temperature`, `top_p` as they are. Anthropic-only fields (`context_management`,
 *   `thinking.display`, `output_config`, `metadata`, `top_k`) are not sent.
 * @throws GatewayError 400 (`param` set) for blocks a chat server has no equivalent for
 *   (a PDF document, a search result, a container upload).
 */
import { effortFor } from '../../apis/effort.js';
import { messagesApi } from '../../apis/messages.js';
import { pushAll } from '../../util/push-all.js';
import { clientTools, imageUrl, invalid, joinText, noParallelTools, toolChoiceOf, turnsOf } from '../messages-read.js';
import { isObj, type Obj } from '../read.js';
import { asText } from '../../util/as-text.js';

/** OpenAI's longest `user` (characters): a longer one is refused with 400 `string_above_max_length`. */
const MAX_USER = 64;

const WIRE = 'chat completions';

/** An image block as a chat `image_url` part. */
function imagePart(block: Obj, param: string): Obj {
  return { type: 'image_url', image_url: { url: imageUrl(block, param, WIRE) } };
}

/** A user turn as `tool` messages and a user message. */
function userTurn(content: unknown, param: string): Obj[] {
  if (typeof content === 'string') return [{ role: 'user', content }];
  if (!Array.isArray(content)) return [{ role: 'user', content: '' }];
  const tools: Obj[] = [];
  const parts: Obj[] = [];
  content.forEach((b, i) => {
    const p = `${param}[${i}]`;
    if (!isObj(b)) throw invalid('Each content block must be an object.', p);
    switch (b['type']) {
      case 'text':
        parts.push({ type: 'text', text: asText(b['text'] ?? '') });
        return;
      case 'image':
        parts.push(imagePart(b, p));
        return;
      case 'tool_result': {
        const text = joinText(b['content']);
        // A tool message holds text only: the result's images follow in the turn's user message.
        if (Array.isArray(b['content'])) b['content'].forEach((c, j) => isObj(c) && c['type'] === 'image' && parts.push(imagePart(c, `${p}.content[${j}]`)));
        tools.push({ role: 'tool', tool_call_id: asText(b['tool_use_id'] ?? ''), content: b['is_error'] === true && text === '' ? 'error' : text });
        return;
      }
      case 'document': {
        const src = isObj(b['source']) ? b['source'] : {};
        if (src['type'] === 'text' && typeof src['data'] === 'string') {
          parts.push({ type: 'text', text: src['data'] });
          return;
        }
        throw invalid("Only text documents can be sent to this model's upstream (it speaks chat completions): send the document as text.", p);
      }
      case 'thinking':
      case 'redacted_thinking':
        return;
      default:
        throw invalid(
          `Content blocks of type '${asText(b['type'])}' cannot be sent to this model's upstream (it speaks chat completions): send text, images and tool results.`,
          p,
        );
    }
  });
  const out = [...tools];
  if (parts.length > 0) out.push({ role: 'user', content: parts.every((x) => x['type'] === 'text') ? parts.map((x) => x['text']).join('') : parts });
  return out;
}

/** An assistant turn as one assistant message. */
function assistantTurn(content: unknown): Obj {
  if (typeof content === 'string') return { role: 'assistant', content };
  let text = '';
  const calls: Obj[] = [];
  for (const b of Array.isArray(content) ? content : []) {
    if (!isObj(b)) continue;
    if (b['type'] === 'text' && typeof b['text'] === 'string') text += b['text'];
    else if (b['type'] === 'tool_use')
      calls.push({ id: asText(b['id'] ?? ''), type: 'function', function: { name: asText(b['name'] ?? ''), arguments: JSON.stringify(b['input'] ?? {}) } });
    // thinking, redacted_thinking, server tool blocks: not carried
  }
  const m: Obj = { role: 'assistant', content: text === '' && calls.length > 0 ? null : text };
  if (calls.length > 0) m['tool_calls'] = calls;
  return m;
}

function toTools(tools: unknown): Obj[] {
  return clientTools(tools, WIRE).map((t) => ({
    type: 'function',
    function: { name: t.name, ...(t.description !== undefined ? { description: t.description } : {}), parameters: t.parameters },
  }));
}

function toToolChoice(choice: unknown): unknown {
  const c = toolChoiceOf(choice);
  if (c === null) return undefined;
  return 'name' in c ? { type: 'function', function: { name: c.name } } : c.mode;
}

export interface ChatRequestOptions {
  readonly stream: boolean;
  /** The field the model takes its output cap in (default `max_tokens`). */
  readonly maxTokensField?: 'max_tokens' | 'max_completion_tokens' | undefined;
}

/**
 * @throws GatewayError 400 (see the file comment).
 */
export function toChatRequest(body: Readonly<Obj>, o: ChatRequestOptions): Obj {
  const messages: Obj[] = [];
  const system = joinText(body['system']);
  if (system !== '') messages.push({ role: 'system', content: system });
  for (const turn of turnsOf(body)) {
    if (turn.role === 'user') pushAll(messages, userTurn(turn.content, turn.param));
    else if (turn.role === 'assistant') messages.push(assistantTurn(turn.content));
    else messages.push({ role: 'system', content: joinText(turn.content) });
  }
  const out: Obj = { model: body['model'], messages };
  const tools = toTools(body['tools']);
  if (tools.length > 0) {
    out['tools'] = tools;
    const choice = toToolChoice(body['tool_choice']);
    if (choice !== undefined) out['tool_choice'] = choice;
    if (noParallelTools(body)) out['parallel_tool_calls'] = false;
  }
  if (typeof body['max_tokens'] === 'number') out[o.maxTokensField ?? 'max_tokens'] = body['max_tokens'];
  const effort = messagesApi.effort(body as Obj);
  const sent = effort === null ? undefined : effortFor(effort, 'chat');
  if (sent !== undefined) out['reasoning_effort'] = sent;
  if (Array.isArray(body['stop_sequences']) && body['stop_sequences'].length > 0) out['stop'] = body['stop_sequences'].slice(0, 4);
  const user = isObj(body['metadata']) ? body['metadata']['user_id'] : undefined;
  if (typeof user === 'string' && user !== '' && user.length <= MAX_USER) out['user'] = user;
  for (const k of ['temperature', 'top_p'] as const) if (typeof body[k] === 'number') out[k] = body[k];
  if (o.stream) {
    out['stream'] = true;
    out['stream_options'] = { include_usage: true };
  }
  return out;
}
