/**
 * The built-in `simulator` upstream: speaks the chat wire API in-process, like an
 * OpenAI-compatible provider, by replaying real recorded responses, paced like a real provider.
 *
 * Which recording: a target model id containing `reasoner` replays DeepSeek reasoner
 * captures (`reasoning_content` deltas, then content); any other id replays OpenAI chat
 * captures. Non-streaming requests get the matching JSON body. A request that declares
 * tools gets a call to one of them, with arguments that fit its schema, framed like the
 * recorded tool-call stream (`tools.ts`); a turn that sends tool results back gets text, so
 * an agent's tool loop ends.
 *
 * Usage: a capture's `choices: []` usage chunk is sent only when the request asked for
 * `stream_options.include_usage`, as OpenAI does. The 2023 text capture predates usage
 * chunks; when usage is asked for, one is added in OpenAI's shape with completion tokens
 * counted as content deltas and prompt tokens estimated at 4 characters a token.
 *
 * Throttling (`simulator.throttle`, off by default): each simulator instance is one provider
 * account that reacts to reasoning bursts like a real one (`throttle.ts`): a deep call past
 * the account's threshold gets the recorded OpenAI 429 with `Retry-After`, or stalls (its
 * first event late by `stall_first_token_ms`, its reasoning burst paused). See docs/simulator.md.
 */
