/**
 * Prompt-cache breakpoints for an Anthropic Messages wire request that carries none (a chat
 * completions client, Codex through the Responses bridge, a Messages client that set none).
 * Anthropic caches a prompt's prefix only up to a block marked `cache_control` (Anthropic
 * docs, "Prompt caching"): without markers every turn of an agent pays for its whole prompt.
 *
 * Up to three `{type: "ephemeral"}` markers are added, on:
 * - the last tool the prompt holds (tools come first in the cached prefix; a tool with
 *   `defer_loading: true` is not in the prefix, Anthropic docs "Tool use with prompt caching");
 * - the last non-empty text block of `system`;
 * - the last markable block of the last stable turn: the message before the final user turn
 *   (or the one before it, when that holds only thinking), so the next turn, which repeats
 *   it, reads the conversation so far from the cache.
 * Anthropic takes at most MAX_BREAKPOINTS per request. Thinking blocks and empty text
 * blocks cannot be marked (Anthropic refuses the request), nor can blocks this file does not
 * know. A string `system` or message content becomes one text block holding the same text:
 * the model sees the same prompt. A prefix shorter than the model's minimum (1024 to 4096
 * tokens, by model) is simply not cached; Anthropic answers normally.
 *
 * A request that carries `cache_control` anywhere (top level, system, tools, a message
 * block) is left as it is: the client chose its own breakpoints.
 */
import { isObj, type Obj } from './read.js';

/** Anthropic's limit of cache breakpoints in one request (a fifth is a 400; Anthropic docs, "Prompt caching"). */
export const MAX_BREAKPOINTS = 4;

/** The marker added. */
const EPHEMERAL: Readonly<Obj> = Object.freeze({ type: 'ephemeral' });

/**
 * Message content block types that take `cache_control` (@anthropic-ai/sdk 1.14.0,
 * `ContentBlockParam`: every member but `thinking` and `redacted_thinking`).
 */
const MARKABLE = new Set([
  'text',
  'image',
  'document',
  'search_result',
  'tool_use',
  'tool_result',
  'server_tool_use',
  'web_search_tool_result',
  'web_fetch_tool_result',
  'code_execution_tool_result',
  'bash_code_execution_tool_result',
  'text_editor_code_execution_tool_result',
  'tool_search_tool_result',
  'container_upload',
]);

/** Whether a content block can carry a breakpoint (a known type; a text block with text). */
function markable(block: unknown): block is Obj {
  if (!isObj(block) || !MARKABLE.has(block['type'] as string)) return false;
  return block['type'] !== 'text' || (typeof block['text'] === 'string' && block['text'] !== '');
}

/** Whether a list of blocks (system, tools, message content, a tool result's content) holds a marker. */
function listMarked(list: unknown): boolean {
  if (!Array.isArray(list)) return false;
  return list.some((b) => isObj(b) && (b['cache_control'] !== undefined || listMarked(b['content'])));
}

/** Whether the body carries `cache_control` at the top level or on any block. */
export function hasCacheControl(body: Readonly<Obj>): boolean {
  if (body['cache_control'] !== undefined || listMarked(body['system']) || listMarked(body['tools'])) return true;
  const messages = body['messages'];
  return Array.isArray(messages) && messages.some((m) => isObj(m) && listMarked(m['content']));
}

/** `content` (a string or blocks) with its last markable block marked; null when none can be. */
function markLast(content: unknown): Obj[] | null {
  const blocks = typeof content === 'string' ? [{ type: 'text', text: content }] : content;
  if (!Array.isArray(blocks)) return null;
  for (let i = blocks.length - 1; i >= 0; i--) {
    const b: unknown = blocks[i];
    if (markable(b)) return [...(blocks.slice(0, i) as Obj[]), { ...b, cache_control: { ...EPHEMERAL } }, ...(blocks.slice(i + 1) as Obj[])];
  }
  return null;
}

/** `tools` with its last tool in the prompt marked; null when none is. */
function markTools(tools: unknown): Obj[] | null {
  if (!Array.isArray(tools)) return null;
  for (let i = tools.length - 1; i >= 0; i--) {
    const t: unknown = tools[i];
    if (isObj(t) && t['defer_loading'] !== true)
      return [...(tools.slice(0, i) as Obj[]), { ...t, cache_control: { ...EPHEMERAL } }, ...(tools.slice(i + 1) as Obj[])];
  }
  return null;
}

/** `messages` with the last stable turn (before the final user turn) marked; null when there is none. */
function markStableTurn(messages: unknown): Obj[] | null {
  if (!Array.isArray(messages)) return null;
  let finalUser = -1;
  for (let i = messages.length - 1; i >= 0 && finalUser < 0; i--) if (isObj(messages[i]) && (messages[i] as Obj)['role'] === 'user') finalUser = i;
  for (let i = finalUser - 1; i >= 0; i--) {
    const m: unknown = messages[i];
    const content = isObj(m) ? markLast(m['content']) : null;
    if (content) return messages.map((x, j) => (j === i ? { ...(x as Obj), content } : x) as Obj);
  }
  return null;
}

/**
 * `body` with breakpoints added (see the module comment); `body` itself when it carries
 * `cache_control` already or nothing can be marked. The body is not modified: changed parts
 * are copies. At most 3 markers, below MAX_BREAKPOINTS.
 */
export function withCacheBreakpoints(body: Readonly<Obj>): Obj {
  if (hasCacheControl(body)) return body as Obj;
  const out: Obj = { ...body };
  const tools = markTools(body['tools']);
  if (tools) out['tools'] = tools;
  const system = markLast(body['system']);
  if (system) out['system'] = system;
  const messages = markStableTurn(body['messages']);
  if (messages) out['messages'] = messages;
  return out;
}
