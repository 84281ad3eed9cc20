/**
 * An Anthropic Messages request (Anthropic API reference, "Messages") as a Responses API
 * request (OpenAI API reference, "Create a model response"), for an account that serves the
 * model on the Responses API only (OpenAI's Codex models; `openai-compatible` with
 * `options: { chat: false }`).
 *
 * - `system` (a string or text blocks) -> `instructions`; a `system` turn in `messages`
 *   (Claude Code's mid-conversation system turns) -> a `system` message item in place.
 * - A user turn: `tool_result` blocks -> `function_call_output` items first (tied to their
 *   call by `call_id`; text, or a list of `input_text` / `input_image` parts when the result
 *   holds images), then the other blocks as one user message: `text` -> `input_text`,
 *   `image` -> `input_image` (a data URL or its URL), a text document -> `input_text`, a PDF
 *   (base64 or URL) -> `input_file`.
 * - An assistant turn: text -> an assistant message, `tool_use` -> a `function_call` item
 *   (arguments: the input as JSON), in their order. `thinking` blocks are dropped: their
 *   signatures mean nothing off Anthropic's accounts, and the account reads only its own
 *   reasoning.
 * - `tools`: client tools as function tools with `strict: false` (the Responses API would
 *   default it to true; which tools: `messages-read.ts`); `tool_choice` `auto` / `any` /
 *   `tool` / `none` -> `auto` / `required` / the function / `none`;
 *   `disable_parallel_tool_use` -> `parallel_tool_calls: false`.
 * - `max_tokens` -> `max_output_tokens`; `thinking` (`enabled` or `adaptive`) or
 *   `output_config.effort` -> `reasoning.effort` at the level the gateway reads it as
 *   (`apis/messages.ts`), sent as the effort table's Responses value (`apis/effort.ts`:
 *   Anthropic's `max` is `xhigh`; unknown words left out); `temperature`, `top_p` as they are;
 *   `store: false` (the client keeps its own history).
 * - Not sent: `metadata` (Claude Code's `user_id` holds its device and session ids, which are
 *   no business of another provider), `context_management`, `thinking.display`, `top_k`,
 *   `service_tier`, cache-control marks.
 * @throws GatewayError 400 (`param` set): `stop_sequences` (the Responses API has no stop
 *   field, as chat's `stop` over the same wire: `chat-responses/request.ts`), and blocks
 *   it has no equivalent for (file ids, search results, container uploads).
 */
import { effortFor } from '../../apis/effort.js';
import { messagesApi } from '../../apis/messages.js';
import { GatewayError } from '../../errors/codes.js';
import { clientTools, imageUrl, invalid, joinText, noParallelTools, toolChoiceOf, turnsOf } from '../messages-read.js';
import { pushAll } from '../../util/push-all.js';
import { isObj, type Obj } from '../read.js';
import { asText } from '../../util/as-text.js';

const WIRE = 'the Responses API';

function inputImage(block: Obj, param: string): Obj {
  return { type: 'input_image', image_url: imageUrl(block, param, WIRE), detail: 'auto' };
}

/** A `document` block as an input part: text as `input_text`, a PDF as `input_file`. */
function documentPart(block: Obj, param: string): Obj {
  const src = isObj(block['source']) ? block['source'] : {};
  if (src['type'] === 'text' && typeof src['data'] === 'string') return { type: 'input_text', text: src['data'] };
  if (src['type'] === 'content') return { type: 'input_text', text: joinText(src['content']) };
  const filename = typeof block['title'] === 'string' && block['title'] !== '' ? block['title'] : 'document.pdf';
  if (src['type'] === 'base64' && typeof src['data'] === 'string')
    return { type: 'input_file', filename, file_data: `data:${asText(src['media_type'] ?? 'application/pdf')};base64,${src['data']}` };
  if (src['type'] === 'url' && typeof src['url'] === 'string') return { type: 'input_file', file_url: src['url'] };
  throw invalid(
    "A document is sent to this model's upstream (it speaks the Responses API) as text, base64 data or a URL; file ids are not available there.",
    `${param}.source`,
  );
}

/** A tool result's output: its text, or its parts when it holds images. */
function toolOutput(block: Obj, param: string): unknown {
  const content = block['content'];
  const text = joinText(content);
  const images = Array.isArray(content)
    ? content.map((c, j) => (isObj(c) && c['type'] === 'image' ? inputImage(c, `${param}.content[${j}]`) : null)).filter((c) => c !== null)
    : [];
  const shown = block['is_error'] === true && text === '' ? 'error' : text;
  if (images.length === 0) return shown;
  return [...(shown !== '' ? [{ type: 'input_text', text: shown }] : []), ...images];
}

