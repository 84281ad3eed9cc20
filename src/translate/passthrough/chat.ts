/**
 * chat -> chat: an OpenAI Chat Completions client served by an upstream that speaks it.
 * Each event's bytes are forwarded unchanged; the translator reads each event once for
 * usage, completion, errors and generated text (OpenAI API reference, "The chat completion
 * chunk object"; recordings `openai-chat-stream-*.sse`, `deepseek-*`, `openrouter-*`).
 *
 * - Streams always ask the upstream for usage (`stream_options.include_usage`), so cost is
 *   never unknown; the usage-only chunk (`choices` empty, missing or null) reaches the client
 *   only when it asked for it.
 * - A `data` frame that is not a JSON object never reaches the client: the stream ends there
 *   with one error event (before the first byte: failover).
 * - An error inside the stream (an `event: error`, or a chunk with a top-level `error`, as
 *   OpenRouter sends: `openrouter-chat-stream-midstream-error.sse`) ends it.
 * - A stream that ends after a `finish_reason` but without `[DONE]` is complete: the client
 *   still gets exactly one `[DONE]`; one that ends before any `finish_reason` is cut short.
 */
import { readChatUsage, readOpenAIError } from '../../apis/chat.js';
import { answerFailure, cutShort, streamErrorFailure } from '../failure.js';
import { badFrame, eventObject, isObj, NOTHING, parseBody, type Obj } from '../read.js';
import type { StreamStep, Translator, TranslatorContext } from '../types.js';
import { jsonAnswer } from './json.js';

const DONE = Buffer.from('data: [DONE]\n\n');

/** Tool names and argument fragments of a delta's `tool_calls` (generated text too). */
function toolText(calls: unknown[]): string {
  let text = '';
  for (const call of calls) {
    const fn = isObj(call) ? call['function'] : undefined;
    if (!isObj(fn)) continue;
    if (typeof fn['name'] === 'string') text += fn['name'];
    if (typeof fn['arguments'] === 'string') text += fn['arguments'];
  }
  return text;
}

export function chatToChat(ctx: TranslatorContext): Translator {
  let done = false;
  let finished = false;

  /**
   * One chunk, read once. Steps are built as fixed-shape literals (no spreads, no helper
   * objects): this runs for every event of every chat stream.
   */
  function step(raw: Buffer, chunk: Obj, isErrorEvent: boolean): StreamStep {
    const usage = chunk['usage'] === undefined ? undefined : (readChatUsage(chunk['usage']) ?? undefined);
    const inner = chunk['error'] ?? (isErrorEvent ? chunk : undefined);
    if (inner !== undefined && inner !== null) return { error: streamErrorFailure(readOpenAIError(inner), ctx.secrets), usage };
    const choices = chunk['choices'];
    if (!Array.isArray(choices) || choices.length === 0) {
      // The usage-only chunk: the gateway always asks for it; the client gets it if it asked.
      if (usage && !ctx.wantsUsage) return { usage };
      return { frames: [raw], usage };
    }
    let text = '';
    let reasoning = '';
    for (const c of choices) {
      if (!isObj(c)) continue;
      if (typeof c['finish_reason'] === 'string') finished = true;
      const d = c['delta'];
      if (!isObj(d)) continue;
      if (typeof d['content'] === 'string') text += d['content'];
      // `reasoning_content` (DeepSeek), `reasoning` (OpenRouter, vLLM).
      if (typeof d['reasoning_content'] === 'string') reasoning += d['reasoning_content'];
      else if (typeof d['reasoning'] === 'string') reasoning += d['reasoning'];
      const calls = d['tool_calls'];
      if (Array.isArray(calls)) text += toolText(calls);
    }
    return { frames: [raw], usage, text: text || undefined, reasoning: reasoning || undefined };
  }

  return {
    client: 'chat',
    wire: 'chat',
    request(body) {
      if (!ctx.stream) return { body: { ...body } };
      const opts = isObj(body['stream_options']) ? body['stream_options'] : {};
      return { body: { ...body, stream_options: { ...opts, include_usage: true } } };
    },
    json: (raw, parsed) => jsonAnswer(raw, parsed, (o) => readChatUsage(o['usage'])),
    event(ev) {
      // Comments (keep-alives) pass, also after the end; data after the end is dropped.
      if (ev.data === null) return { frames: [ev.raw] };
      if (done) return NOTHING;
      if (ev.data === '[DONE]') {
        done = true;
        return { frames: [ev.raw] };
      }
      const chunk = eventObject(ev);
      if (chunk === null) return NOTHING;
      if (chunk === false) {
        if (ev.event === 'error') return { error: streamErrorFailure({ message: ev.data }, ctx.secrets) };
        return badFrame();
      }
      return step(ev.raw, chunk, ev.event === 'error');
    },
    end() {
      if (done) return NOTHING;
      done = true;
      return finished ? { frames: [DONE] } : { error: cutShort() };
    },
    error(status, headers, body) {
      const parsed = parseBody(body);
      return answerFailure(status, headers, isObj(parsed) ? readOpenAIError(parsed['error']) : null, ctx.secrets);
    },
  };
}
