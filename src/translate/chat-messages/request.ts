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
import { fitThinking, thinkingBudgetOf } from '../../apis/effort.js';
import { convertMessages, invalid, isObj, type Block } from './messages.js';
import type { MessagesTranslationOptions as AnthropicOptions } from './options.js';

/**
 * `stop` -> `stop_sequences`. Whitespace-only sequences are dropped: Anthropic refuses them
 * (400 "stop_sequences: each stop sequence must contain non-whitespace"), and a model stops
 * on whitespace constantly, so no client means one.
 */
export function stopSequences(stop: unknown): string[] {
  if (stop === undefined || stop === null) return [];
  const list = typeof stop === 'string' ? [stop] : stop;
  if (!Array.isArray(list) || !list.every((s) => typeof s === 'string')) throw invalid('stop must be a string or an array of strings.', 'stop');
  return list.filter((s: string) => s.trim() !== '');
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

export function positiveInt(v: unknown, param: string): number | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 1) throw invalid(`${param} must be a positive integer.`, param);
  return v;
}

export function finite(v: unknown, param: string): number | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'number' || !Number.isFinite(v)) throw invalid(`${param} must be a number.`, param);
  return v;
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

/** What decides a Messages request's output cap, thinking and sampling (validated client values). */
export interface OutputControls {
  /** The client's output cap, tokens (undefined: none given). */
  readonly requested: number | undefined;
  /** The client's reasoning effort (`none`, `minimal` … `xhigh`, or unset), and the field it came in. */
  readonly effort: unknown;
  /** False when thinking must stay off for this request (a forced tool, a tool turn without its signed thinking). */
  readonly thinkingAllowed: boolean;
  readonly temperature: number | undefined;
  readonly topP: number | undefined;
}

/**
 * Writes `max_tokens` and either `thinking` or the sampling fields onto a Messages body.
 * The budget is the effort's in `opts.thinking_budgets` (the effort table, apis/effort.ts:
 * the deeper levels get `xhigh`'s; `none`, no effort, or a level the gateway does not know
 * send no thinking). The client's cap stands as far as Anthropic allows: the budget is cut to
 * fit under it, then `fitThinking` raises a budget below Anthropic's 1,024-token minimum to
 * it and `max_tokens` above the budget (so a cap under 1,025 is raised to 1,025). With no cap,
 * `max_tokens` is `default_max_tokens`, plus the budget when thinking. Thinking takes no
 * modified `temperature` / `top_p`; otherwise `temperature` is clamped to 0..1.
 */
export function writeOutputControls(out: Record<string, unknown>, c: OutputControls, opts: AnthropicOptions): void {
  const budget = c.thinkingAllowed ? thinkingBudgetOf(c.effort, opts.thinking_budgets) : undefined;
  if (budget !== undefined) {
    const fit = c.requested === undefined ? fitThinking(budget, budget + opts.default_max_tokens) : fitThinking(Math.min(budget, c.requested - 1), c.requested);
    out['thinking'] = { type: 'enabled', budget_tokens: fit.budget };
    out['max_tokens'] = fit.maxTokens;
    return;
  }
  if (c.temperature !== undefined) out['temperature'] = Math.min(Math.max(c.temperature, 0), 1);
  if (c.topP !== undefined) out['top_p'] = c.topP;
  out['max_tokens'] = c.requested ?? opts.default_max_tokens;
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

  writeOutputControls(
    out,
    {
      requested: positiveInt(body['max_completion_tokens'], 'max_completion_tokens') ?? positiveInt(body['max_tokens'], 'max_tokens'),
      effort: body['reasoning_effort'],
      // Thinking cannot be combined with a forced tool choice, and a tool-use turn sent back
      // without its thinking blocks (OpenAI clients cannot keep their signatures) is refused
      // when thinking is on (Anthropic docs, "Extended thinking": "Thinking with tool use").
      thinkingAllowed: !forcesTool(body['tool_choice']) && !lastAssistantUsedTools(body['messages']),
      temperature: finite(body['temperature'], 'temperature'),
      topP: finite(body['top_p'], 'top_p'),
    },
    opts,
  );

  const stop = stopSequences(body['stop']);
  if (stop.length > 0) out['stop_sequences'] = stop;

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
