/**
 * Every recording in test/fixtures, sorted by the wire API it is an answer of, and what the
 * recording itself says an answer must contain (usage, generated text, where it fails),
 * read by code independent of src/ (no import of the API readers or translators).
 *
 * The lists are explicit on purpose: test/unit/translators-streams.test.ts asserts that
 * every file in test/fixtures is in exactly one of them, so a new recording cannot be
 * silently ignored.
 *
 * Framing: `.sse` files are used byte for byte. `.chunks.jsonl` files hold one SSE data
 * payload a line (the recorder stripped the framing and `[DONE]`); `sseBody` rebuilds the
 * framing: `event: <payload.type>\ndata: <line>\n\n` for the typed-event APIs (Responses,
 * Anthropic Messages), `data: <line>\n\n` for chat. The recorder's `[DONE]` is not restored
 * (so chat's "complete answer without [DONE]" path runs on real data).
 */
import type { ApiName } from '../../src/apis/names.js';
import type { Usage } from '../../src/usage/usage.js';
import { fixture } from './recordings.js';

export type Obj = Record<string, unknown>;

/** Streamed answers (status 200, text/event-stream), by wire API. */
export const STREAM_RECORDINGS: Readonly<Record<ApiName, readonly string[]>> = {
  chat: [
    'deepseek-chat-stream-tool-call.chunks.jsonl',
    'deepseek-reasoner-stream.sse',
    'openai-chat-stream-parallel-tool-calls.sse',
    'openai-chat-stream-text-include-usage.sse',
    'openai-chat-stream-text-no-usage-2023.sse',
    'openai-chat-stream-tool-call-argument-deltas.sse',
    'openrouter-chat-stream-midstream-error.sse',
    'openrouter-chat-stream-reasoning-claude.sse',
  ],
  responses: [
    'openai-responses-stream-function-call.sse',
    'openai-responses-stream-gpt5-reasoning-function-call.sse',
    'openai-responses-stream-midstream-error-insufficient-quota.chunks.jsonl',
    'openai-responses-stream-reasoning-encrypted.chunks.jsonl',
    'openai-responses-stream-text.sse',
  ],
  messages: [
    'anthropic-messages-stream-text.chunks.jsonl',
    'anthropic-messages-stream-thinking.sse',
    'anthropic-messages-stream-tool-no-args.chunks.jsonl',
    'anthropic-messages-stream-tool-use.sse',
  ],
};

/** 2xx JSON answers, by wire API (no non-streaming Responses answer was recorded). */
export const JSON_RECORDINGS: Readonly<Record<ApiName, readonly string[]>> = {
  chat: ['deepseek-reasoner.json', 'openai-chat-gpt5.json', 'openai-chat-o3-mini-max-completion-tokens.json', 'openai-chat-o3-mini-reasoning-tokens.json'],
  responses: [],
  messages: ['anthropic-messages-parallel-tool-use.json', 'anthropic-messages-text.json', 'anthropic-messages-thinking-tool-use.json'],
};

/** Error bodies, by wire API; the HTTP status is in the file name (see the fixtures README). */
export const ERROR_RECORDINGS: Readonly<Record<ApiName, readonly string[]>> = {
  chat: [
    'groq-error-404-model-not-found.json',
    'openai-chat-error-400-unsupported-parameter.json',
    'openai-chat-error-400-unsupported-value.json',
    'openai-chat-error-404-model-not-found.json',
    'openai-error-429-rate-limit-exceeded.json',
    'openrouter-error-429.json',
  ],
  responses: ['openai-responses-error-400.json'],
  messages: ['anthropic-error-400-invalid-request.json', 'anthropic-error-404-not-found.json'],
};

