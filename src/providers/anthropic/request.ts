/**
 * OpenAI Chat Completions request -> Anthropic Messages request.
 *
 * Anthropic facts used (API reference, "Messages"; guides "Tool use", "Vision",
 * "Extended thinking"):
 * - system prompts go in the top-level `system` (string or text blocks), not in `messages`;
 * - `messages` alternate `user` / `assistant`; tool results are `tool_result` blocks in a
 *   `user` message and must come first in it;
 * - images are `{type:'image', source:{type:'base64', media_type, data}}` or
 *   `{type:'image', source:{type:'url', url}}`; PDFs are `document` blocks likewise;
 * - `max_tokens` is required; `temperature` is 0..1 (OpenAI: 0..2);
 * - `thinking: {type:'enabled', budget_tokens}` needs budget >= 1024 and < max_tokens, and
 *   is incompatible with modified `temperature` / `top_p`;
 * - `tool_choice` is `{type:'auto'|'any'|'none'}` or `{type:'tool', name}`, with
 *   `disable_parallel_tool_use` on all but `none`.
 */
import { GatewayError } from '../../errors/codes.js';
import { MIN_THINKING_BUDGET, type AnthropicOptions } from './options.js';

type Obj = Record<string, unknown>;
type Block = Record<string, unknown>;

interface AnthropicMessage {
  role: 'user' | 'assistant';
  content: Block[];
}

