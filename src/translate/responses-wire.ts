/**
 * What every translator over the Responses *wire* API shares (chat -> responses, messages ->
 * responses): reading the account's answer, whatever the client API. Errors come in OpenAI's
 * shape from every Responses account: an HTTP error body, a JSON answer with `error` or
 * `status: "failed"`, an `error` event (OpenAI nests an `error` object: recording
 * `openai-responses-stream-midstream-error-insufficient-quota.chunks.jsonl`), or a
 * `response.failed` event's `response.error`; usage rides `response.*` events' `response`.
 * A stream that ends before its terminal event (`response.completed` / `.incomplete`) is cut
 * short. The client's side (its request, its frames, its JSON answer) is the caller's.
 */
import { readOpenAIError } from '../apis/chat.js';
import type { ApiName } from '../apis/names.js';
import { readResponsesUsage } from '../apis/responses.js';
import { GatewayError } from '../errors/codes.js';
import { answerFailure, cutShort, streamErrorFailure } from './failure.js';
import { isObj, NOTHING, parseBody, typedEvent, type Obj } from './read.js';
import type { StreamStep, Translator, TranslatorContext } from './types.js';

/** A client-side stream writer fed the Responses events one by one. */
export interface ResponsesEventSink {
  /** Set once the stream ended (the terminal event, or an error); later data is dropped. */
  done: boolean;
  /** One Responses event (`type` from its `type` field or SSE `event:` line), as client frames. */
  event(type: string | null, obj: Obj): StreamStep;
}

/** The client-specific parts of a translator over the Responses wire API. */
export interface ResponsesWireParts {
  readonly client: ApiName;
  /** The Responses request for a client body (`stream` as the attempt streams). */
  request(body: Readonly<Record<string, unknown>>, stream: boolean): Record<string, unknown>;
  /** A completed JSON response in the client's shape, and its generated text (for an estimate). */
  answer(parsed: Obj): { body: unknown; text: string };
  /** The writer of this attempt's stream. */
  readonly stream: ResponsesEventSink;
}

const FAILED = { message: 'The upstream response failed.', code: 'response_failed' };

/**
 * A translator from `parts.client` to the Responses wire API.
 * @throws GatewayError `GW_ERR_UPSTREAM_BAD_RESPONSE` (from `json`) when a 2xx body is not a JSON object.
 */
export function responsesWireTranslator(ctx: TranslatorContext, parts: ResponsesWireParts): Translator {
  const { stream } = parts;
  return {
    client: parts.client,
    wire: 'responses',
    request: (body) => ({ body: parts.request(body, ctx.stream) }),
    json(_raw, parsed) {
      if (!isObj(parsed)) throw new GatewayError('GW_ERR_UPSTREAM_BAD_RESPONSE', { message: 'The upstream answered with JSON that is not an object.' });
      if (parsed['status'] === 'failed' || (isObj(parsed['error']) && parsed['status'] !== 'completed' && !Array.isArray(parsed['output']))) {
        return { body: Buffer.alloc(0), usage: null, failure: streamErrorFailure(readOpenAIError(parsed['error']) ?? FAILED, ctx.secrets) };
      }
      const usage = readResponsesUsage(parsed['usage']);
      const { body, text } = parts.answer(parsed);
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
        const error = streamErrorFailure(readOpenAIError(response?.['error']) ?? FAILED, ctx.secrets);
        return usage ? { error, usage } : { error };
      }
      if (type === 'error') {
        stream.done = true;
        return { error: streamErrorFailure(readOpenAIError(isObj(obj['error']) ? obj['error'] : { ...obj, type: undefined }), ctx.secrets) };
      }
      const step = stream.event(type, obj);
      if (step.error) stream.done = true;
      return usage ? { ...step, usage } : step;
    },
    end() {
      if (stream.done) return NOTHING;
      stream.done = true;
      return { error: cutShort() };
    },
    error(status, headers, body) {
      const parsed = parseBody(body);
      return answerFailure(status, headers, isObj(parsed) ? readOpenAIError(parsed['error']) : null, ctx);
    },
  };
}
