/**
 * OpenAI chat `messages` -> Anthropic Messages `system` and `messages` (Anthropic API
 * reference, "Messages"; guides "Tool use", "Vision"):
 * - system and developer messages go to the top-level `system`;
 * - `messages` alternate `user` / `assistant`; tool results are `tool_result` blocks in a
 *   `user` message and must come first in it;
 * - images are `{type:'image', source:{type:'base64', media_type, data}}` or
 *   `{type:'image', source:{type:'url', url}}`; PDFs are `document` blocks likewise;
 * - text blocks may not be empty or whitespace only (Anthropic answers 400 "text content
 *   blocks must contain non-whitespace text"), so such text is dropped.
 */
import { GatewayError } from '../../errors/codes.js';
import { pushAll } from '../../util/push-all.js';
import { asText } from '../../util/as-text.js';

export type Obj = Record<string, unknown>;
export type Block = Record<string, unknown>;

export interface AnthropicMessage {
  role: 'user' | 'assistant';
  content: Block[];
}

export function isObj(v: unknown): v is Obj {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

export function invalid(message: string, param: string): GatewayError {
  return new GatewayError('GW_ERR_INVALID_REQUEST', { message, param });
}

/** Copies a client `cache_control` marker (Anthropic prompt caching) onto a block. */
function withCache(block: Block, part: Obj): Block {
  if (isObj(part['cache_control'])) block['cache_control'] = part['cache_control'];
  return block;
}

const DATA_URL = /^data:([^;,]+)((?:;[^;,]*)*);base64,(.*)$/s;

/** `data:<type>;base64,<data>` -> its parts, or null. */
/**
 * Media types browsers and SDKs write that Anthropic does not take, and the name it does:
 * `image/jpg` is common in data URLs but is not a registered type (IANA registers
 * `image/jpeg`), and Anthropic accepts only `image/jpeg`, `image/png`, `image/gif`, `image/webp`.
 */
const MEDIA_ALIASES: Readonly<Record<string, string>> = { 'image/jpg': 'image/jpeg', 'image/pjpeg': 'image/jpeg' };

export function parseDataUrl(url: string): { mediaType: string; data: string } | null {
  const m = DATA_URL.exec(url);
  if (!m) return null;
  const type = m[1]!.toLowerCase();
  return { mediaType: MEDIA_ALIASES[type] ?? type, data: m[3]! };
}

/** Text Anthropic accepts in a text block: not empty, not whitespace only. */
export function hasText(text: string): boolean {
  return text.trim() !== '';
}

function imageBlock(part: Obj, param: string): Block {
  const img = part['image_url'];
  const url = typeof img === 'string' ? img : isObj(img) && typeof img['url'] === 'string' ? img['url'] : undefined;
  if (url === undefined) throw invalid('image_url parts need an image_url.url.', param);
  const data = parseDataUrl(url);
  if (data) return withCache({ type: 'image', source: { type: 'base64', media_type: data.mediaType, data: data.data } }, part);
  if (/^https?:\/\//i.test(url)) return withCache({ type: 'image', source: { type: 'url', url } }, part);
  throw invalid('Image URLs must be http(s) URLs or base64 data: URLs.', param);
}

function fileBlock(part: Obj, param: string): Block {
  const file = isObj(part['file']) ? part['file'] : {};
  const fileData = file['file_data'];
  const data = typeof fileData === 'string' ? parseDataUrl(fileData) : null;
  if (!data || data.mediaType !== 'application/pdf') {
    throw invalid('Only PDF files sent inline as base64 data: URLs (file.file_data) can be passed to this model.', param);
  }
  const block: Block = { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: data.data } };
  if (typeof file['filename'] === 'string' && file['filename'] !== '') block['title'] = file['filename'];
  return withCache(block, part);
}

/**
 * Converts OpenAI message content (string or parts) to Anthropic blocks. Empty text is
 * dropped (Anthropic rejects empty text blocks).
 * @param allowMedia whether image/file parts are allowed (user messages only).
 */
function contentBlocks(content: unknown, param: string, allowMedia: boolean): Block[] {
  if (content === null || content === undefined) return [];
  if (typeof content === 'string') return hasText(content) ? [{ type: 'text', text: content }] : [];
  if (!Array.isArray(content)) throw invalid('Message content must be a string or an array of content parts.', param);
  const out: Block[] = [];
  content.forEach((part: unknown, i) => {
    const p = `${param}[${i}]`;
    if (!isObj(part)) throw invalid('Content parts must be objects.', p);
    switch (part['type']) {
      case 'text':
      case 'refusal': {
        const text = part['type'] === 'text' ? part['text'] : part['refusal'];
        if (typeof text !== 'string') throw invalid(`${asText(part['type'])} parts need a string.`, p);
        if (hasText(text)) out.push(withCache({ type: 'text', text }, part));
        break;
      }
      case 'image_url':
        if (!allowMedia) throw invalid('Only user messages may contain images.', p);
        out.push(imageBlock(part, p));
        break;
      case 'file':
        if (!allowMedia) throw invalid('Only user messages may contain files.', p);
        out.push(fileBlock(part, p));
        break;
      case 'input_audio':
        throw invalid('Audio input is not supported by this model.', p);
      default:
        throw invalid(`Unsupported content part type '${asText(part['type'])}'.`, p);
    }
  });
  return out;
}

/** OpenAI tool message content -> `tool_result.content` (string, or text blocks). */
function toolResultContent(content: unknown, param: string): string | Block[] | undefined {
  if (typeof content === 'string') return hasText(content) ? content : undefined;
  const blocks = contentBlocks(content, param, false);
  return blocks.length > 0 ? blocks : undefined;
}

/** A tool call's arguments (a JSON text, or already an object) as Anthropic's `tool_use.input`: an object, `{}` when unreadable. */
export function parseArguments(args: unknown): Obj {
  if (isObj(args)) return args;
  if (typeof args !== 'string' || args.trim() === '') return {};
  try {
    const v: unknown = JSON.parse(args);
    return isObj(v) ? v : {};
  } catch {
    return {};
  }
}

function toolUseBlocks(toolCalls: unknown, param: string): Block[] {
  if (toolCalls === undefined || toolCalls === null) return [];
  if (!Array.isArray(toolCalls)) throw invalid('tool_calls must be an array.', param);
  return toolCalls.map((tc: unknown, i) => {
    const p = `${param}[${i}]`;
    if (!isObj(tc) || (tc['type'] !== undefined && tc['type'] !== 'function') || !isObj(tc['function'])) {
      throw invalid('Only function tool calls are supported.', p);
    }
    const fn = tc['function'];
    if (typeof tc['id'] !== 'string' || typeof fn['name'] !== 'string') throw invalid('Tool calls need an id and a function name.', p);
    return { type: 'tool_use', id: tc['id'], name: fn['name'], input: parseArguments(fn['arguments']) };
  });
}

/**
 * Anthropic `messages` built turn by turn: blocks of the role of the turn before merge into
 * it (Anthropic needs alternating roles), empty block lists are skipped, and in a user turn
 * the tool_result blocks lead (Anthropic's rule), the other blocks following in their
 * order. Linear in the blocks appended: a turn's other blocks wait apart until the turn
 * closes, so a run of thousands of tool results never rescans or reorders the turn.
 */
export class Turns {
  private readonly list: AnthropicMessage[] = [];
  /** The open (last) turn's blocks that follow its tool results. */
  private rest: Block[] = [];

  /** Adds `blocks` of `role`: to the last turn when it has that role, else as a new turn. */
  append(role: 'user' | 'assistant', blocks: readonly Block[]): void {
    if (blocks.length === 0) return;
    let last = this.list[this.list.length - 1];
    if (!last || last.role !== role) {
      this.close();
      last = { role, content: [] };
      this.list.push(last);
    }
    for (const b of blocks) (role === 'user' && b['type'] === 'tool_result' ? last.content : this.rest).push(b);
  }

  /** The turns, each in its final order. No appends after this. */
  done(): AnthropicMessage[] {
    this.close();
    return this.list;
  }

  private close(): void {
    const last = this.list[this.list.length - 1];
    if (last) for (const b of this.rest) last.content.push(b);
    this.rest = [];
  }
}

function systemText(content: unknown, param: string): Block[] {
  return contentBlocks(content, param, false);
}

export function convertMessages(messages: unknown): { system: Block[]; messages: AnthropicMessage[] } {
  if (!Array.isArray(messages) || messages.length === 0) throw invalid('messages must be a non-empty array.', 'messages');
  const system: Block[] = [];
  const out = new Turns();
  messages.forEach((m: unknown, i) => {
    const param = `messages[${i}]`;
    if (!isObj(m)) throw invalid('Each message must be an object.', param);
    switch (m['role']) {
      case 'system':
      case 'developer':
        pushAll(system, systemText(m['content'], `${param}.content`));
        break;
      case 'user':
        out.append('user', contentBlocks(m['content'], `${param}.content`, true));
        break;
      case 'assistant': {
        const blocks = [...contentBlocks(m['content'], `${param}.content`, false), ...toolUseBlocks(m['tool_calls'], `${param}.tool_calls`)];
        if (blocks.length === 0 && m['function_call'] !== undefined) throw invalid('Legacy function_call messages are not supported; use tool_calls.', param);
        out.append('assistant', blocks);
        break;
      }
      case 'tool': {
        if (typeof m['tool_call_id'] !== 'string') throw invalid('Tool messages need a tool_call_id.', `${param}.tool_call_id`);
        const block: Block = { type: 'tool_result', tool_use_id: m['tool_call_id'] };
        const content = toolResultContent(m['content'], `${param}.content`);
        if (content !== undefined) block['content'] = content;
        out.append('user', [block]);
        break;
      }
      default:
        throw invalid(`Unsupported message role '${asText(m['role'])}'.`, `${param}.role`);
    }
  });
  return { system, messages: out.done() };
}