/** Recordings of APIs the gateway does not speak as a wire API; kept for the SSE framer test (the Gemini streams are the only CRLF captures). */
export const NOT_SPOKEN: readonly { readonly name: string; readonly reason: string }[] = [
  {
    name: 'gemini-2.5-pro-stream-thinking.sse',
    reason: 'Gemini native streamGenerateContent: no Gemini wire API in the support matrix (used by the SSE framer test only)',
  },
  { name: 'gemini-error-404.json', reason: 'Gemini native error body: no Gemini wire API in the support matrix' },
  { name: 'gemini-error-429-retry-info.json', reason: 'Gemini native error body (abridged by its source): no Gemini wire API in the support matrix' },
  {
    name: 'gemini-stream-text.sse',
    reason: 'Gemini native streamGenerateContent: no Gemini wire API in the support matrix (used by the SSE framer test only)',
  },
  {
    name: 'gemini-stream-tool-call.chunks.jsonl',
    reason: 'Gemini native streamGenerateContent: no Gemini wire API in the support matrix (used by the SSE framer test only)',
  },
];

/** The HTTP status of an error recording, read from its name (`…-error-404-…`). */
export function statusOf(name: string): number {
  const m = /-error-(\d{3})(?:-|\.json$)/.exec(name);
  if (!m) throw new Error(`no status in ${name}`);
  return Number(m[1]);
}

/** The non-empty lines of a `.chunks.jsonl` recording. */
function jsonlLines(name: string): string[] {
  return fixture(name)
    .toString('utf8')
    .split('\n')
    .filter((l) => l.trim() !== '');
}

/**
 * The SSE body of a stream recording: `.sse` verbatim; `.chunks.jsonl` re-framed (see the
 * module comment). `typed` chooses `event: <type>` framing; by default it is used for every
 * payload that has a string `type` (Responses, Anthropic), never for chat chunks.
 */
export function sseBody(name: string): Buffer {
  if (name.endsWith('.sse')) return fixture(name);
  if (!name.endsWith('.chunks.jsonl')) throw new Error(`not a stream recording: ${name}`);
  return Buffer.from(
    jsonlLines(name)
      .map((line) => {
        const type = (JSON.parse(line) as Obj)['type'];
        return typeof type === 'string' ? `event: ${type}\ndata: ${line}\n\n` : `data: ${line}\n\n`;
      })
      .join(''),
    'utf8',
  );
}

/**
 * The upstream streams of a recording. The recorder of
 * `openai-responses-stream-reasoning-encrypted.chunks.jsonl` concatenated the four HTTP
 * streams of a multi-step run into one file (each starts with `response.created`, sequence
 * number 0); each is one stream here, labelled `name#k`. Every other recording is one stream.
 */
export function streamsOf(name: string, wire: ApiName): { label: string; body: Buffer }[] {
  const body = sseBody(name);
  if (wire !== 'responses') return [{ label: name, body }];
  const events = readSse(body.toString('utf8'));
  const starts = events.flatMap((e, i) => (e.data !== null && (JSON.parse(e.data) as Obj)['type'] === 'response.created' ? [i] : []));
  if (starts.length <= 1) return [{ label: name, body }];
  return starts.map((s, k) => ({
    label: `${name}#${k + 1}`,
    body: Buffer.from(
      events
        .slice(s, starts[k + 1] ?? events.length)
        .map((e) => e.raw)
        .join(''),
      'utf8',
    ),
  }));
}

/** One event of an LF-framed SSE body, as read by `readSse`. */
export interface RecordedEvent {
  /** The event's text, blank line included. */
  readonly raw: string;
  readonly data: string | null;
  readonly event: string | null;
}

/**
 * An independent reading of an SSE body whose lines end in LF (every recording but the
 * Gemini ones): blocks end at a blank line; `data:` / `event:` lose one leading space;
 * data lines join with \n; `:` lines are comments. A final unterminated block is kept.
 */
