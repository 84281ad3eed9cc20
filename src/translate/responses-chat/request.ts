/**
 * A Responses API request (OpenAI API reference, "Create a model response"; the
 * `CreateResponse` schema of OpenAI's OpenAPI spec) as a Chat Completions request, for an
 * upstream that speaks only chat completions.
 *
 * - `instructions` -> a leading `system` message; `input` (a string, or input items) ->
 *   `messages`: `message` items keep their role (`developer` becomes `system`, which every
 *   chat server takes), `input_text` / `output_text` parts become text, `input_image` an
 *   `image_url` part; `function_call` items become the `tool_calls` of the assistant message
 *   they follow (parallel calls in one message), `function_call_output` a `tool` message (its images, which a tool message cannot hold, in a
 *   user message after the outputs);
 *   `custom_tool_call` and its output likewise (the call's `input` as the function's one
 *   string argument, see `CUSTOM_TOOL_PARAMETERS`). `reasoning` items are dropped: a chat
 *   server takes no reasoning in its input (an encrypted one means nothing off its account).
 *   `additional_tools` items only declare tools (below).
 * - Tools (`../responses-tools.ts`: the top-level `tools` and those of `additional_tools`
 *   items, namespaces flattened to unique wire names): `function` tools as chat functions,
 *   `custom` tools as functions taking one string `input`; hosted tools (web search, file
 *   search, code interpreter…) run on OpenAI's side only and are left out. Calls in the
 *   input use the same wire names. `tool_choice` follows.
 * - `max_output_tokens` -> the output cap in the field the model takes; `reasoning.effort`
 *   -> `reasoning_effort`; `text.format` -> `response_format`; `temperature`, `top_p`,
 *   `user`, `parallel_tool_calls` as they are. Storage and server-state fields (`store`,
 *   `include`, `prompt_cache_key`, `metadata`, `truncation`…) mean nothing to a chat server.
 * @throws GatewayError 400 (`param` set) for what a chat server cannot do: `background`,
 *   `conversation`, input items it has no equivalent for (file and audio parts, item
 *   references).
 */
import { GatewayError } from '../../errors/codes.js';
import { pushAll } from '../../util/push-all.js';
import { isObj, type Obj } from '../read.js';
import { CUSTOM_TOOL_PARAMETERS, ResponsesTools } from '../responses-tools.js';
import { asText } from '../../util/as-text.js';

function invalid(message: string, param: string): GatewayError {
  return new GatewayError('GW_ERR_INVALID_REQUEST', { message, param });
}

/** The text of a content part list (or a string), parts of the given types only. */
function textOf(content: unknown, param: string): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  let out = '';
  content.forEach((p, i) => {
    if (!isObj(p)) return;
    if (p['type'] === 'input_text' || p['type'] === 'output_text' || p['type'] === 'text' || p['type'] === 'summary_text')
      out += typeof p['text'] === 'string' ? p['text'] : '';
    else if (p['type'] === 'refusal') out += typeof p['refusal'] === 'string' ? p['refusal'] : '';
    else if (p['type'] !== 'input_image')
      throw invalid(
        `Content parts of type '${asText(p['type'])}' cannot be sent to this model's upstream (it speaks chat completions): send text or images.`,
        `${param}[${i}]`,
      );
  });
  return out;
}

/** A user message's content: a string, or chat parts (text, image_url). */
function userContent(content: unknown, param: string): unknown {
  if (typeof content === 'string' || !Array.isArray(content)) return typeof content === 'string' ? content : '';
  if (!content.some((p) => isObj(p) && p['type'] === 'input_image')) return textOf(content, param);
  return content.map((p, i) => {
    if (!isObj(p)) throw invalid('Each content part must be an object.', `${param}[${i}]`);
    if (p['type'] !== 'input_image') return { type: 'text', text: textOf([p], `${param}[${i}]`) };
    if (typeof p['image_url'] !== 'string')
      throw invalid(
        "An input_image is sent to a chat-completions upstream by its 'image_url' (a URL or a data URL); file ids are not available there.",
        `${param}[${i}].image_url`,
      );
    const detail = typeof p['detail'] === 'string' ? { detail: p['detail'] } : {};
    return { type: 'image_url', image_url: { url: p['image_url'], ...detail } };
  });
}