function isObj(v: unknown): v is Obj {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function invalid(message: string, param: string): GatewayError {
  return new GatewayError('GW_ERR_INVALID_REQUEST', { message, param });
}

/** Copies a client `cache_control` marker (Anthropic prompt caching) onto a block. */
function withCache(block: Block, part: Obj): Block {
  if (isObj(part['cache_control'])) block['cache_control'] = part['cache_control'];
  return block;
}

const DATA_URL = /^data:([^;,]+)((?:;[^;,]*)*);base64,(.*)$/s;

/** `data:<type>;base64,<data>` -> its parts, or null. */
function parseDataUrl(url: string): { mediaType: string; data: string } | null {
  const m = DATA_URL.exec(url);
  return m ? { mediaType: m[1]!.toLowerCase(), data: m[3]! } : null;
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
  if (typeof content === 'string') return content === '' ? [] : [{ type: 'text', text: content }];
  if (!Array.isArray(content)) throw invalid('Message content must be a string or an array of content parts.', param);
  const out: Block[] = [];
  content.forEach((part: unknown, i) => {
    const p = `${param}[${i}]`;
    if (!isObj(part)) throw invalid('Content parts must be objects.', p);
    switch (part['type']) {
      case 'text':
      case 'refusal': {
        const text = part['type'] === 'text' ? part['text'] : part['refusal'];
        if (typeof text !== 'string') throw invalid(`${String(part['type'])} parts need a string.`, p);
        if (text !== '') out.push(withCache({ type: 'text', text }, part));
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
        throw invalid(`Unsupported content part type '${String(part['type'])}'.`, p);
    }
  });
  return out;
}

/** OpenAI tool message content -> `tool_result.content` (string, or text blocks). */
function toolResultContent(content: unknown, param: string): string | Block[] | undefined {
  if (typeof content === 'string') return content === '' ? undefined : content;
  const blocks = contentBlocks(content, param, false);
  return blocks.length > 0 ? blocks : undefined;
}

function parseArguments(args: unknown): unknown {
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
 * Appends a message, merging it into the previous one when the role repeats (Anthropic
 * needs alternating roles). Messages left with no blocks are skipped.
 */
function append(out: AnthropicMessage[], role: 'user' | 'assistant', blocks: Block[]): void {
  if (blocks.length === 0) return;
  const last = out[out.length - 1];
  if (last && last.role === role) {
    // tool_result blocks must lead a user message: keep them ahead of any text merged in.
    if (role === 'user' && blocks.some((b) => b['type'] === 'tool_result') && last.content.some((b) => b['type'] !== 'tool_result')) {
      const results = blocks.filter((b) => b['type'] === 'tool_result');
      const rest = blocks.filter((b) => b['type'] !== 'tool_result');
      const lastResults = last.content.filter((b) => b['type'] === 'tool_result');
      const lastRest = last.content.filter((b) => b['type'] !== 'tool_result');
      last.content = [...lastResults, ...results, ...lastRest, ...rest];
    } else {
      last.content.push(...blocks);
    }
  } else {
    out.push({ role, content: blocks });
  }
}

function systemText(content: unknown, param: string): Block[] {
  return contentBlocks(content, param, false);
}

function convertMessages(messages: unknown): { system: Block[]; messages: AnthropicMessage[] } {
  if (!Array.isArray(messages) || messages.length === 0) throw invalid('messages must be a non-empty array.', 'messages');
  const system: Block[] = [];
  const out: AnthropicMessage[] = [];
  messages.forEach((m: unknown, i) => {
    const param = `messages[${i}]`;
    if (!isObj(m)) throw invalid('Each message must be an object.', param);
    switch (m['role']) {
      case 'system':
      case 'developer':
        system.push(...systemText(m['content'], `${param}.content`));
        break;
      case 'user':
        append(out, 'user', contentBlocks(m['content'], `${param}.content`, true));
        break;
      case 'assistant': {
        const blocks = [...contentBlocks(m['content'], `${param}.content`, false), ...toolUseBlocks(m['tool_calls'], `${param}.tool_calls`)];
        if (blocks.length === 0 && m['function_call'] !== undefined) throw invalid('Legacy function_call messages are not supported; use tool_calls.', param);
        append(out, 'assistant', blocks);
        break;
      }
      case 'tool': {
        if (typeof m['tool_call_id'] !== 'string') throw invalid('Tool messages need a tool_call_id.', `${param}.tool_call_id`);
        const block: Block = { type: 'tool_result', tool_use_id: m['tool_call_id'] };
        const content = toolResultContent(m['content'], `${param}.content`);
        if (content !== undefined) block['content'] = content;
        append(out, 'user', [block]);
        break;
      }
      default:
        throw invalid(`Unsupported message role '${String(m['role'])}'.`, `${param}.role`);
    }
  });
  return { system, messages: out };
}

function convertTools(tools: unknown): Block[] {
  if (!Array.isArray(tools)) throw invalid('tools must be an array.', 'tools');
  return tools.map((t: unknown, i) => {
    const param = `tools[${i}]`;
    if (!isObj(t) || t['type'] !== 'function' || !isObj(t['function'])) throw invalid('Only function tools are supported by this model.', param);
    const fn = t['function'];
    if (typeof fn['name'] !== 'string' || fn['name'] === '') throw invalid('Function tools need a name.', `${param}.function.name`);
    const tool: Block = {
      name: fn['name'],
      input_schema: isObj(fn['parameters']) ? fn['parameters'] : { type: 'object', properties: {} },
    };
    if (typeof fn['description'] === 'string' && fn['description'] !== '') tool['description'] = fn['description'];
    return tool;
  });
}

function convertToolChoice(choice: unknown): Block | undefined {
  if (choice === undefined || choice === null) return undefined;
  if (choice === 'auto') return { type: 'auto' };
  if (choice === 'required') return { type: 'any' };
  if (choice === 'none') return { type: 'none' };
  if (isObj(choice) && choice['type'] === 'function' && isObj(choice['function']) && typeof choice['function']['name'] === 'string') {
    return { type: 'tool', name: choice['function']['name'] };
  }
  throw invalid('Unsupported tool_choice.', 'tool_choice');
}

function positiveInt(v: unknown, param: string): number | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 1) throw invalid(`${param} must be a positive integer.`, param);
  return v;
}

function finite(v: unknown, param: string): number | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'number' || !Number.isFinite(v)) throw invalid(`${param} must be a number.`, param);
  return v;
}

function thinkingBudget(effort: unknown, opts: AnthropicOptions): number | undefined {
  if (effort === undefined || effort === null || effort === 'none') return undefined;
  if (typeof effort === 'string' && Object.hasOwn(opts.thinking_budgets, effort)) {
    return opts.thinking_budgets[effort as keyof AnthropicOptions['thinking_budgets']];
  }
  throw invalid(`Unsupported reasoning_effort '${String(effort)}'.`, 'reasoning_effort');
}

/** `tool_choice` that forces a tool (`required` or a named function). */
function forcesTool(choice: unknown): boolean {
  return choice === 'required' || (isObj(choice) && choice['type'] === 'function');
}

/** Whether the conversation's last assistant turn called tools (the agent tool loop). */
function lastAssistantUsedTools(messages: unknown): boolean {
  if (!Array.isArray(messages)) return false;
  for (let i = messages.length - 1; i >= 0; i--) {
    const m: unknown = messages[i];
    if (isObj(m) && m['role'] === 'assistant') return Array.isArray(m['tool_calls']) && m['tool_calls'].length > 0;
  }
  return false;
}