export function readSse(text: string): RecordedEvent[] {
  const out: RecordedEvent[] = [];
  for (const raw of text.split(/(?<=\n\n)/)) {
    if (raw === '') continue;
    const data: string[] = [];
    let event: string | null = null;
    for (const line of raw.split('\n')) {
      if (line === '' || line.startsWith(':')) continue;
      const colon = line.indexOf(':');
      const field = colon === -1 ? line : line.slice(0, colon);
      const value = colon === -1 ? '' : line.slice(colon + 1).replace(/^ /, '');
      if (field === 'data') data.push(value);
      else if (field === 'event') event = value;
    }
    out.push({ raw, data: data.length > 0 ? data.join('\n') : null, event });
  }
  return out;
}

const count = (v: unknown): number => (typeof v === 'number' && Number.isFinite(v) && v > 0 ? v : 0);
const obj = (v: unknown): Obj => (typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Obj) : {});

/**
 * Usage in gateway terms (src/usage/usage.ts: `cached` is part of `input`, `reasoning`
 * part of `output`, `cacheWrite` part of `input` and absent when none), from each API's
 * documented usage object.
 */
export function expectedUsage(wire: ApiName, usage: Obj): Usage {
  let u: Usage;
  if (wire === 'chat') {
    // OpenAI: prompt_tokens include cached ones (prompt_tokens_details.cached_tokens; DeepSeek:
    // prompt_cache_hit_tokens); relays of Claude report cache writes as cache_creation_input_tokens.
    const input = count(usage['prompt_tokens']);
    const cached = Math.min(input, count(obj(usage['prompt_tokens_details'])['cached_tokens']) || count(usage['prompt_cache_hit_tokens']));
    const output = count(usage['completion_tokens']);
    u = { input, cached, output, reasoning: Math.min(output, count(obj(usage['completion_tokens_details'])['reasoning_tokens'])) };
    const written = Math.min(input - cached, count(usage['cache_creation_input_tokens']));
    if (written > 0) u.cacheWrite = written;
  } else if (wire === 'responses') {
    const input = count(usage['input_tokens']);
    const output = count(usage['output_tokens']);
    u = {
      input,
      cached: Math.min(input, count(obj(usage['input_tokens_details'])['cached_tokens'])),
      output,
      reasoning: Math.min(output, count(obj(usage['output_tokens_details'])['reasoning_tokens'])),
    };
  } else {
    // Anthropic: input_tokens exclude cache reads and writes.
    const read = count(usage['cache_read_input_tokens']);
    const written = count(usage['cache_creation_input_tokens']);
    u = { input: count(usage['input_tokens']) + read + written, cached: read, output: count(usage['output_tokens']), reasoning: 0 };
    if (written > 0) u.cacheWrite = written;
  }
  return u;
}

/** What a stream recording says, read event by event. */
export interface StreamFacts {
  readonly events: RecordedEvent[];
  /** Parsed data of each event (null for comments and `[DONE]`). */
  readonly payloads: (Obj | null)[];
  /** Index of the event that reports a failure, or null. */
  readonly errorAt: number | null;
  /** The error object (fields `message`, `type`, `code`) of that event. */
  readonly errorFields: Obj | null;
  /** The wire's usage object as of the end (or the failure, that event included): null when none came. */
  readonly usage: Usage | null;
  /** Generated answer text before the failure (content, tool names, tool arguments), in order. */
  readonly text: string;
  /** Generated reasoning text before the failure. */
  readonly reasoning: string;
  /** The answer completed (chat: a finish_reason; responses: response.completed/incomplete; messages: message_delta). */
  readonly complete: boolean;
  /** The stream's own terminator came (chat `[DONE]`, Anthropic `message_stop`; Responses: its completion event). */
  readonly terminated: boolean;
  /** Indexes of chat chunks that carry usage but no choices (missing, null or empty). */
  readonly usageOnly: ReadonlySet<number>;
}

