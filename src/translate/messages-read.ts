/**
 * Reading an Anthropic Messages request (Anthropic API reference, "Messages") for a bridge
 * to another wire API (`messages-chat`, `messages-responses`): the turns with their roles,
 * text, images, client tools and tool choice, read the same way for every wire. Each bridge
 * writes what it reads in its own wire's shape.
 *
 * - Turns: `user`, `assistant`, and `system` anywhere in `messages` (Claude Code 2.1.332
 *   sends mid-conversation system turns there: the capture in the issue 29 brief); any
 *   other role is refused.
 * - Tools: client tools (`input_schema`, `type` absent or `custom`; `defer_loading` is
 *   Anthropic's loading hint and changes nothing elsewhere: the tool is offered). Anthropic's
 *   server tools (web search, code execution…, a `type` with a version date) run on
 *   Anthropic's side only and are left out; Anthropic-defined client tools (`bash_*`,
 *   `text_editor_*`, `computer_*`) and a tool without `input_schema` are refused.
 */
import { GatewayError } from '../errors/codes.js';
import { isObj, type Obj } from './read.js';
import { asText } from '../util/as-text.js';

/** A 400 for the client, naming the field to change. */
export function invalid(message: string, param: string): GatewayError {
  return new GatewayError('GW_ERR_INVALID_REQUEST', { message, param });
}

/** The text of a string or of text blocks (`system`, a tool result's content). */
export function joinText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content.map((b) => (isObj(b) && b['type'] === 'text' && typeof b['text'] === 'string' ? b['text'] : '')).join('');
}

/** One turn of `messages`, its role checked. */
export interface Turn {
  readonly role: 'user' | 'assistant' | 'system';
  readonly content: unknown;
  /** Where its content sits in the client's body, for errors (`messages[3].content`). */
  readonly param: string;
}

/**
 * The turns of a Messages body, in order.
 * @throws GatewayError 400 for a turn that is not an object or has another role.
 */
export function turnsOf(body: Readonly<Obj>): Turn[] {
  const turns = Array.isArray(body['messages']) ? body['messages'] : [];
  return turns.map((m, i) => {
    if (!isObj(m)) throw invalid('Each message must be an object.', `messages[${i}]`);
    const role = m['role'];
    if (role !== 'user' && role !== 'assistant' && role !== 'system')
      throw invalid(`Unknown message role '${asText(role)}': messages take 'user', 'assistant' or 'system'.`, `messages[${i}].role`);
    return { role, content: m['content'], param: `messages[${i}].content` };
  });
}

/**
 * The URL of an image block's source: a data URL for base64 data, or its URL.
 * @param wire the wire API's name for the error ("chat completions").
 * @throws GatewayError 400 for a file id (only Anthropic keeps files).
 */
export function imageUrl(block: Obj, param: string, wire: string): string {
  const src = isObj(block['source']) ? block['source'] : {};
  if (src['type'] === 'base64' && typeof src['data'] === 'string') return `data:${asText(src['media_type'] ?? 'image/png')};base64,${src['data']}`;
  if (src['type'] === 'url' && typeof src['url'] === 'string') return src['url'];
  throw invalid(
    `An image is sent to an upstream that speaks ${wire} as base64 data or a URL ('source.type' base64 or url); file ids are not available there.`,
    `${param}.source`,
  );
}

/** A client tool, as every function-calling wire API takes it. */
export interface ClientTool {
  readonly name: string;
  readonly description?: string;
  /** The tool's JSON schema (`input_schema`). */
  readonly parameters: Obj;
}

/** Anthropic-defined tools the client runs (their schemas are Anthropic's): another wire cannot be offered them as they are. */
const CLIENT_DEFINED = /^(bash|text_editor|computer)_\d+$/;

/**
 * The client tools of `tools` (see the file comment).
 * @throws GatewayError 400 for an Anthropic-defined client tool, or a tool without a schema.
 */
export function clientTools(tools: unknown, wire: string): ClientTool[] {
  const out: ClientTool[] = [];
  (Array.isArray(tools) ? tools : []).forEach((t, i) => {
    if (!isObj(t)) throw invalid('Each tool must be an object.', `tools[${i}]`);
    if (typeof t['type'] === 'string' && CLIENT_DEFINED.test(t['type'])) {
      throw invalid(
        `Tools of type '${t['type']}' are defined by Anthropic and need an Anthropic account; this model's upstream speaks ${wire}: declare the tool with a name, description and input_schema instead.`,
        `tools[${i}]`,
      );
    }
    if (t['type'] !== undefined && t['type'] !== 'custom') return;
    if (!isObj(t['input_schema'])) throw invalid('A tool needs an input_schema (a JSON schema object).', `tools[${i}].input_schema`);
    out.push({
      name: asText(t['name'] ?? ''),
      ...(typeof t['description'] === 'string' ? { description: t['description'] } : {}),
      parameters: t['input_schema'],
    });
  });
  return out;
}

/** `tool_choice` read: a mode, or the one tool to call; null when unset or unknown. */
export type ToolChoice = { readonly mode: 'auto' | 'required' | 'none' } | { readonly name: string };

/** `tool_choice` `auto` / `any` / `none` / `tool` as a mode or a tool name. */
export function toolChoiceOf(choice: unknown): ToolChoice | null {
  if (!isObj(choice)) return null;
  switch (choice['type']) {
    case 'auto':
      return { mode: 'auto' };
    case 'any':
      return { mode: 'required' };
    case 'none':
      return { mode: 'none' };
    case 'tool':
      return typeof choice['name'] === 'string' ? { name: choice['name'] } : null;
    default:
      return null;
  }
}

/** Whether `tool_choice.disable_parallel_tool_use` is set. */
export function noParallelTools(body: Readonly<Obj>): boolean {
  return isObj(body['tool_choice']) && body['tool_choice']['disable_parallel_tool_use'] === true;
}