/** A tool call's output as a tool message's content (text parts joined). */
function outputText(output: unknown, param: string): string {
  if (typeof output === 'string') return output;
  if (Array.isArray(output))
    return textOf(
      output.filter((p) => !(isObj(p) && p['type'] === 'input_image')),
      param,
    );
  return output === undefined || output === null ? '' : JSON.stringify(output);
}

/** Builds chat messages from Responses input items, in order. */
function toMessages(input: unknown, instructions: unknown, tools: ResponsesTools): Obj[] {
  const out: Obj[] = [];
  if (typeof instructions === 'string' && instructions !== '') out.push({ role: 'system', content: instructions });
  if (typeof input === 'string') {
    out.push({ role: 'user', content: input });
    return out;
  }
  if (!Array.isArray(input)) return out;
  /** The assistant message the next tool calls join (the last message, while it is the assistant's). */
  const lastAssistant = (): Obj => {
    const last = out[out.length - 1];
    if (last && last['role'] === 'assistant') return last;
    const m: Obj = { role: 'assistant', content: null };
    out.push(m);
    return m;
  };
  const addCall = (call: Obj): void => {
    const m = lastAssistant();
    const calls = m['tool_calls'] as Obj[] | undefined;
    if (calls)
      calls.push(call); // the array addCall made: no copy per call
    else m['tool_calls'] = [call];
  };
  /** Images of tool outputs: a chat tool message holds text only, so they follow the outputs as a user message. */
  let images: Obj[] = [];
  const flushImages = (): void => {
    if (images.length > 0) out.push({ role: 'user', content: images });
    images = [];
  };
  input.forEach((item, i) => {
    const param = `input[${i}]`;
    if (!isObj(item)) throw invalid('Each input item must be an object.', param);
    const type = item['type'] ?? (item['role'] !== undefined ? 'message' : undefined);
    if (type !== 'function_call_output' && type !== 'custom_tool_call_output') flushImages();
    switch (type) {
      case 'message': {
        const role = item['role'] === 'developer' ? 'system' : item['role'];
        if (role === 'user') out.push({ role, content: userContent(item['content'], `${param}.content`) });
        else if (role === 'system' || role === 'assistant') {
          const text = textOf(item['content'], `${param}.content`);
          const last = out[out.length - 1];
          // Text after tool calls of the same turn opens a new assistant message.
          if (role === 'assistant' && last && last['role'] === 'assistant' && last['tool_calls'] === undefined)
            last['content'] = `${asText(last['content'] ?? '')}${text}`;
          else out.push({ role, content: text });
        } else throw invalid(`Unknown message role '${asText(item['role'])}'.`, `${param}.role`);
        return;
      }
      case 'function_call':
        addCall({
          id: asText(item['call_id'] ?? ''),
          type: 'function',
          function: {
            name: tools.wireName(asText(item['name'] ?? ''), item['namespace']),
            arguments: typeof item['arguments'] === 'string' ? item['arguments'] : '{}',
          },
        });
        return;
      case 'custom_tool_call':
        addCall({
          id: asText(item['call_id'] ?? ''),
          type: 'function',
          function: {
            name: tools.wireName(asText(item['name'] ?? ''), item['namespace']),
            arguments: JSON.stringify({ input: typeof item['input'] === 'string' ? item['input'] : '' }),
          },
        });
        return;
      case 'function_call_output':
      case 'custom_tool_call_output':
        out.push({ role: 'tool', tool_call_id: asText(item['call_id'] ?? ''), content: outputText(item['output'], `${param}.output`) });
        if (Array.isArray(item['output']))
          pushAll(
            images,
            userContent(
              item['output'].filter((p) => isObj(p) && p['type'] === 'input_image'),
              `${param}.output`,
            ) as Obj[],
          );
        return;
      case 'reasoning':
      case 'additional_tools':
        return;
      default:
        throw invalid(
          `Input items of type '${asText(type)}' cannot be sent to this model's upstream (it speaks chat completions): send messages, function calls and their outputs.`,
          param,
        );
    }
  });
  flushImages();
  return out;
}