/** Reads the facts of one SSE body (LF framing) of `wire`. */
export function streamFacts(wire: ApiName, body: Buffer): StreamFacts {
  const events = readSse(body.toString('utf8'));
  const payloads = events.map((e) => (e.data === null || e.data === '[DONE]' ? null : (JSON.parse(e.data) as Obj)));
  let errorAt: number | null = null;
  let errorFields: Obj | null = null;
  let usageObj: Obj | null = null;
  const anthropic: Obj = {};
  let text = '';
  let reasoning = '';
  let complete = false;
  let terminated = false;
  const usageOnly = new Set<number>();
  for (let i = 0; i < events.length && errorAt === null; i++) {
    const e = events[i]!;
    const p = payloads[i];
    if (e.data === '[DONE]') terminated = true;
    if (!p) continue;
    if (wire === 'chat') {
      const hasUsage = typeof p['usage'] === 'object' && p['usage'] !== null;
      if (hasUsage) usageObj = p['usage'] as Obj;
      if (p['error'] !== undefined && p['error'] !== null) {
        errorAt = i;
        errorFields = obj(p['error']);
        break;
      }
      const choices = Array.isArray(p['choices']) ? (p['choices'] as Obj[]) : [];
      if (choices.length === 0 && hasUsage) usageOnly.add(i);
      for (const c of choices) {
        if (typeof c['finish_reason'] === 'string') complete = true;
        const d = obj(c['delta']);
        if (typeof d['content'] === 'string') text += d['content'];
        const r = d['reasoning_content'] ?? d['reasoning'];
        if (typeof r === 'string') reasoning += r;
        for (const call of Array.isArray(d['tool_calls']) ? (d['tool_calls'] as Obj[]) : []) {
          const fn = obj(call['function']);
          if (typeof fn['name'] === 'string') text += fn['name'];
          if (typeof fn['arguments'] === 'string') text += fn['arguments'];
        }
      }
    } else if (wire === 'responses') {
      const type = p['type'];
      const delta = typeof p['delta'] === 'string' ? p['delta'] : '';
      if (type === 'response.output_text.delta' || type === 'response.refusal.delta' || type === 'response.function_call_arguments.delta') text += delta;
      if (type === 'response.reasoning_summary_text.delta' || type === 'response.reasoning_text.delta') reasoning += delta;
      const item = obj(p['item']);
      if (type === 'response.output_item.added' && item['type'] === 'function_call' && typeof item['name'] === 'string') text += item['name'];
      const response = obj(p['response']);
      if (typeof response['usage'] === 'object' && response['usage'] !== null) usageObj = response['usage'] as Obj;
      if (type === 'response.completed' || type === 'response.incomplete') complete = terminated = true;
      if (type === 'error') {
        errorAt = i;
        errorFields = typeof p['error'] === 'object' && p['error'] !== null ? (p['error'] as Obj) : p;
      } else if (type === 'response.failed') {
        errorAt = i;
        errorFields = obj(response['error']);
      }
    } else {
      const type = p['type'];
      if (type === 'message_start' || type === 'message_delta') {
        const usage = obj(type === 'message_start' ? obj(p['message'])['usage'] : p['usage']);
        // Cumulative counts: the latest value of each field wins.
        for (const [k, v] of Object.entries(usage)) if (typeof v === 'number') anthropic[k] = v;
        usageObj = anthropic;
        if (type === 'message_delta') complete = true;
      }
      if (type === 'message_stop') terminated = true;
      if (type === 'content_block_start') {
        const block = obj(p['content_block']);
        if ((block['type'] === 'tool_use' || block['type'] === 'server_tool_use') && typeof block['name'] === 'string') text += block['name'];
      }
      if (type === 'content_block_delta') {
        const d = obj(p['delta']);
        if (d['type'] === 'text_delta' && typeof d['text'] === 'string') text += d['text'];
        if (d['type'] === 'input_json_delta' && typeof d['partial_json'] === 'string') text += d['partial_json'];
        if (d['type'] === 'thinking_delta' && typeof d['thinking'] === 'string') reasoning += d['thinking'];
      }
      if (type === 'error') {
        errorAt = i;
        errorFields = obj(p['error']);
      }
    }
  }
  return {
    events,
    payloads,
    errorAt,
    errorFields,
    usage: usageObj ? expectedUsage(wire, usageObj) : null,
    text,
    reasoning,
    complete,
    terminated,
    usageOnly,
  };
}