import { Readable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import type { LiveUpstream } from '../../config/types.js';
import type { ApiName, Provider, ProviderKind, UpstreamResponse, WireRequest } from '../types.js';
import { loadRecordings, type Recordings, type StreamRecording } from './recordings.js';
import { AccountThrottle, type ThrottleStats } from './throttle.js';
import { planToolCall, recordingFits, toolCallEvents, toolCallJson } from './tools.js';

export type { ThrottleStats } from './throttle.js';

interface SimRequest {
  model?: string;
  messages?: unknown;
  tools?: unknown[];
  tool_choice?: unknown;
  reasoning_effort?: unknown;
  stream_options?: { include_usage?: boolean };
}

/** A simulator instance: one provider account, with its throttle state. */
export interface SimulatorProvider extends Provider {
  readonly id: string;
  /** Counters since start or the last `reset()`. */
  stats(): ThrottleStats;
  /** Clears the throttle window and the stats, and re-seeds the PRNG. */
  reset(): void;
}

/** Prompt tokens, estimated at 4 characters a token. */
const promptTokens = (req: SimRequest): number => Math.max(1, Math.ceil(JSON.stringify(req.messages ?? '').length / 4));

function usageChunk(rec: StreamRecording, req: SimRequest): Buffer {
  const prompt = promptTokens(req);
  const completion = rec.deltaEvents;
  const chunk = {
    id: rec.meta.id,
    object: 'chat.completion.chunk',
    created: rec.meta.created,
    model: rec.meta.model,
    choices: [],
    usage: { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion },
  };
  return Buffer.from(`data: ${JSON.stringify(chunk)}\n\n`);
}

/** The events to send for one request, in order. */
function plan(rec: StreamRecording, req: SimRequest): Buffer[] {
  const wantsUsage = req.stream_options?.include_usage === true;
  const events = rec.events.filter((_e, i) => wantsUsage || i !== rec.usageOnlyIndex);
  if (wantsUsage && rec.usageOnlyIndex === -1 && !rec.events.some((e) => e.includes('"usage":{'))) {
    events.splice(events.length - 1, 0, usageChunk(rec, req));
  }
  return events;
}

interface Pacing {
  /** Between two events. */
  readonly delayMs: number;
  /** Before the first event (a stall), after the headers. */
  readonly firstEventMs: number;
  /** Extra pause before every `pauseEvery`-th reasoning event (a stall), 0 for none. */
  readonly pauseMs: number;
  readonly pauseEvery: number;
}

const REASONING_DELTA = Buffer.from('"reasoning_content":"');

async function* replay(events: Buffer[], pace: Pacing, signal: AbortSignal, done: () => void): AsyncGenerator<Buffer> {
  try {
    let reasoning = 0;
    for (let i = 0; i < events.length; i++) {
      const event = events[i]!;
      let wait = i === 0 ? pace.firstEventMs : pace.delayMs;
      if (pace.pauseMs > 0 && event.includes(REASONING_DELTA) && ++reasoning % pace.pauseEvery === 0) wait += pace.pauseMs;
      if (wait > 0) await sleep(wait, undefined, { signal });
      yield event;
    }
  } finally {
    done();
  }
}

function rateLimited(recordings: Recordings, retryAfterS: number): UpstreamResponse {
  return {
    statusCode: 429,
    headers: { 'content-type': 'application/json; charset=utf-8', 'retry-after': String(retryAfterS) },
    body: Readable.from([recordings.rateLimit429]),
  };
}

const CHAT_ONLY: ReadonlySet<ApiName> = new Set<ApiName>(['chat']);

export function createSimulator(upstream: Pick<LiveUpstream, 'id' | 'simulator'>): SimulatorProvider {
  const recordings = loadRecordings();
  const sim = upstream.simulator;
  const { chunk_delay_ms: chunkDelay, first_byte_delay_ms: firstByteDelay } = sim;
  const throttle = new AccountThrottle(sim.throttle, sim.seed);

  return {
    id: upstream.id,
    wireApis: CHAT_ONLY,
    // Not a vendor: traces must not pass simulated calls off as a real provider's.
    genAiProvider: 'switchyard.simulator',
    async send(req: WireRequest): Promise<UpstreamResponse> {
      const body = req.body as SimRequest;
      const reasoning = /reasoner/i.test(body.model ?? '');
      const call = Array.isArray(body.tools) && body.tools.length > 0 ? planToolCall(body) : null;
      const admission = throttle.admit(throttle.isDeep(body.model, body.reasoning_effort));
      if (admission.kind === 'reject') return rateLimited(recordings, sim.throttle.retry_after_s);

      // The call leaves the window when its response is fully sent, fails, or is aborted.
      const onAbort = (): void => done();
      const done = (): void => {
        admission.release();
        req.signal.removeEventListener('abort', onAbort);
      };
      req.signal.addEventListener('abort', onAbort, { once: true });
      const stall = admission.kind === 'stall';
      try {
        if (firstByteDelay > 0) await sleep(firstByteDelay, undefined, { signal: req.signal });
        if (!req.stream) {
          if (stall && sim.throttle.stall_first_token_ms > 0) await sleep(sim.throttle.stall_first_token_ms, undefined, { signal: req.signal });
          const answer = reasoning ? recordings.reasoningJson : recordings.chatJson;
          const json = Readable.from([call ? toolCallJson(call, answer, promptTokens(body)) : answer]);
          json.once('close', done);
          return { statusCode: 200, headers: { 'content-type': 'application/json' }, body: json };
        }
        const toolRec = reasoning ? recordings.reasoningToolStream : recordings.chatToolStream;
        const events = !call
          ? plan(reasoning ? recordings.reasoningStream : recordings.chatStream, body)
          : recordingFits(toolRec, body.tools)
            ? plan(toolRec, body)
            : toolCallEvents(call, toolRec, body.stream_options?.include_usage === true, promptTokens(body));
        const pace: Pacing = stall
          ? {
              delayMs: chunkDelay,
              firstEventMs: sim.throttle.stall_first_token_ms,
              pauseMs: sim.throttle.stall_pause_ms,
              pauseEvery: sim.throttle.stall_pause_every,
            }
          : { delayMs: chunkDelay, firstEventMs: 0, pauseMs: 0, pauseEvery: 1 };
        const stream = Readable.from(replay(events, pace, req.signal, done), { objectMode: false });
        stream.once('close', done);
        return { statusCode: 200, headers: { 'content-type': 'text/event-stream; charset=utf-8' }, body: stream };
      } catch (err) {
        done();
        throw err;
      }
    },
    stats: () => throttle.stats(),
    reset: () => throttle.reset(),
    close: async () => {},
  };
}

/** Registry entry: answers in-process, no `base_url`, no options. */
export const simulatorKind: ProviderKind = { create: createSimulator, needsBaseUrl: false, simulated: true };
