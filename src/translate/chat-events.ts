/**
 * Reading a chat-completions stream for a translator that rebuilds it in another client API
 * (responses-chat, messages-chat): the part every such translator shares, so each stream
 * is read the same way (OpenAI API reference, "The chat completion chunk object").
 *
 * - Comments pass (keep-alives: the client's API has them too), also after the end.
 * - `[DONE]` completes an answer that gave its finish reason, and cuts short one that did not.
 * - A frame that is not a JSON object fails the stream (`badFrame`); a blank one is dropped.
 * - Usage is read from any chunk that carries it (the latest wins).
 * - An error (a chunk's `error`, as OpenRouter sends, or an `event: error`) ends the stream.
 * - Everything else is the sink's `chunk`.
 */
import { readChatUsage, readOpenAIError } from '../apis/chat.js';
import type { SseEvent } from '../sse/parse.js';
import type { Usage } from '../usage/usage.js';
import { GatewayError } from '../errors/codes.js';
import { answerFailure, cutShort, streamErrorFailure, type RelayContext } from './failure.js';
import { badFrame, eventObject, isObj, NOTHING, parseBody, type Obj } from './read.js';
import type { Failure, JsonResult, StreamStep } from './types.js';

/** What builds the client's stream from chat chunks. */
export interface ChatChunkSink {
  /** Nothing more is read once set. */
  done: boolean;
  /** A finish reason came. */
  readonly finished: boolean;
  chunk(obj: Obj): StreamStep;
  /** The client's final frames of a complete answer; sets `done`. */
  complete(): StreamStep;
}

/** One stream's reader: the sink and the usage seen so far. */
export class ChatEvents {
  usage: Usage | null = null;

  constructor(
    private readonly sink: () => ChatChunkSink,
    private readonly secrets: readonly (string | undefined)[],
  ) {}

  private withUsage(step: StreamStep): StreamStep {
    return this.usage ? { ...step, usage: this.usage } : step;
  }

  event(ev: SseEvent): StreamStep {
    if (ev.data === null) return { frames: [ev.raw] };
    const s = this.sink();
    if (s.done) return NOTHING;
    if (ev.data === '[DONE]') return this.end();
    const obj = eventObject(ev);
    if (obj === null) return NOTHING;
    if (obj === false) return badFrame();
    const usage = obj['usage'] === undefined || obj['usage'] === null ? null : readChatUsage(obj['usage']);
    if (usage) this.usage = usage;
    const inner = isObj(obj['error']) || typeof obj['error'] === 'string' ? obj['error'] : ev.event === 'error' ? obj : undefined;
    if (inner !== undefined) {
      s.done = true;
      return this.withUsage({ error: streamErrorFailure(readOpenAIError(inner), this.secrets) });
    }
    const step = s.chunk(obj);
    if (step.error) s.done = true;
    return this.withUsage(step);
  }

  /** The upstream ended (or sent `[DONE]`): complete when a finish reason came, else cut short. */
  end(): StreamStep {
    const s = this.sink();
    if (s.done) return NOTHING;
    if (s.finished) return this.withUsage(s.complete());
    s.done = true;
    return { error: cutShort() };
  }
}

/**
 * A chat completion's 2xx JSON answer rebuilt in the client's API by `rebuild` (its body and
 * generated text, from the answer and its usage); an error object sent with a 2xx status is a
 * failure instead.
 * @throws GatewayError `GW_ERR_UPSTREAM_BAD_RESPONSE` when the answer is not a JSON object.
 */
export function rebuiltChatJson(
  parsed: unknown,
  secrets: readonly (string | undefined)[],
  rebuild: (chat: Obj, usage: Usage | null) => { body: Obj; text: string },
): JsonResult {
  if (!isObj(parsed)) throw new GatewayError('GW_ERR_UPSTREAM_BAD_RESPONSE', { message: 'The upstream answered with JSON that is not an object.' });
  if ((isObj(parsed['error']) || typeof parsed['error'] === 'string') && !Array.isArray(parsed['choices'])) {
    return { body: Buffer.alloc(0), usage: null, failure: streamErrorFailure(readOpenAIError(parsed['error']), secrets) };
  }
  const usage = readChatUsage(parsed['usage']);
  const { body, text } = rebuild(parsed, usage);
  const bytes = Buffer.from(JSON.stringify(body));
  return usage ? { body: bytes, usage } : { body: bytes, usage: null, text };
}

/** A non-2xx answer of a chat (OpenAI-shaped) upstream. */
export function chatErrorAnswer(status: number, headers: Readonly<Record<string, string | string[] | undefined>>, body: Buffer, ctx: RelayContext): Failure {
  const parsed = parseBody(body);
  return answerFailure(status, headers, isObj(parsed) ? readOpenAIError(parsed['error']) : null, ctx);
}
