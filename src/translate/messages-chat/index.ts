/**
 * messages -> chat: an Anthropic Messages client (Claude Code, the `@anthropic-ai/sdk`
 * SDKs) served by an upstream that speaks only Chat Completions. The request is translated
 * by `request.ts`, a JSON answer by `response.ts`, a stream chunk by chunk by `stream.ts`.
 * Errors are read in OpenAI's shape and reach the client in Anthropic's (the Messages API's
 * `errorBody`, by status), so the SDK raises the class it would against Anthropic.
 * A stream always asks for usage (`stream_options.include_usage`): the final
 * `message_delta` carries it.
 */
import { readChatUsage, readOpenAIError } from '../../apis/chat.js';
import { GatewayError } from '../../errors/codes.js';
import type { Usage } from '../../usage/usage.js';
import { answerFailure, cutShort, streamErrorFailure } from '../failure.js';
import { badFrame, eventObject, isObj, NOTHING, parseBody } from '../read.js';
import type { Translator, TranslatorContext } from '../types.js';
import { toChatRequest } from './request.js';
import { toMessage } from './response.js';
import { ChatToMessagesStream } from './stream.js';

export function messagesToChat(ctx: TranslatorContext): Translator {
  let usage: Usage | null = null;
  const stream = new ChatToMessagesStream(() => usage);
  const withUsage = <T extends object>(step: T): T => (usage ? { ...step, usage } : step);
  return {
    client: 'messages',
    wire: 'chat',
    request: (body) => ({ body: toChatRequest(body, { stream: ctx.stream, maxTokensField: ctx.maxTokensField }) }),
    json(_raw, parsed) {
      if (!isObj(parsed)) throw new GatewayError('GW_ERR_UPSTREAM_BAD_RESPONSE', { message: 'The upstream answered with JSON that is not an object.' });
      if ((isObj(parsed['error']) || typeof parsed['error'] === 'string') && !Array.isArray(parsed['choices'])) {
        return { body: Buffer.alloc(0), usage: null, failure: streamErrorFailure(readOpenAIError(parsed['error']), ctx.secrets) };
      }
      const u = readChatUsage(parsed['usage']);
      const { body, text } = toMessage(parsed, u);
      const bytes = Buffer.from(JSON.stringify(body));
      return u ? { body: bytes, usage: u } : { body: bytes, usage: null, text };
    },
    event(ev) {
      // Comments pass; the SDKs skip them. Anthropic's own `ping` events are not invented.
      if (ev.data === null) return { frames: [ev.raw] };
      if (stream.done) return NOTHING;
      if (ev.data === '[DONE]') {
        if (stream.finished) return withUsage(stream.complete());
        stream.done = true;
        return { error: cutShort() };
      }
      const obj = eventObject(ev);
      if (obj === null) return NOTHING;
      if (obj === false) return badFrame();
      const fromUsage = obj['usage'] === undefined || obj['usage'] === null ? null : readChatUsage(obj['usage']);
      if (fromUsage) usage = fromUsage;
      const inner = isObj(obj['error']) || typeof obj['error'] === 'string' ? obj['error'] : ev.event === 'error' ? obj : undefined;
      if (inner !== undefined) {
        stream.done = true;
        return withUsage({ error: streamErrorFailure(readOpenAIError(inner), ctx.secrets) });
      }
      const step = stream.chunk(obj);
      if (step.error) stream.done = true;
      return withUsage(step);
    },
    end() {
      if (stream.done) return NOTHING;
      if (stream.finished) return withUsage(stream.complete());
      stream.done = true;
      return { error: cutShort() };
    },
    error(status, headers, body) {
      const parsed = parseBody(body);
      return answerFailure(status, headers, isObj(parsed) ? readOpenAIError(parsed['error']) : null, ctx.secrets);
    },
  };
}
