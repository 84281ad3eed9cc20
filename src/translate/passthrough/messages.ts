/**
 * messages -> messages: an Anthropic Messages client served by an upstream that speaks it
 * (Anthropic API reference, "Streaming Messages"; recordings `anthropic-messages-*`). Each
 * event's bytes are forwarded unchanged (`ping` included: the SDKs expect it); the
 * translator reads each event once.
 *
 * - Usage is spread over the stream: `message_start` carries the input counts, each
 *   `message_delta` the cumulative output count (`foldAnthropicUsage`).
 * - `message_delta` carries the stop reason: the answer is complete. A stream that then
 *   ends without `message_stop` still gets one, so the client's parser finishes; a stream
 *   that ends before any stop reason is cut short.
 * - An `error` event is a failure.
 * - Thinking blocks without a signature (carried over from a chat account) are left out of
 *   the request: Anthropic would refuse them.
 */
import { foldAnthropicUsage, readAnthropicError, readAnthropicUsage } from '../../apis/messages.js';
import { answerFailure, cutShort, streamErrorFailure } from '../failure.js';
import { isObj, NOTHING, parseBody, typedEvent } from '../read.js';
import type { StreamStep, Translator, TranslatorContext } from '../types.js';
import { jsonAnswer, textsOf } from './json.js';

/** The keys of a Messages answer's content that hold generated text. */
const MESSAGES_TEXT_KEYS = new Set(['text', 'thinking', 'name']);

/** The generated text of a Messages answer: text, thinking, tool names and inputs. */
export function messagesText(o: Record<string, unknown>): string {
  const content = Array.isArray(o['content']) ? o['content'] : [];
  let out = textsOf(content, MESSAGES_TEXT_KEYS);
  for (const b of content) if (isObj(b) && b['input'] !== undefined) out += JSON.stringify(b['input']);
  return out;
}

/** Whether a block is a thinking block without a signature (made from a chat account's reasoning by `messages-chat`). */
const unsigned = (b: unknown): boolean => isObj(b) && b['type'] === 'thinking' && !b['signature'];

/**
 * The body without unsigned thinking blocks in its assistant turns: Anthropic checks each
 * thinking block's signature, and one a chat account's reasoning was carried in has none.
 * Returns `body` itself when there is nothing to remove (the common case costs one scan).
 */
export function withoutUnsignedThinking(body: Readonly<Record<string, unknown>>): Record<string, unknown> {
  const messages = body['messages'];
  if (!Array.isArray(messages) || !messages.some((m) => isObj(m) && m['role'] === 'assistant' && Array.isArray(m['content']) && m['content'].some(unsigned)))
    return { ...body };
  return {
    ...body,
    messages: messages.map((m) =>
      isObj(m) && m['role'] === 'assistant' && Array.isArray(m['content']) ? { ...m, content: m['content'].filter((b) => !unsigned(b)) } : m,
    ),
  };
}

const MESSAGE_STOP = Buffer.from('event: message_stop\ndata: {"type":"message_stop"}\n\n');

/** The generated text of a `content_block_delta`'s delta. */
function deltaStep(raw: Buffer, delta: unknown): StreamStep {
  if (!isObj(delta)) return { frames: [raw] };
  if (typeof delta['text'] === 'string') return { frames: [raw], text: delta['text'] };
  if (typeof delta['partial_json'] === 'string') return { frames: [raw], text: delta['partial_json'] };
  if (typeof delta['thinking'] === 'string') return { frames: [raw], reasoning: delta['thinking'] };
  return { frames: [raw] };
}

export function messagesToMessages(ctx: TranslatorContext): Translator {
  let done = false;
  let finished = false;
  const counts: Record<string, number> = {};
  return {
    client: 'messages',
    wire: 'messages',
    request: (body) => ({ body: withoutUnsignedThinking(body), ...(ctx.forwardHeaders ? { headers: ctx.forwardHeaders } : {}) }),
    json: (raw, parsed) =>
      jsonAnswer(raw, parsed, {
        usage: (o) => readAnthropicUsage(o['usage']),
        text: (o) => messagesText(o),
        error: (o) => (o['type'] === 'error' ? streamErrorFailure(readAnthropicError(o['error']), ctx.secrets) : null),
      }),
    event(ev) {
      const read = typedEvent(ev, done);
      if (!('obj' in read)) return read;
      const { obj, type } = read;
      switch (type) {
        case 'content_block_delta':
          return deltaStep(ev.raw, obj['delta']);
        case 'content_block_start': {
          // A tool call's name is generated text too (its input comes as deltas).
          const block = isObj(obj['content_block']) ? obj['content_block'] : undefined;
          return block && typeof block['name'] === 'string' ? { frames: [ev.raw], text: block['name'] } : { frames: [ev.raw] };
        }
        case 'message_start':
        case 'message_delta': {
          const message = isObj(obj['message']) ? obj['message'] : undefined;
          foldAnthropicUsage(counts, message ? message['usage'] : obj['usage']);
          if (type === 'message_delta') finished = true;
          const usage = readAnthropicUsage(counts) ?? undefined;
          return { frames: [ev.raw], usage, hold: type === 'message_start' };
        }
        case 'message_stop':
          done = true;
          return { frames: [ev.raw], done: true };
        case 'ping':
          return { frames: [ev.raw], hold: true };
        case 'error':
          return { error: streamErrorFailure(readAnthropicError(obj['error']), ctx.secrets) };
        default:
          return { frames: [ev.raw] };
      }
    },
    end() {
      if (done) return NOTHING;
      done = true;
      return finished ? { frames: [MESSAGE_STOP], done: true } : { error: cutShort() };
    },
    error(status, headers, body) {
      const parsed = parseBody(body);
      return answerFailure(status, headers, isObj(parsed) ? readAnthropicError(parsed['error']) : null, ctx);
    },
  };
}
