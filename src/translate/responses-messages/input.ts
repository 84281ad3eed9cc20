/**
 * A Responses request's `instructions` and `input` (OpenAI API reference, "Create a model
 * response": input items) as Anthropic Messages `system` and `messages` (Anthropic API
 * reference, "Messages"; guides "Tool use", "Vision", "PDF support", "Extended thinking"):
 *
 * - `instructions`, and `system` / `developer` message items wherever they stand (Codex
 *   sends its instructions as developer items, some mid-conversation) -> `system` text blocks,
 *   in order;
 * - `user` / `assistant` message items -> turns of that role (`input_text` / `output_text` /
 *   `refusal` as text; `input_image` by data URL or http(s) URL as an `image` block;
 *   `input_file` holding a PDF as base64 (`file_data`) or by http(s) `file_url` as a
 *   `document` block); Anthropic refuses empty or whitespace-only text, so such text is left out;
 * - `function_call` / `custom_tool_call` -> a `tool_use` block of the assistant turn (a custom
 *   tool's `input` as the one string argument of the function it is offered as), under the
 *   tool's wire name (`../responses-tools.ts`);
 * - `function_call_output` / `custom_tool_call_output` -> a `tool_result` block of a user
 *   turn; consecutive results share one user turn, ahead of any other content (Anthropic's
 *   rule); text, image and file parts of an output are kept;
 * - `reasoning` items carrying a thinking block of this model (`thinking.ts`) -> that block,
 *   in the assistant turn it preceded; others (an OpenAI account's encrypted reasoning,
 *   reasoning with no signature) are left out: Anthropic checks every block's signature;
 * - `additional_tools` items only declare tools.
 * Consecutive items of one role make one turn (Anthropic wants the roles to alternate).
 * @throws GatewayError 400 (`param` set) for what the Messages API cannot take: file ids,
 *   non-PDF files, images that are neither data nor http(s) URLs, audio, item references,
 *   item types it has no equivalent for.
 */
import { pushAll } from '../../util/push-all.js';
import { type AnthropicMessage, type Block, hasText, invalid, parseArguments, parseDataUrl, Turns } from '../chat-messages/messages.js';
import { isObj, type Obj } from '../read.js';
import type { ResponsesTools } from '../responses-tools.js';
import { openThinking } from './thinking.js';
import { asText } from '../../util/as-text.js';

const UPSTREAM = "this model's upstream (it speaks Anthropic Messages)";

function textBlock(text: unknown, param: string): Block[] {
  if (typeof text !== 'string') throw invalid('Text content parts need a string `text`.', param);
  return hasText(text) ? [{ type: 'text', text }] : [];
}

