/**
 * responses -> responses: an OpenAI Responses client served by an upstream that speaks it
 * (OpenAI API reference, "Streaming events"; recordings `openai-responses-stream-*`). Each
 * event's bytes are forwarded unchanged; the translator reads each event once.
 *
 * - `response.completed` / `response.incomplete` end the answer and carry its usage
 *   (`response.usage`); a stream that ends without one of them is cut short.
 * - `response.failed` and `error` events are failures (recording
 *   `openai-responses-stream-midstream-error-insufficient-quota.chunks.jsonl`: an `error`
 *   event with `error.{type,code,message}`, then `response.failed`).
 * - Output, reasoning and function-argument deltas are generated text (for an estimate
 *   when no usage comes).
 */
import { readOpenAIError } from '../../apis/chat.js';
import { readResponsesUsage } from '../../apis/responses.js';
import { answerFailure, cutShort, streamErrorFailure } from '../failure.js';
import { isObj, NOTHING, parseBody, typedEvent } from '../read.js';
import type { ResponseAnswer, Translator, TranslatorContext } from '../types.js';
import { jsonAnswer, textsOf } from './json.js';

/** The keys of a Responses answer's output that hold generated text. */
const RESPONSES_TEXT_KEYS = new Set(['text', 'arguments', 'name']);

const TEXT_DELTAS = new Set(['response.output_text.delta', 'response.function_call_arguments.delta', 'response.refusal.delta']);
const REASONING_DELTAS = new Set(['response.reasoning_summary_text.delta', 'response.reasoning_text.delta']);

/** The id and output of a response object, when it has them. */
function answerOf(response: Record<string, unknown> | undefined): ResponseAnswer | null {
  return response && typeof response['id'] === 'string' && Array.isArray(response['output']) ? { id: response['id'], output: response['output'] } : null;
}

export function responsesToResponses(ctx: TranslatorContext): Translator {
  let done = false;
  let answer: ResponseAnswer | null = null;
  return {
    client: 'responses',
    wire: 'responses',
    request: (body) => ({ body: { ...body } }),
    answer: () => answer,
    json(raw, parsed) {
      const got = jsonAnswer(raw, parsed, {
        usage: (o) => readResponsesUsage(o['usage']),
        text: (o) => textsOf(o['output'], RESPONSES_TEXT_KEYS),
        error: (o) =>
          isObj(o['error']) && o['status'] !== 'completed' && !Array.isArray(o['output']) ? streamErrorFailure(readOpenAIError(o['error']), ctx.secrets) : null,
      });
      if (!got.failure && isObj(parsed)) answer = answerOf(parsed);
      return got;
    },
    event(ev) {
      const read = typedEvent(ev, done);
      if (!('obj' in read)) return read;
      const { obj, type } = read;
      if (type !== null && TEXT_DELTAS.has(type)) return typeof obj['delta'] === 'string' ? { frames: [ev.raw], text: obj['delta'] } : { frames: [ev.raw] };
      if (type !== null && REASONING_DELTAS.has(type))
        return typeof obj['delta'] === 'string' ? { frames: [ev.raw], reasoning: obj['delta'] } : { frames: [ev.raw] };
      const response = isObj(obj['response']) ? obj['response'] : undefined;
      const usage = readResponsesUsage(response?.['usage']) ?? undefined;
      switch (type) {
        case 'response.created':
        case 'response.in_progress':
          return { frames: [ev.raw], hold: true };
        case 'response.output_item.added': {
          // A function call's name is generated text too (its arguments come as deltas).
          const item = isObj(obj['item']) ? obj['item'] : undefined;
          return item && item['type'] === 'function_call' && typeof item['name'] === 'string' ? { frames: [ev.raw], text: item['name'] } : { frames: [ev.raw] };
        }
        case 'response.completed':
        case 'response.incomplete':
          done = true;
          answer = answerOf(response);
          return usage ? { frames: [ev.raw], usage, done: true } : { frames: [ev.raw], done: true };
        case 'response.failed': {
          const fields = readOpenAIError(response?.['error']) ?? { message: 'The upstream response failed.', code: 'response_failed' };
          const error = streamErrorFailure(fields, ctx.secrets);
          return usage ? { error, usage } : { error };
        }
        case 'error':
          // `{type:'error', code, message, param}`; some servers nest an `error` object.
          return { error: streamErrorFailure(readOpenAIError(isObj(obj['error']) ? obj['error'] : { ...obj, type: undefined }), ctx.secrets) };
        default:
          return { frames: [ev.raw] };
      }
    },
    end() {
      if (done) return NOTHING;
      done = true;
      return { error: cutShort() };
    },
    error(status, headers, body) {
      const parsed = parseBody(body);
      return answerFailure(status, headers, isObj(parsed) ? readOpenAIError(parsed['error']) : null, ctx);
    },
  };
}