/** A user turn as `function_call_output` items and a user message. */
function userTurn(content: unknown, param: string): Obj[] {
  if (typeof content === 'string') return [{ role: 'user', content }];
  if (!Array.isArray(content)) return [{ role: 'user', content: '' }];
  const outputs: Obj[] = [];
  const parts: Obj[] = [];
  content.forEach((b, i) => {
    const p = `${param}[${i}]`;
    if (!isObj(b)) throw invalid('Each content block must be an object.', p);
    switch (b['type']) {
      case 'text':
        parts.push({ type: 'input_text', text: asText(b['text'] ?? '') });
        return;
      case 'image':
        parts.push(inputImage(b, p));
        return;
      case 'document':
        parts.push(documentPart(b, p));
        return;
      case 'tool_result':
        outputs.push({ type: 'function_call_output', call_id: asText(b['tool_use_id'] ?? ''), output: toolOutput(b, p) });
        return;
      case 'thinking':
      case 'redacted_thinking':
        return;
      default:
        throw invalid(
          `Content blocks of type '${asText(b['type'])}' cannot be sent to this model's upstream (it speaks the Responses API): send text, images, documents and tool results.`,
          p,
        );
    }
  });
  return parts.length > 0 ? [...outputs, { role: 'user', content: parts }] : outputs;
}

/** An assistant turn as assistant messages and `function_call` items, in order. */
function assistantTurn(content: unknown): Obj[] {
  if (typeof content === 'string') return content === '' ? [] : [{ role: 'assistant', content }];
  const out: Obj[] = [];
  let text = '';
  const flush = (): void => {
    if (text !== '') out.push({ role: 'assistant', content: text });
    text = '';
  };
  for (const b of Array.isArray(content) ? content : []) {
    if (!isObj(b)) continue;
    if (b['type'] === 'text' && typeof b['text'] === 'string') text += b['text'];
    else if (b['type'] === 'tool_use') {
      flush();
      out.push({ type: 'function_call', call_id: asText(b['id'] ?? ''), name: asText(b['name'] ?? ''), arguments: JSON.stringify(b['input'] ?? {}) });
    }
    // thinking, redacted_thinking, server tool blocks: not carried
  }
  flush();
  return out;
}

function toToolChoice(choice: unknown): unknown {
  const c = toolChoiceOf(choice);
  if (c === null) return undefined;
  return 'name' in c ? { type: 'function', name: c.name } : c.mode;
}

/** @throws GatewayError 400 (see the file comment). */
export function toResponsesRequest(body: Readonly<Obj>, stream: boolean): Obj {
  if (Array.isArray(body['stop_sequences']) && body['stop_sequences'].length > 0) {
    throw new GatewayError('GW_ERR_UNSUPPORTED_PARAMETER', {
      message: "'stop_sequences' is not available for this model: its upstream speaks the Responses API, which has no stop field. Send the request without it.",
      param: 'stop_sequences',
    });
  }
  const input: Obj[] = [];
  for (const turn of turnsOf(body)) {
    if (turn.role === 'user') pushAll(input, userTurn(turn.content, turn.param));
    else if (turn.role === 'assistant') pushAll(input, assistantTurn(turn.content));
    else input.push({ role: 'system', content: joinText(turn.content) });
  }
  const out: Obj = { model: body['model'] };
  const instructions = joinText(body['system']);
  if (instructions !== '') out['instructions'] = instructions;
  out['input'] = input;
  out['store'] = false;
  const tools = clientTools(body['tools'], WIRE).map((t) => ({
    type: 'function',
    name: t.name,
    ...(t.description !== undefined ? { description: t.description } : {}),
    parameters: t.parameters,
    strict: false,
  }));
  if (tools.length > 0) {
    out['tools'] = tools;
    const choice = toToolChoice(body['tool_choice']);
    if (choice !== undefined) out['tool_choice'] = choice;
    if (noParallelTools(body)) out['parallel_tool_calls'] = false;
  }
  if (typeof body['max_tokens'] === 'number') out['max_output_tokens'] = body['max_tokens'];
  const effort = messagesApi.effort(body as Obj);
  const sent = effort === null ? undefined : effortFor(effort, 'responses');
  if (sent !== undefined) out['reasoning'] = { effort: sent };
  for (const k of ['temperature', 'top_p'] as const) if (typeof body[k] === 'number') out[k] = body[k];
  if (stream) out['stream'] = true;
  return out;
}
