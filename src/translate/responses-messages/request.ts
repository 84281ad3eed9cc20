/**
 * A Responses API request (OpenAI API reference, "Create a model response") as an Anthropic
 * Messages request (Anthropic API reference, "Messages"; guides "Tool use", "Extended
 * thinking"). The conversation is mapped by `input.ts`; here the rest:
 *
 * - Tools (`../responses-tools.ts`: the top-level `tools` and those of `additional_tools`
 *   items, namespaces flattened to unique wire names): a `function` tool becomes an Anthropic
 *   tool with its parameters as `input_schema`, a `custom` tool one taking one string
 *   `input`; hosted tools are left out. `tool_choice` `auto` / `required` / `none` / a named
 *   tool -> `{type:'auto'|'any'|'none'}` / `{type:'tool', name}`; `parallel_tool_calls:
 *   false` -> `disable_parallel_tool_use` (not with `none`).
 * - `max_output_tokens` -> `max_tokens` (else the upstream's `default_max_tokens`);
 *   `reasoning.effort` -> an extended-thinking budget from its `thinking_budgets` (as chat ->
 *   messages does, `../chat-messages/request.ts`); `temperature` (clamped to 0..1) and
 *   `top_p` only without thinking; `stop` -> `stop_sequences`; `text.format` json_schema ->
 *   `output_config.format`; `user` / `safety_identifier` -> `metadata.user_id`.
 * - Thinking is left off when Anthropic would refuse it: with a forced tool choice, and when
 *   the last assistant turn called tools without its signed thinking block first (the client
 *   did not send back the reasoning item that carried it; Anthropic: "a final assistant
 *   message must start with a thinking block"). Without thinking, no thinking block is sent.
 * - Storage and server-state fields (`store`, `include`, `prompt_cache_key`, `truncation`,
 *   `metadata`…) mean nothing to the Messages API. The reasoning items the answer carries
 *   always hold their `encrypted_content`, as the Responses API populates it by default.
 * @throws GatewayError 400 (`param` set): `background`, `conversation`, an empty conversation,
 *   an effort with no budget, invalid numbers, and what `input.ts` refuses.
 */
import { type AnthropicMessage, type Block, invalid, Turns } from '../chat-messages/messages.js';
import type { MessagesTranslationOptions } from '../chat-messages/options.js';
import { finite, positiveInt, stopSequences, writeOutputControls } from '../chat-messages/request.js';
import { isObj, type Obj } from '../read.js';
import { CUSTOM_TOOL_PARAMETERS, ResponsesTools } from '../responses-tools.js';
import { toAnthropicInput } from './input.js';
import { asText } from '../../util/as-text.js';

const THINKING = new Set(['thinking', 'redacted_thinking']);

function toTools(tools: ResponsesTools): Block[] {
  return tools.list.map((t) => ({
    name: t.wire,
    ...(t.description !== undefined ? { description: t.description } : {}),
    input_schema: t.kind === 'custom' ? CUSTOM_TOOL_PARAMETERS : t.parameters,
  }));
}

function toToolChoice(choice: unknown, tools: ResponsesTools): Block | undefined {
  if (choice === 'auto') return { type: 'auto' };
  if (choice === 'required') return { type: 'any' };
  if (choice === 'none') return { type: 'none' };
  const chosen = tools.chosen(choice);
  return chosen ? { type: 'tool', name: chosen.wire } : undefined; // a hosted tool or allowed_tools: auto
}

/** Whether the last assistant turn called tools without a thinking block first (thinking would be refused). */
function toolTurnWithoutThinking(messages: readonly AnthropicMessage[]): boolean {
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i]!;
    if (m.role !== 'assistant') continue;
    return m.content.some((b) => b['type'] === 'tool_use') && !THINKING.has(asText(m.content[0]?.['type']));
  }
  return false;
}

/** The conversation without thinking blocks (turns left empty dropped, neighbours of one role merged). */
function withoutThinking(messages: readonly AnthropicMessage[]): AnthropicMessage[] {
  const out = new Turns();
  for (const m of messages)
    out.append(
      m.role,
      m.content.filter((b) => !THINKING.has(asText(b['type']))),
    );
  return out.done();
}

/**
 * @param body the Responses request, already prepared for the target (`model` the upstream id).
 * @returns the Messages body and the request's tools (to name calls back).
 */
export function toMessagesRequest(body: Readonly<Obj>, opts: MessagesTranslationOptions, stream: boolean): { body: Obj; tools: ResponsesTools } {
  const upstream = "this model's upstream speaks Anthropic Messages and keeps no responses";
  if (body['background'] === true)
    throw invalid(`'background' responses are not available for this model: ${upstream}. Send the request without it.`, 'background');
  if (body['conversation'] !== undefined && body['conversation'] !== null)
    throw invalid(`'conversation' is not available for this model: ${upstream}. Send the whole conversation as input.`, 'conversation');
  const tools = ResponsesTools.of(body);
  const model = asText(body['model'] ?? '');
  const { system, messages } = toAnthropicInput(body, tools, model);
  if (messages.length === 0) throw invalid('The input holds no user or assistant content to answer: send at least one message with text.', 'input');

  const out: Obj = { model: body['model'] };
  if (system.length > 0) out['system'] = system.length === 1 ? system[0]!['text'] : system;
  const forced = body['tool_choice'] === 'required' || tools.chosen(body['tool_choice']) !== undefined;
  const thinkingAllowed = !forced && !toolTurnWithoutThinking(messages);
  writeOutputControls(
    out,
    {
      requested: positiveInt(body['max_output_tokens'], 'max_output_tokens'),
      effort: isObj(body['reasoning']) ? body['reasoning']['effort'] : undefined,
      thinkingAllowed,
      temperature: finite(body['temperature'], 'temperature'),
      topP: finite(body['top_p'], 'top_p'),
    },
    opts,
  );
  out['messages'] = out['thinking'] ? messages : withoutThinking(messages);

  const stop = stopSequences(body['stop']);
  if (stop.length > 0) out['stop_sequences'] = stop;
  if (tools.any) {
    out['tools'] = toTools(tools);
    let choice = toToolChoice(body['tool_choice'], tools);
    if (body['parallel_tool_calls'] === false && choice?.['type'] !== 'none') choice = { ...(choice ?? { type: 'auto' }), disable_parallel_tool_use: true };
    if (choice) out['tool_choice'] = choice;
  }
  const user = typeof body['user'] === 'string' && body['user'] !== '' ? body['user'] : body['safety_identifier'];
  if (typeof user === 'string' && user !== '') out['metadata'] = { user_id: user };
  const format = isObj(body['text']) ? body['text']['format'] : undefined;
  if (isObj(format) && format['type'] === 'json_schema' && isObj(format['schema']))
    out['output_config'] = { format: { type: 'json_schema', schema: format['schema'] } };
  if (stream) out['stream'] = true;
  return { body: out, tools };
}
