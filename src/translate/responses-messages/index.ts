/**
 * responses -> messages: an OpenAI Responses client (Codex CLI, the `openai` SDKs'
 * `responses.create` / `.stream`) served by an upstream that speaks only Anthropic Messages.
 * The request is translated by `request.ts` (the conversation by `input.ts`), a JSON answer
 * by `output.ts`, a stream event by event by `stream.ts`; Anthropic's errors become the
 * status / type / code OpenAI sends for the same condition (`../chat-messages/errors.ts`,
 * shared with chat -> messages), so the OpenAI SDKs raise the classes they would against
 * OpenAI, while the classifier sees Anthropic's own type.
 *
 * The Anthropic upstream keeps no responses: the response id is made here (`resp_…`), and
 * `store` is answered `false`; a follow-up by `previous_response_id` is rebuilt from the
 * gateway's journal (`pipeline/continuation.ts`).
 */
import { readAnthropicError, readAnthropicUsage } from '../../apis/messages.js';
import { GatewayError } from '../../errors/codes.js';
import { mapAnthropicError } from '../chat-messages/errors.js';
import { translationOptions } from '../chat-messages/options.js';
import { answerFailure, cutShort, streamErrorFailure, type ClientErrorShape } from '../failure.js';
import { messagesText } from '../passthrough/messages.js';
import { isObj, parseBody, typedEvent } from '../read.js';
import { echoOf, newId } from '../responses-output.js';
import { ResponsesTools } from '../responses-tools.js';
import type { ResponseAnswer, Translator, TranslatorContext } from '../types.js';
import { type ResponseContext, toResponse } from './output.js';
import { toMessagesRequest } from './request.js';
import { MessagesToResponsesStream } from './stream.js';
import { asText } from '../../util/as-text.js';

/** How an Anthropic error object reaches an OpenAI client: the type and code OpenAI uses for it. */
function clientShape(err: unknown): ClientErrorShape {
  const mapped = mapAnthropicError(200, err).error;
  return { type: mapped.type, code: mapped.code };
}

export function responsesToMessages(ctx: TranslatorContext): Translator {
  let r: ResponseContext = { id: newId('resp'), echo: echoOf({}), tools: ResponsesTools.of({}), model: '' };
  let stream: MessagesToResponsesStream | null = null;
  let answer: ResponseAnswer | null = null;
  // Made at the first event, once `request` set what the response echoes and the tools.
  const s = (): MessagesToResponsesStream => (stream ??= new MessagesToResponsesStream({ ...r, createdAt: Math.floor(Date.now() / 1000) }));

  return {
    client: 'responses',
    wire: 'messages',
    answer: () => answer ?? stream?.answer() ?? null,
    request(body) {
      const out = toMessagesRequest(body, translationOptions(ctx.options), ctx.stream);
      r = { ...r, echo: echoOf(body), tools: out.tools, model: asText(body['model'] ?? '') };
      return { body: out.body };
    },
    json(_raw, parsed) {
      if (!isObj(parsed)) throw new GatewayError('GW_ERR_UPSTREAM_BAD_RESPONSE', { message: 'The upstream answered with JSON that is not an object.' });
      if (parsed['type'] === 'error')
        return {
          body: Buffer.alloc(0),
          usage: null,
          failure: streamErrorFailure(readAnthropicError(parsed['error']), ctx.secrets, clientShape(parsed['error'])),
        };
      const usage = readAnthropicUsage(parsed['usage']);
      const made = toResponse(parsed, r, usage);
      answer = { id: r.id, output: made['output'] as unknown[] };
      const body = Buffer.from(JSON.stringify(made));
      return usage ? { body, usage } : { body, usage, text: messagesText(parsed) };
    },
    event(ev) {
      const read = typedEvent(ev, s().done);
      if (!('obj' in read)) return read;
      if (read.type === 'error') {
        s().done = true;
        return { error: streamErrorFailure(readAnthropicError(read.obj['error']), ctx.secrets, clientShape(read.obj['error'])) };
      }
      return s().event(read.type, read.obj);
    },
    end: () => s().end() ?? { error: cutShort() },
    error(status, headers, body) {
      const parsed = parseBody(body);
      const inner = isObj(parsed) ? parsed['error'] : undefined;
      const mapped = mapAnthropicError(status, isObj(inner) ? inner : {});
      return answerFailure(status, headers, readAnthropicError(inner), ctx, { status: mapped.status, type: mapped.error.type, code: mapped.error.code });
    },
  };
}