/**
 * Translates an OpenAI chat body into an Anthropic Messages body.
 * @param body the OpenAI Chat Completions request (not mutated).
 * @param opts the upstream's resolved options (default max_tokens, thinking budgets).
 * @returns the Messages request body (`model`, `messages`, `max_tokens`, and the optional
 *   `system`, `tools`, `tool_choice`, `stop_sequences`, `temperature`, `top_p`, `thinking`,
 *   `metadata`, `output_config`, `stream`). OpenAI fields with no Anthropic meaning that
 *   do not change the answer's shape (`seed`, `logprobs`, penalties, `stream_options` …)
 *   are dropped.
 * @throws GatewayError `GW_ERR_INVALID_REQUEST` (with `param`) for what Anthropic cannot
 *   express: `n` > 1, audio in or out, non-function tools, unknown roles or part types,
 *   image URLs that are neither http(s) nor base64 data: URLs.
 */
export function toAnthropicRequest(body: Readonly<Record<string, unknown>>, opts: AnthropicOptions): Record<string, unknown> {
  const n = body['n'];
  if (n !== undefined && n !== null && n !== 1) throw invalid('This model returns one choice per request; n must be 1.', 'n');
  const modalities = body['modalities'];
  if ((Array.isArray(modalities) && modalities.includes('audio')) || (body['audio'] !== undefined && body['audio'] !== null)) {
    throw invalid('Audio output is not supported by this model.', Array.isArray(modalities) && modalities.includes('audio') ? 'modalities' : 'audio');
  }

  const { system, messages } = convertMessages(body['messages']);
  const out: Record<string, unknown> = { model: body['model'] };
  if (system.length > 0) {
    const plain = system.every((b) => Object.keys(b).length === 2);
    out['system'] = plain && system.length === 1 ? system[0]!['text'] : system;
  }
  out['messages'] = messages;

  const requested = positiveInt(body['max_completion_tokens'], 'max_completion_tokens') ?? positiveInt(body['max_tokens'], 'max_tokens');
  let maxTokens = requested ?? opts.default_max_tokens;

  let budget = thinkingBudget(body['reasoning_effort'], opts);
  if (budget !== undefined && requested !== undefined) {
    // The client's cap stands: the thinking budget must fit under it (Anthropic wants
    // budget_tokens < max_tokens), and below the minimum budget there is no thinking.
    budget = Math.min(budget, requested - 1);
    if (budget < MIN_THINKING_BUDGET) budget = undefined;
  }
  // Thinking cannot be combined with a forced tool choice, and a tool-use turn sent back
  // without its thinking blocks (OpenAI clients cannot keep their signatures) is refused
  // when thinking is on (Anthropic docs, "Extended thinking": "Thinking with tool use").
  if (budget !== undefined && (forcesTool(body['tool_choice']) || lastAssistantUsedTools(body['messages']))) budget = undefined;
  if (budget !== undefined) {
    if (requested === undefined) maxTokens = budget + opts.default_max_tokens;
    out['thinking'] = { type: 'enabled', budget_tokens: budget };
  } else {
    const temperature = finite(body['temperature'], 'temperature');
    if (temperature !== undefined) out['temperature'] = Math.min(Math.max(temperature, 0), 1);
    const topP = finite(body['top_p'], 'top_p');
    if (topP !== undefined) out['top_p'] = topP;
  }
  out['max_tokens'] = maxTokens;

  const stop = body['stop'];
  if (typeof stop === 'string') out['stop_sequences'] = [stop];
  else if (Array.isArray(stop) && stop.length > 0) {
    if (!stop.every((s) => typeof s === 'string')) throw invalid('stop must be a string or an array of strings.', 'stop');
    out['stop_sequences'] = stop;
  }

  const tools = body['tools'];
  if (tools !== undefined && tools !== null && (!Array.isArray(tools) || tools.length > 0)) {
    out['tools'] = convertTools(tools);
    let choice = convertToolChoice(body['tool_choice']);
    if (body['parallel_tool_calls'] === false && choice?.['type'] !== 'none') {
      choice = { ...(choice ?? { type: 'auto' }), disable_parallel_tool_use: true };
    }
    if (choice) out['tool_choice'] = choice;
  }

  const user = typeof body['user'] === 'string' && body['user'] !== '' ? body['user'] : body['safety_identifier'];
  if (typeof user === 'string' && user !== '') out['metadata'] = { user_id: user };

  const format = body['response_format'];
  if (isObj(format) && format['type'] === 'json_schema' && isObj(format['json_schema']) && isObj(format['json_schema']['schema'])) {
    out['output_config'] = { format: { type: 'json_schema', schema: format['json_schema']['schema'] } };
  }

  if (body['stream'] === true) out['stream'] = true;
  return out;
}
