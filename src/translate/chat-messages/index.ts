/**
 * chat -> messages: an OpenAI Chat Completions client served by an upstream that speaks
 * Anthropic Messages. The request is translated by `request.ts`, a JSON answer by
 * `response.ts`, a stream event by event by `stream.ts`, errors by `errors.ts` (Anthropic's
 * error types become the status/type/code OpenAI sends for the same condition, so the
 * OpenAI SDKs raise the classes they would against OpenAI; the classifier sees Anthropic's
 * own type).
 */
import { readAnthropicError, readAnthropicUsage } from '../../apis/messages.js';
import { GatewayError } from '../../errors/codes.js';
import { answerFailure, cutShort, streamErrorFailure } from '../failure.js';
import { badFrame, eventObject, isObj, NOTHING, parseBody, typeOf } from '../read.js';
import type { Translator, TranslatorContext } from '../types.js';
import { mapAnthropicError } from './errors.js';
import { translationOptions } from './options.js';
import { toAnthropicRequest } from './request.js';
import { toChatCompletion } from './response.js';
import { messagesText } from '../passthrough/messages.js';
import { MessagesToChatStream } from './stream.js';

export function chatToMessages(ctx: TranslatorContext): Translator {
  const stream = new MessagesToChatStream(ctx.wantsUsage);
  return {
    client: 'chat',
    wire: 'messages',
    request(body) {
      const out = toAnthropicRequest(body, translationOptions(ctx.options));
      if (ctx.stream) out['stream'] = true;
      else delete out['stream'];
      return { body: out };
    },
    json(_raw, parsed) {
      if (!isObj(parsed)) throw new GatewayError('GW_ERR_UPSTREAM_BAD_RESPONSE', { message: 'The upstream answered with JSON that is not an object.' });
      if (parsed['type'] === 'error') {
        const mapped = mapAnthropicError(200, parsed['error']).error;
        return {
          body: Buffer.alloc(0),
          usage: null,
          failure: streamErrorFailure(readAnthropicError(parsed['error']), ctx.secrets, { type: mapped.type, code: mapped.code }),
        };
      }
      const usage = readAnthropicUsage(parsed['usage']);
      const body = Buffer.from(JSON.stringify(toChatCompletion(parsed)));
      return usage ? { body, usage } : { body, usage, text: messagesText(parsed) };
    },
    event(ev) {
      if (stream.done || ev.data === null) return NOTHING;
      const obj = eventObject(ev);
      if (obj === null) return NOTHING;
      if (obj === false) return badFrame();
      const type = typeOf(obj, ev);
      if (type === 'error') {
        const mapped = mapAnthropicError(200, obj['error']).error;
        stream.done = true;
        return { error: streamErrorFailure(readAnthropicError(obj['error']), ctx.secrets, { type: mapped.type, code: mapped.code }) };
      }
      return stream.event(type, obj);
    },
    end: () => stream.end() ?? { error: cutShort() },
    error(status, headers, body) {
      const parsed = parseBody(body);
      const inner = isObj(parsed) ? parsed['error'] : undefined;
      const fields = readAnthropicError(inner);
      const mapped = mapAnthropicError(status, isObj(inner) ? inner : {});
      return answerFailure(status, headers, fields, ctx, { status: mapped.status, type: mapped.error.type, code: mapped.error.code });
    },
  };
}
