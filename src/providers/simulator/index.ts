/**
 * The built-in `simulator` upstream: answers in-process like an OpenAI-compatible provider
 * by replaying real recorded responses, paced like a real provider.
 *
 * Which recording: a target model id containing `reasoner` replays DeepSeek reasoner
 * captures (`reasoning_content` deltas, then content or a tool call); any other id replays
 * OpenAI chat captures. A request with `tools` gets the tool-call capture. Non-streaming
 * requests get the matching JSON body.
 *
 * Usage: a capture's `choices: []` usage chunk is sent only when the request asked for
 * `stream_options.include_usage`, as OpenAI does. The 2023 text capture predates usage
 * chunks; when usage is asked for, one is added in OpenAI's shape with completion tokens
 * counted as content deltas and prompt tokens estimated at 4 characters a token.
 */
import { Readable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import type { LiveUpstream } from '../../config/load.js';
import type { ChatSendRequest, Provider, UpstreamResponse } from '../types.js';
import { loadRecordings, type StreamRecording } from './recordings.js';

interface SimRequest {
  model?: string;
  messages?: unknown;
  tools?: unknown[];
  stream_options?: { include_usage?: boolean };
}

function usageChunk(rec: StreamRecording, req: SimRequest): Buffer {
  const prompt = Math.max(1, Math.ceil(JSON.stringify(req.messages ?? '').length / 4));
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

async function* replay(events: Buffer[], delayMs: number, signal: AbortSignal): AsyncGenerator<Buffer> {
  for (let i = 0; i < events.length; i++) {
    if (i > 0 && delayMs > 0) await sleep(delayMs, undefined, { signal });
    yield events[i]!;
  }
}

export function createSimulator(upstream: LiveUpstream): Provider {
  const recordings = loadRecordings();
  const { chunk_delay_ms: chunkDelay, first_byte_delay_ms: firstByteDelay } = upstream.simulator;

  return {
    async sendChat(req: ChatSendRequest): Promise<UpstreamResponse> {
      const body = JSON.parse(req.body) as SimRequest;
      const reasoning = /reasoner/i.test(body.model ?? '');
      const tools = Array.isArray(body.tools) && body.tools.length > 0;
      if (firstByteDelay > 0) await sleep(firstByteDelay, undefined, { signal: req.signal });
      if (!req.stream) {
        const json = reasoning ? recordings.reasoningJson : recordings.chatJson;
        return { statusCode: 200, headers: { 'content-type': 'application/json' }, body: Readable.from([json]) };
      }
      const rec = reasoning
        ? tools
          ? recordings.reasoningToolStream
          : recordings.reasoningStream
        : tools
          ? recordings.chatToolStream
          : recordings.chatStream;
      const stream = Readable.from(replay(plan(rec, body), chunkDelay, req.signal), { objectMode: false });
      return { statusCode: 200, headers: { 'content-type': 'text/event-stream; charset=utf-8' }, body: stream };
    },
    close: async () => {},
  };
}
