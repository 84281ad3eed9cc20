/**
 * responses -> chat: an OpenAI Responses client (Codex CLI, the `openai` SDKs'
 * `responses.create`) served by an upstream that speaks only Chat Completions (DeepSeek,
 * Groq, vLLM, the simulator…). The request is translated by `request.ts`, a JSON answer by
 * `toResponse` below, a stream chunk by chunk by `stream.ts`; the objects themselves are
 * built by `../responses-output.ts`, and tool names are mapped both ways by
 * `../responses-tools.ts`. Errors need no mapping: both APIs use OpenAI's error object.
 *
 * The chat upstream keeps no responses: the id the client gets is made here, and `store`
 * is answered `false`. A stream always asks for usage (`stream_options.include_usage`), so
 * the final event carries it.
 */
import { chatReasoning } from '../../apis/chat.js';
import type { Usage } from '../../usage/usage.js';
import { ChatEvents, chatErrorAnswer, rebuiltChatJson } from '../chat-events.js';
import { isObj, type Obj } from '../read.js';
import { callItem, customInput, echoOf, type Echo, messageItem, newId, reasoningTextItem, responseObject } from '../responses-output.js';
import { ResponsesTools } from '../responses-tools.js';
import type { ResponseAnswer, Translator, TranslatorContext } from '../types.js';
import { statusOf } from './output.js';
import { toChatRequest } from './request.js';
import { ChatToResponsesStream } from './stream.js';
import { asText } from '../../util/as-text.js';

/** A complete chat completion as a response object. */
function toResponse(chat: Obj, r: { id: string; echo: Echo; tools: ResponsesTools }, usage: Usage | null): { body: Obj; text: string } {
  const choice = Array.isArray(chat['choices']) && isObj(chat['choices'][0]) ? chat['choices'][0] : {};
  const message = isObj(choice['message']) ? choice['message'] : {};
  const output: Obj[] = [];
  let text = '';
  const reasoning = chatReasoning(message);
  if (reasoning !== '') output.push(reasoningTextItem(newId('rs'), reasoning, 'completed'));
  if (typeof message['content'] === 'string' && message['content'] !== '') {
    text += message['content'];
    output.push(messageItem(newId('msg'), message['content'], 'completed'));
  }
  for (const call of Array.isArray(message['tool_calls']) ? (message['tool_calls'] as unknown[]) : []) {
    if (!isObj(call)) continue;
    const fn = isObj(call['function']) ? call['function'] : {};
    const name = asText(fn['name'] ?? '');
    const args = typeof fn['arguments'] === 'string' && fn['arguments'] !== '' ? fn['arguments'] : '{}';
    text += name + args;
    const tool = r.tools.back(name);
    const custom = tool.kind === 'custom';
    output.push(
      callItem(
        newId(custom ? 'ctc' : 'fc'),
        { callId: asText(call['id'] ?? newId('call')), name: tool.name, namespace: tool.namespace, custom },
        custom ? customInput(args) : args,
        'completed',
      ),
    );
  }
  const finish = typeof choice['finish_reason'] === 'string' ? choice['finish_reason'] : null;
  // The response is made now, by the gateway (a recorded or cached chat answer may carry an old `created`).
  const created = Math.floor(Date.now() / 1000);
  const body = responseObject({ id: r.id, createdAt: created, model: asText(chat['model'] ?? ''), echo: r.echo }, { ...statusOf(finish), output, usage });
  return { body, text: text + reasoning };
}

export function responsesToChat(ctx: TranslatorContext): Translator {
  const id = newId('resp');
  let tools = ResponsesTools.of({});
  let echo: Echo = echoOf({});
  let stream: ChatToResponsesStream | null = null;
  let answer: ResponseAnswer | null = null;
  // Made at the first event, once `request` set the echo and the tools.
  const events: ChatEvents = new ChatEvents(
    () => (stream ??= new ChatToResponsesStream({ id, createdAt: Math.floor(Date.now() / 1000), echo, tools }, () => events.usage)),
    ctx.secrets,
  );

  return {
    client: 'responses',
    wire: 'chat',
    answer: () => answer ?? stream?.answer() ?? null,
    request(body) {
      const out = toChatRequest(body, { stream: ctx.stream, maxTokensField: ctx.maxTokensField });
      tools = out.tools;
      echo = echoOf(body);
      return { body: out.body };
    },
    json: (_raw, parsed) =>
      rebuiltChatJson(parsed, ctx.secrets, (chat, usage) => {
        const made = toResponse(chat, { id, echo, tools }, usage);
        answer = { id, output: made.body['output'] as unknown[] };
        return made;
      }),
    event: (ev) => events.event(ev),
    end: () => events.end(),
    error: (status, headers, body) => chatErrorAnswer(status, headers, body, ctx),
  };
}
