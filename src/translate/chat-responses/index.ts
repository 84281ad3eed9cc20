/**
 * chat -> responses: an OpenAI Chat Completions client served by an account that serves the
 * model on the Responses API only (OpenAI's Codex models; an `openai-compatible` upstream with
 * `options: { responses: true, chat: false }`). The request is translated by `request.ts`, a
 * JSON answer by `response.ts`, a stream event by event by `stream.ts`. Errors need no
 * mapping: both APIs use OpenAI's error object; an `error` event or `response.failed` ends the
 * stream with the chat error frame.
 */
import { readOpenAIError } from '../../apis/chat.js';
import { readResponsesUsage } from '../../apis/responses.js';
import { GatewayError } from '../../errors/codes.js';
import { answerFailure, cutShort, streamErrorFailure } from '../failure.js';
import { isObj, NOTHING, parseBody, typedEvent } from '../read.js';
import type { Translator, TranslatorContext } from '../types.js';
import { toResponsesRequest } from './request.js';
import { toChatCompletion } from './response.js';
import { ResponsesToChatStream } from './stream.js';

export function chatToResponses(ctx: TranslatorContext): Translator {
  const stream = new ResponsesToChatStream(ctx.wantsUsage);
  return {
    client: 'chat',
    wire: 'responses',
    request: (body) => ({ body: toResponsesRequest(body, ctx.stream) }),
    json(_raw, parsed) {
      if (!isObj(parsed)) throw new GatewayError('GW_ERR_UPSTREAM_BAD_RESPONSE', { message: 'The upstream answered with JSON that is not an object.' });
      if (isObj(parsed['error']) && parsed['status'] !== 'completed' && !Array.isArray(parsed['output'])) {
        return { body: Buffer.alloc(0), usage: null, failure: streamErrorFailure(readOpenAIError(parsed['error']), ctx.secrets) };
      }
      const usage = readResponsesUsage(parsed['usage']);
      const { body, text } = toChatCompletion(parsed);
      const bytes = Buffer.from(JSON.stringify(body));
      return usage ? { body: bytes, usage } : { body: bytes, usage: null, text };
    },
    event(ev) {
      const read = typedEvent(ev, stream.done);
      if (!('obj' in read)) return read;
      const { obj, type } = read;
      const response = isObj(obj['response']) ? obj['response'] : undefined;
      const usage = readResponsesUsage(response?.['usage']) ?? undefined;
      if (type === 'response.failed') {
        stream.done = true;
        const fields = readOpenAIError(response?.['error']) ?? { message: 'The upstream response failed.', code: 'response_failed' };
        return usage ? { error: streamErrorFailure(fields, ctx.secrets), usage } : { error: streamErrorFailure(fields, ctx.secrets) };
      }
      if (type === 'error') {
        stream.done = true;
        return { error: streamErrorFailure(readOpenAIError(isObj(obj['error']) ? obj['error'] : { ...obj, type: undefined }), ctx.secrets) };
      }
      const step = stream.event(type, obj);
      return usage ? { ...step, usage } : step;
    },
    end() {
      if (stream.done) return NOTHING;
      stream.done = true;
      return { error: cutShort() };
    },
    error(status, headers, body) {
      const parsed = parseBody(body);
      return answerFailure(status, headers, isObj(parsed) ? readOpenAIError(parsed['error']) : null, ctx.secrets);
    },
  };
}