/** Chat `tools` from the request's tools (`custom` ones as functions taking one string `input`). */
function toTools(tools: ResponsesTools): Obj[] {
  return tools.list.map((t) => {
    const description = t.description !== undefined ? { description: t.description } : {};
    const strict = t.strict !== undefined ? { strict: t.strict } : {};
    return { type: 'function', function: { name: t.wire, ...description, parameters: t.kind === 'custom' ? CUSTOM_TOOL_PARAMETERS : t.parameters, ...strict } };
  });
}

function toToolChoice(choice: unknown, tools: ResponsesTools): unknown {
  if (choice === 'auto' || choice === 'none' || choice === 'required') return choice;
  const chosen = tools.chosen(choice);
  if (chosen) return { type: 'function', function: { name: chosen.wire } };
  return undefined; // a hosted tool or allowed_tools: the server's default (auto)
}

function toResponseFormat(text: unknown): unknown {
  const format = isObj(text) ? text['format'] : undefined;
  if (!isObj(format)) return undefined;
  if (format['type'] === 'json_object') return { type: 'json_object' };
  if (format['type'] !== 'json_schema') return undefined;
  const { type: _t, ...schema } = format;
  return { type: 'json_schema', json_schema: schema };
}

export interface ChatRequestOptions {
  readonly stream: boolean;
  /** The field the model takes its output cap in (default `max_tokens`, which every chat server knows). */
  readonly maxTokensField?: 'max_tokens' | 'max_completion_tokens' | undefined;
}

/**
 * @returns the chat body and the request's tools (their calls go back under their own
 *   names and namespaces, as `custom_tool_call` items for `custom` tools).
 * @throws GatewayError 400 (see the file comment).
 */
export function toChatRequest(body: Readonly<Obj>, o: ChatRequestOptions): { body: Obj; tools: ResponsesTools } {
  if (body['background'] === true)
    throw invalid(
      "'background' responses are not available for this model: its upstream speaks chat completions and keeps no responses. Send the request without it.",
      'background',
    );
  if (body['conversation'] !== undefined && body['conversation'] !== null)
    throw invalid(
      "'conversation' is not available for this model: its upstream speaks chat completions and keeps no conversations. Send the whole conversation as input.",
      'conversation',
    );
  const tools = ResponsesTools.of(body);
  const out: Obj = { model: body['model'], messages: toMessages(body['input'], body['instructions'], tools) };
  if (tools.any) {
    out['tools'] = toTools(tools);
    const choice = toToolChoice(body['tool_choice'], tools);
    if (choice !== undefined) out['tool_choice'] = choice;
    if (typeof body['parallel_tool_calls'] === 'boolean') out['parallel_tool_calls'] = body['parallel_tool_calls'];
  }
  if (typeof body['max_output_tokens'] === 'number') out[o.maxTokensField ?? 'max_tokens'] = body['max_output_tokens'];
  const effort = isObj(body['reasoning']) ? body['reasoning']['effort'] : undefined;
  if (typeof effort === 'string') out['reasoning_effort'] = effort;
  const format = toResponseFormat(body['text']);
  if (format !== undefined) out['response_format'] = format;
  for (const k of ['temperature', 'top_p', 'user'] as const) if (body[k] !== undefined && body[k] !== null) out[k] = body[k];
  if (o.stream) {
    out['stream'] = true;
    out['stream_options'] = { include_usage: true };
  }
  return { body: out, tools };
}
