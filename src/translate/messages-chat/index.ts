/**
 * messages -> chat: an Anthropic Messages client (Claude Code, the `@anthropic-ai/sdk`
 * SDKs) served by an upstream that speaks only Chat Completions. The request is translated
 * by `request.ts`, a JSON answer by `response.ts`, a stream chunk by chunk by `stream.ts`.
 * Errors are read in OpenAI's shape and reach the client in Anthropic's (the Messages API's
 * `errorBody`, by status), so the SDK raises the class it would against Anthropic.
 * A stream always asks for usage (`stream_options.include_usage`): the final
 * `message_delta` carries it; `message_start` announces the gateway's estimate of the
 * prompt (`ctx.promptTokens`).
 */
import { ChatEvents, chatErrorAnswer, rebuiltChatJson } from '../chat-events.js';
import type { Translator, TranslatorContext } from '../types.js';
import { toChatRequest } from './request.js';
import { toMessage } from './response.js';
import { ChatToMessagesStream } from './stream.js';

export function messagesToChat(ctx: TranslatorContext): Translator {
  const stream: ChatToMessagesStream = new ChatToMessagesStream(() => events.usage, ctx.promptTokens);
  const events: ChatEvents = new ChatEvents(() => stream, ctx.secrets);
  return {
    client: 'messages',
    wire: 'chat',
    request: (body) => ({ body: toChatRequest(body, { stream: ctx.stream, maxTokensField: ctx.maxTokensField }) }),
    json: (_raw, parsed) => rebuiltChatJson(parsed, ctx.secrets, toMessage),
    // Anthropic's own `ping` events are not invented; comments pass (the SDKs skip them).
    event: (ev) => events.event(ev),
    end: () => events.end(),
    error: (status, headers, body) => chatErrorAnswer(status, headers, body, ctx),
  };
}