function imageBlock(part: Obj, param: string): Block {
  const url = part['image_url'];
  if (typeof url !== 'string')
    throw invalid(
      `An input_image is sent to ${UPSTREAM} by its 'image_url' (a data URL or an http(s) URL); file ids are not available there.`,
      `${param}.image_url`,
    );
  const data = parseDataUrl(url);
  if (data) return { type: 'image', source: { type: 'base64', media_type: data.mediaType, data: data.data } };
  if (/^https?:\/\//i.test(url)) return { type: 'image', source: { type: 'url', url } };
  throw invalid('Image URLs must be http(s) URLs or base64 data: URLs.', `${param}.image_url`);
}

function fileBlock(part: Obj, param: string): Block {
  const title = typeof part['filename'] === 'string' && part['filename'] !== '' ? { title: part['filename'] } : {};
  if (typeof part['file_url'] === 'string' && /^https?:\/\//i.test(part['file_url']))
    return { type: 'document', source: { type: 'url', url: part['file_url'] }, ...title };
  const raw = part['file_data'];
  const data =
    typeof raw === 'string'
      ? (parseDataUrl(raw) ?? (/\.pdf$/i.test(asText(part['filename'] ?? '')) ? { mediaType: 'application/pdf', data: raw } : null))
      : null;
  if (!data || data.mediaType !== 'application/pdf') {
    throw invalid(
      `Only PDF files can be sent to ${UPSTREAM}: inline as a base64 data: URL in 'file_data', or by an http(s) 'file_url'; file ids are not available there.`,
      param,
    );
  }
  return { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: data.data }, ...title };
}

/** Content parts (or a string) as Anthropic blocks; `media`: images and files allowed (user turns, tool results). */
function blocksOf(content: unknown, param: string, media: boolean): Block[] {
  if (typeof content === 'string') return textBlock(content, param);
  if (content === null || content === undefined) return [];
  if (!Array.isArray(content)) throw invalid('Content must be a string or an array of content parts.', param);
  const out: Block[] = [];
  content.forEach((p: unknown, i) => {
    const at = `${param}[${i}]`;
    if (!isObj(p)) throw invalid('Each content part must be an object.', at);
    const type = p['type'];
    if (type === 'input_text' || type === 'output_text' || type === 'text' || type === 'summary_text') out.push(...textBlock(p['text'], at));
    else if (type === 'refusal') out.push(...textBlock(p['refusal'], at));
    else if (media && type === 'input_image') out.push(imageBlock(p, at));
    else if (media && type === 'input_file') out.push(fileBlock(p, at));
    else throw invalid(`Content parts of type '${asText(type)}' cannot be sent to ${UPSTREAM} here: send text${media ? ', images or PDF files' : ''}.`, at);
  });
  return out;
}

/** A tool call's output as `tool_result.content`: a string, or blocks; undefined when empty. */
function resultContent(output: unknown, param: string): string | Block[] | undefined {
  if (typeof output === 'string') return hasText(output) ? output : undefined;
  if (output === undefined || output === null) return undefined;
  if (!Array.isArray(output)) return JSON.stringify(output);
  const blocks = blocksOf(output, param, true);
  return blocks.length > 0 ? blocks : undefined;
}

/** The Anthropic `system` blocks and `messages` of a Responses request. @param model the upstream model id (thinking blocks of another model are left out). */
export function toAnthropicInput(body: Readonly<Obj>, tools: ResponsesTools, model: string): { system: Block[]; messages: AnthropicMessage[] } {
  const system: Block[] = [];
  const messages = new Turns();
  if (typeof body['instructions'] === 'string') system.push(...textBlock(body['instructions'], 'instructions'));
  const input = body['input'];
  if (typeof input === 'string') {
    messages.append('user', textBlock(input, 'input'));
    return { system, messages: messages.done() };
  }
  if (!Array.isArray(input)) return { system, messages: messages.done() };
  input.forEach((item: unknown, i) => {
    const param = `input[${i}]`;
    if (!isObj(item)) throw invalid('Each input item must be an object.', param);
    const type = item['type'] ?? (item['role'] !== undefined ? 'message' : undefined);
    switch (type) {
      case 'message': {
        const role = item['role'];
        const at = `${param}.content`;
        if (role === 'system' || role === 'developer') pushAll(system, blocksOf(item['content'], at, false));
        else if (role === 'user') messages.append('user', blocksOf(item['content'], at, true));
        else if (role === 'assistant') messages.append('assistant', blocksOf(item['content'], at, false));
        else throw invalid(`Unknown message role '${asText(role)}'.`, `${param}.role`);
        return;
      }
      case 'function_call':
      case 'custom_tool_call': {
        if (typeof item['call_id'] !== 'string' || typeof item['name'] !== 'string') throw invalid('Tool calls need a call_id and a name.', param);
        const args = type === 'function_call' ? parseArguments(item['arguments']) : { input: typeof item['input'] === 'string' ? item['input'] : '' };
        messages.append('assistant', [{ type: 'tool_use', id: item['call_id'], name: tools.wireName(item['name'], item['namespace']), input: args }]);
        return;
      }
      case 'function_call_output':
      case 'custom_tool_call_output': {
        if (typeof item['call_id'] !== 'string') throw invalid('Tool call outputs need the call_id of their call.', `${param}.call_id`);
        const content = resultContent(item['output'], `${param}.output`);
        messages.append('user', [{ type: 'tool_result', tool_use_id: item['call_id'], ...(content !== undefined ? { content } : {}) }]);
        return;
      }
      case 'reasoning': {
        const block = openThinking(item['encrypted_content'], model);
        if (block) messages.append('assistant', [{ ...block }]);
        return;
      }
      case 'additional_tools':
        return;
      case 'item_reference':
        throw invalid(`Item references cannot be sent to ${UPSTREAM}: it keeps no items. Send the items themselves.`, param);
      default:
        throw invalid(
          `Input items of type '${asText(type)}' cannot be sent to ${UPSTREAM}: send messages, tool calls and their outputs, and reasoning items.`,
          param,
        );
    }
  });
  return { system, messages: messages.done() };
}