/** Token counts `withUsageCounts` writes: every part non-zero and distinct. */
export const VARIANT_COUNTS = { input: 1000, cached: 600, written: 150, output: 300, reasoning: 120 } as const;

/**
 * A copy of one payload (stream event or JSON body) of `wire` whose usage object, if it has
 * one, reports `VARIANT_COUNTS` (cached, reasoning and cache-write tokens the recordings
 * mostly report as 0). `dialect: 'deepseek'` reports cached tokens as DeepSeek does.
 */
export function withUsageCounts(wire: ApiName, payload: Obj, dialect: 'openai' | 'deepseek' = 'openai'): Obj {
  const c = VARIANT_COUNTS;
  const p = structuredClone(payload);
  if (wire === 'chat') {
    if (typeof p['usage'] !== 'object' || p['usage'] === null) return p;
    const u: Obj = { ...(p['usage'] as Obj), prompt_tokens: c.input, completion_tokens: c.output, total_tokens: c.input + c.output };
    u['completion_tokens_details'] = { ...obj(u['completion_tokens_details']), reasoning_tokens: c.reasoning };
    if (dialect === 'deepseek') {
      delete u['prompt_tokens_details'];
      u['prompt_cache_hit_tokens'] = c.cached;
      u['prompt_cache_miss_tokens'] = c.input - c.cached;
    } else {
      u['prompt_tokens_details'] = { ...obj(u['prompt_tokens_details']), cached_tokens: c.cached };
      u['cache_creation_input_tokens'] = c.written;
    }
    p['usage'] = u;
  } else if (wire === 'responses') {
    const holder = typeof p['response'] === 'object' && p['response'] !== null ? (p['response'] as Obj) : p;
    if (typeof holder['usage'] !== 'object' || holder['usage'] === null) return p;
    holder['usage'] = {
      ...(holder['usage'] as Obj),
      input_tokens: c.input,
      input_tokens_details: { cached_tokens: c.cached },
      output_tokens: c.output,
      output_tokens_details: { reasoning_tokens: c.reasoning },
      total_tokens: c.input + c.output,
    };
  } else {
    const input = { input_tokens: c.input - c.cached - c.written, cache_read_input_tokens: c.cached, cache_creation_input_tokens: c.written };
    if (p['type'] === 'message_start') {
      const message = obj(p['message']);
      message['usage'] = { ...obj(message['usage']), ...input, output_tokens: 1 };
    } else if (p['type'] === 'message_delta' || p['type'] === 'message') {
      if (typeof p['usage'] !== 'object' || p['usage'] === null) return p;
      const u: Obj = { ...(p['usage'] as Obj), output_tokens: c.output };
      // A message_delta repeats the input counts only in newer streams; a body always has them.
      for (const [k, v] of Object.entries(input)) if (p['type'] === 'message' || k in u) u[k] = v;
      p['usage'] = u;
    }
  }
  return p;
}

/** An SSE body whose every data payload went through `withUsageCounts` (other bytes kept). */
export function streamWithUsageCounts(wire: ApiName, body: Buffer, dialect: 'openai' | 'deepseek' = 'openai'): Buffer {
  return Buffer.from(
    readSse(body.toString('utf8'))
      .map((e) => {
        if (e.data === null || e.data === '[DONE]') return e.raw;
        const data = JSON.stringify(withUsageCounts(wire, JSON.parse(e.data) as Obj, dialect));
        return e.raw.replace(/^data:.*$/m, () => `data: ${data}`);
      })
      .join(''),
    'utf8',
  );
}
