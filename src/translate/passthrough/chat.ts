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
 *
 * Each frame is checked to be a JSON object without building it (`json-check.ts`); only a
 * frame with a usage object or an error (or an `event: error`) is parsed. A content frame's
 * generated text is read later, and only if the answer ends without usage or the stream
 * passes the relay's budget for unread data (`generated`; pipeline/generated-text.ts).
 * That keeps the common frame at about half the cost of parsing it (the A/B in
 * docs/performance.md).
 */
import { chatReasoning, readChatUsage, readOpenAIError } from '../../apis/chat.js';
import { answerFailure, cutShort, streamErrorFailure } from '../failure.js';
import { isJsonObjectText } from '../json-check.js';
import { badFrame, isObj, NOTHING, parseBody, type Obj } from '../read.js';
import type { StreamStep, Translator, TranslatorContext } from '../types.js';
import { jsonAnswer, textsOf } from './json.js';

const DONE = Buffer.from('data: [DONE]\n\n');
/** The keys of a chat answer that hold generated text. */
const CHAT_TEXT_KEYS = new Set(['content', 'reasoning_content', 'reasoning', 'name', 'arguments']);
const FINISH = /"finish_reason"\s*:\s*"/;
/**
 * A frame that must be read: a usage object, or an `error` that is not null. OpenAI sends
 * `"usage":null` on every chunk once `include_usage` is on (and so does the shared bench's
 * mock), so a mere `"usage"` key is not a reason to parse.
 */
const MUST_READ = /"usage"\s*:\s*\{|"error"\s*:\s*(?!null\b)/;
/** Whether a frame may need either test above: one scan for the common content frame, which needs neither. */
const NOTABLE = /"(?:finish_reason|usage|error)"\s*:\s*[^n\s]/;

/**
 * The generated text of a chunk's choices (content, tool names and arguments; reasoning
 * apart) and whether one of them finished.
 */
function choicesText(choices: unknown[]): { text: string; reasoning: string; finished: boolean } {
  let text = '';
  let reasoning = '';
  let finished = false;
  for (const c of choices) {
    if (!isObj(c)) continue;
    if (typeof c['finish_reason'] === 'string') finished = true;
    const d = c['delta'];
    if (!isObj(d)) continue;
    if (typeof d['content'] === 'string') text += d['content'];
    reasoning += chatReasoning(d);
    const calls = d['tool_calls'];
    if (Array.isArray(calls)) text += toolText(calls);
  }
  return { text, reasoning, finished };
}

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

  /** A frame that must be read: usage, an error, or an `event: error`. Parsed once. */
  function parsed(raw: Buffer, chunk: Obj, isErrorEvent: boolean): StreamStep {
    const usage = chunk['usage'] === undefined ? undefined : (readChatUsage(chunk['usage']) ?? undefined);
    // An error is an object or a message; `"error": false` or `null` says there is none.
    const inner = isObj(chunk['error']) || typeof chunk['error'] === 'string' ? chunk['error'] : isErrorEvent ? chunk : undefined;
    if (inner !== undefined) return { error: streamErrorFailure(readOpenAIError(inner), ctx.secrets), usage };
    const choices = chunk['choices'];
    if (!Array.isArray(choices) || choices.length === 0) {
      // The usage-only chunk: the gateway always asks for it; the client gets it if it asked.
      if (usage && !ctx.wantsUsage) return { usage };
      return { frames: [raw], usage };
    }
    const g = choicesText(choices);
    if (g.finished) finished = true;
    return { frames: [raw], usage, text: g.text || undefined, reasoning: g.reasoning || undefined };
  }

  return {
    client: 'chat',
    wire: 'chat',
    request(body) {
      if (!ctx.stream) return { body: { ...body } };
      const opts = isObj(body['stream_options']) ? body['stream_options'] : {};
      return { body: { ...body, stream_options: { ...opts, include_usage: true } } };
    },
    json: (raw, parsed) =>
      jsonAnswer(raw, parsed, {
        usage: (o) => readChatUsage(o['usage']),
        text: (o) => textsOf(o['choices'], CHAT_TEXT_KEYS),
        error: (o) =>
          (isObj(o['error']) || typeof o['error'] === 'string') && !Array.isArray(o['choices'])
            ? streamErrorFailure(readOpenAIError(o['error']), ctx.secrets)
            : null,
      }),
    event(ev) {
      // Comments (keep-alives) pass, also after the end; data after the end is dropped.
      if (ev.data === null) return { frames: [ev.raw] };
      if (done) return NOTHING;
      if (ev.data === '[DONE]') {
        done = true;
        // An answer that never gave a finish_reason is cut short, whatever its last frame says.
        return finished ? { frames: [ev.raw], done: true } : { error: cutShort() };
      }
      const data = ev.data;
      const isErrorEvent = ev.event === 'error';
      if (!isJsonObjectText(data)) {
        if (data.trim() === '') return NOTHING; // a keep-alive with an empty data line
        return isErrorEvent ? { error: streamErrorFailure({ message: data }, ctx.secrets) } : badFrame();
      }
      if (isErrorEvent) return parsed(ev.raw, JSON.parse(data) as Obj, true);
      if (NOTABLE.test(data)) {
        if (MUST_READ.test(data)) return parsed(ev.raw, JSON.parse(data) as Obj, false);
        // The quoted key cannot occur unescaped inside a JSON string, so this finds only a
        // real finish_reason with a string value.
        if (FINISH.test(data)) finished = true;
      }
      // A content frame, forwarded as it is.
      return { frames: [ev.raw], deferred: data };
    },
    generated(events) {
      // Joined once, so a long stream keeps one flat string per batch, not a rope of deltas.
      const text: string[] = [];
      const reasoning: string[] = [];
      for (const data of events) {
        const choices = (JSON.parse(data) as Obj)['choices'];
        if (!Array.isArray(choices)) continue;
        const g = choicesText(choices);
        if (g.text) text.push(g.text);
        if (g.reasoning) reasoning.push(g.reasoning);
      }
      return { text: text.join(''), reasoning: reasoning.join('') };
    },
    end() {
      if (done) return NOTHING;
      done = true;
      return finished ? { frames: [DONE], done: true } : { error: cutShort() };
    },
    error(status, headers, body) {
      const parsed = parseBody(body);
      return answerFailure(status, headers, isObj(parsed) ? readOpenAIError(parsed['error']) : null, ctx);
    },
  };
}
