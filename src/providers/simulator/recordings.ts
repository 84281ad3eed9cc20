/**
 * Loads the recorded provider responses the simulator replays. They are real captures
 * (see `recordings/README.md` for each file's source), kept as raw SSE events so the
 * replay is byte-for-byte what the provider sent.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { SseFramer } from '../../sse/parse.js';
import { packageRoot } from '../../util/package-root.js';

export interface StreamRecording {
  /** Raw SSE events, in order, `[DONE]` included. */
  readonly events: readonly Buffer[];
  /** Index of the `choices: []` usage chunk (sent only with `include_usage`), or -1. */
  readonly usageOnlyIndex: number;
  /** Number of events carrying content or reasoning deltas (for synthesized usage). */
  readonly deltaEvents: number;
  /** `id`, `created`, `model` of the first chunk, to label a synthesized usage chunk. */
  readonly meta: { id: string; created: number; model: string };
  /** Names of the tools the recording calls. */
  readonly toolNames: readonly string[];
  /** Its events that carry reasoning deltas, in order. */
  readonly reasoningEvents: readonly Buffer[];
}

export interface Recordings {
  readonly reasoningStream: StreamRecording;
  readonly reasoningToolStream: StreamRecording;
  readonly chatStream: StreamRecording;
  readonly chatToolStream: StreamRecording;
  readonly reasoningJson: Buffer;
  readonly chatJson: Buffer;
  /** OpenAI's 429 `rate_limit_exceeded` body, byte for byte (what a throttled account answers). */
  readonly rateLimit429: Buffer;
}

function dir(): string {
  return join(packageRoot(), 'src', 'providers', 'simulator', 'recordings');
}

function fromEvents(events: Buffer[]): StreamRecording {
  let usageOnlyIndex = -1;
  let deltaEvents = 0;
  let meta = { id: 'chatcmpl-simulated', created: 0, model: 'simulated' };
  const toolNames: string[] = [];
  const reasoningEvents: Buffer[] = [];
  events.forEach((raw, i) => {
    const text = raw.toString('utf8');
    const payload = text.startsWith('data:') ? text.slice(5).trim() : '';
    if (!payload.startsWith('{')) return;
    const chunk = JSON.parse(payload) as {
      id: string;
      created: number;
      model: string;
      choices: { delta?: { tool_calls?: { function?: { name?: string } }[] } }[];
      usage?: unknown;
    };
    if (i === 0) meta = { id: chunk.id, created: chunk.created, model: chunk.model };
    if (chunk.choices.length === 0 && chunk.usage) usageOnlyIndex = i;
    else if (/"(content|reasoning_content|arguments)":"[^"]/.test(payload)) deltaEvents++;
    if (/"reasoning_content":"[^"]/.test(payload)) reasoningEvents.push(raw);
    for (const call of chunk.choices[0]?.delta?.tool_calls ?? []) if (typeof call.function?.name === 'string') toolNames.push(call.function.name);
  });
  return { events, usageOnlyIndex, deltaEvents, meta, toolNames, reasoningEvents };
}

function loadSse(name: string): StreamRecording {
  const framer = new SseFramer();
  const events = framer.push(readFileSync(join(dir(), name))).filter((e) => e.data !== null || e.raw.length > 2);
  return fromEvents(events.map((e) => Buffer.from(e.raw)));
}

function loadChunks(name: string): StreamRecording {
  const lines = readFileSync(join(dir(), name), 'utf8')
    .split('\n')
    .filter((l) => l.trim() !== '');
  const events = lines.map((l) => Buffer.from(`data: ${l}\n\n`));
  events.push(Buffer.from('data: [DONE]\n\n'));
  return fromEvents(events);
}

let cache: Recordings | undefined;

/** Reads every recording once per process. @throws if a file is missing or corrupt. */
export function loadRecordings(): Recordings {
  cache ??= {
    reasoningStream: loadSse('deepseek-reasoner-stream.sse'),
    reasoningToolStream: loadChunks('deepseek-chat-stream-tool-call.chunks.jsonl'),
    chatStream: loadSse('openai-chat-stream-text-no-usage-2023.sse'),
    chatToolStream: loadSse('openai-chat-stream-parallel-tool-calls.sse'),
    reasoningJson: readFileSync(join(dir(), 'deepseek-reasoner.json')),
    chatJson: readFileSync(join(dir(), 'openai-chat-gpt5.json')),
    rateLimit429: readFileSync(join(dir(), 'openai-error-429-rate-limit-exceeded.json')),
  };
  return cache;
}
