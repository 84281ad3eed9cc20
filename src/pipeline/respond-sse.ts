/**
 * Relays an upstream SSE stream to the client event by event, as bytes arrive, in any
 * inbound API's dialect (the API's stream reader says which events carry usage, end the
 * stream, or report an error; the examples below are chat's).
 *
 * - Event bytes are forwarded as received (no re-serialising); comments and `[DONE]` pass.
 * - Response headers are held until the first data event, so a failure before the first
 *   token can still become a normal JSON error (or, later, a failover).
 * - The `choices: []` usage chunk is dropped unless the client asked for
 *   `stream_options.include_usage` (the gateway always asks the upstream for it).
 * - A failure after the first byte (socket error, idle timeout, `event: error`, a chunk
 *   with a top-level `error`, an end without `[DONE]` or a finish reason, the gateway's
 *   shutdown past its drain deadline) ends the stream
 *   with one final error event in the API's dialect (`data: {"error":{…}}` for OpenAI's
 *   APIs, `event: error` for Anthropic's): the SDKs raise on it.
 */
import { once } from 'node:events';
import type { ServerResponse } from 'node:http';
import type { FastifyReply } from 'fastify';
import { GatewayError } from '../errors/codes.js';
import { classifiedAs, classifyFailure, isCallerFault, type Classified } from '../errors/classify.js';
import type { InboundApi } from '../apis/types.js';
import { SseFramer, type SseEvent } from '../sse/parse.js';
import type { UpstreamResponse } from '../providers/types.js';
import type { RequestRecord } from './context.js';
import { estimateUsage } from './estimate.js';
import { discardBody } from '../upstream/send.js';
import { ShuttingDown } from '../server/drain.js';

export const SSE_HEADERS = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-cache',
  'x-accel-buffering': 'no',
  connection: 'keep-alive',
} as const;

export interface SseRelayArgs {
  /** The stream's dialect: which events carry usage, end the stream or report errors. */
  readonly api: InboundApi;
  readonly reply: FastifyReply;
  readonly upstream: UpstreamResponse;
  readonly wantsUsage: boolean;
  readonly rec: RequestRecord;
  /** Extra response headers (request id, upstream, model). */
  readonly headers: Record<string, string>;
  /** Fires on client disconnect, or with a `ShuttingDown` reason at the drain deadline. */
  readonly signal: AbortSignal;
  /** Exact strings to scrub from relayed error messages. */
  readonly secrets: readonly (string | undefined)[];
  /** Longest wait for the first upstream event before giving up on this upstream (failover). */
  readonly firstTokenTimeoutMs: number;
  /** Called once, when the first event goes to the client. */
  readonly onCommit: () => void;
  /** The prompt as chat-style messages, tokenized for the input count only when the upstream reports no usage. */
  readonly messages: unknown;
}

export type SseRelayResult =
  | { readonly committed: true }
  /** Nothing was sent to the client; the caller may fail over or answer with JSON. */
  | { readonly committed: false; readonly classified: Classified; readonly error: GatewayError };

/**
 * How an upstream's in-stream error counts. After the first byte it just ends the stream.
 * Before it, nothing reached the client: a caller fault (classifyFailure's scope `request`)
 * goes back as a 400; anything else is the upstream failing to start, so it fails over
 * and counts toward the target's (or account's) health by its class.
 */
function inStreamFailure(err: GatewayError, committed: boolean): { classified: Classified; error: GatewayError } {
  if (committed) return { classified: classifiedAs('stream'), error: err };
  const classified = classifyFailure({ type: err.type, code: err.openaiCode, message: err.message });
  if (isCallerFault(classified)) {
    const caller = new GatewayError('GW_ERR_UPSTREAM_ERROR', { status: 400, message: err.message, type: 'invalid_request_error', openaiCode: err.openaiCode });
    return { classified, error: caller };
  }
  return { classified, error: err };
}

async function write(out: ServerResponse, buf: Buffer, signal: AbortSignal): Promise<void> {
  if (!out.write(buf)) await once(out, 'drain', { signal });
}

/**
 * Runs the relay until the upstream stream ends, fails, or the client leaves.
 * @throws the abort reason when the client disconnected (the caller records it).
 */
export async function relaySse(args: SseRelayArgs): Promise<SseRelayResult> {
  const { api, reply, upstream, wantsUsage, rec, signal } = args;
  const out = reply.raw;
  const framer = new SseFramer();
  const reader = api.streamReader(wantsUsage, args.secrets);
  let committed = false;
  let sawEnd = false;
  let sawUsage = false;
  /** Raw `data:` payloads of delta events, parsed and tokenized only if no usage comes. */
  const deltaEvents: string[] = [];
  let pending: Buffer[] = [];
  let failure: { classified: Classified; error: GatewayError } | null = null;

  const commit = (): void => {
    clearTimeout(firstTokenTimer);
    reply.hijack();
    out.writeHead(200, { ...SSE_HEADERS, ...args.headers });
    committed = true;
    rec.ttftMs = Date.now() - rec.startedAt;
    args.onCommit();
  };
  // Until the first event, a silent upstream is abandoned so the request can fail over.
  let firstTokenTimedOut = false;
  const firstTokenTimer = setTimeout(() => {
    firstTokenTimedOut = true;
    upstream.body.destroy(new Error('first token timeout'));
  }, args.firstTokenTimeoutMs);

  /** Sorts one event into the batch; returns an error when the stream must end. */
  const take = (ev: SseEvent, batch: Buffer[]): GatewayError | null => {
    const info = reader.inspect(ev);
    if (info.usage) {
      rec.usage = info.usage;
      rec.usageEstimated = false;
      sawUsage = true;
      deltaEvents.length = 0;
    }
    if (info.error) return info.error;
    if (info.end) sawEnd = true;
    if (info.drop) return null;
    if (!sawUsage && info.delta && ev.data !== null) deltaEvents.push(ev.data);
    batch.push(ev.raw);
    return null;
  };

  const flush = async (batch: Buffer[], hasData: boolean): Promise<void> => {
    if (!committed) {
      pending.push(...batch);
      if (!hasData) return;
      commit();
      batch = pending;
      pending = [];
    }
    if (batch.length === 1) await write(out, batch[0]!, signal);
    else if (batch.length > 1) await write(out, Buffer.concat(batch), signal);
  };

  try {
    for await (const chunk of upstream.body as AsyncIterable<Buffer>) {
      const batch: Buffer[] = [];
      let hasData = false;
      let err: GatewayError | null = null;
      for (const ev of framer.push(chunk)) {
        err = take(ev, batch);
        if (err) break;
        if (ev.data !== null) hasData = true;
      }
      // Events before an error in the same read still go out first.
      await flush(batch, hasData && batch.length > 0);
      if (err) {
        failure = inStreamFailure(err, committed);
        break;
      }
    }
    if (!failure) {
      const tail = framer.end();
      const batch: Buffer[] = [];
      if (tail) {
        const err = take(tail, batch);
        if (err) failure = inStreamFailure(err, committed);
      }
      if (!failure && !sawEnd) {
        failure = {
          classified: { class: 'stream', retryable: !committed, scope: 'target' },
          error: new GatewayError('GW_ERR_UPSTREAM_STREAM', { message: 'The upstream stream ended before the response was complete.' }),
        };
      }
      if (!failure) await flush(batch, true);
    }
  } catch (err) {
    // Shut down past the drain deadline after the first byte: the final error event below.
    const shutdown = signal.reason instanceof ShuttingDown && committed;
    if (signal.aborted && !shutdown) throw signal.reason;
    const classified: Classified = firstTokenTimedOut ? classifiedAs('stall') : classifyFailure({ thrown: err });
    const timedOut = classified.class === 'timeout' || classified.class === 'stall';
    failure = {
      classified: { class: timedOut ? classified.class : 'stream', retryable: !committed, scope: 'target' },
      error: shutdown
        ? new GatewayError('GW_ERR_SHUTTING_DOWN')
        : timedOut && !committed
          ? new GatewayError('GW_ERR_UPSTREAM_TIMEOUT', {
              message: firstTokenTimedOut ? 'The upstream sent no event within the first-token timeout.' : 'The upstream stream went idle before its first event.',
            })
          : new GatewayError('GW_ERR_UPSTREAM_STREAM', {
              message: timedOut ? 'The upstream stream went idle for too long.' : 'The upstream connection failed mid-stream.',
            }),
    };
  } finally {
    clearTimeout(firstTokenTimer);
    if (!sawUsage && (deltaEvents.length > 0 || committed)) {
      // No usage reported: count what was seen with the tokenizer, marked estimated (once the
      // stream reached the client the prompt was processed, even if no text came yet).
      try {
        rec.usage = await estimateUsage(api.deltaTexts(deltaEvents), args.messages);
      } catch {
        rec.usage = { input: 0, cached: 0, output: deltaEvents.length, reasoning: 0 };
      }
      rec.usageEstimated = true;
    }
  }

  if (failure) {
    discardBody(upstream.body);
    if (!committed) return { committed: false, ...failure };
    // A shutdown is the gateway's doing, not the upstream's.
    const cut = failure.error.code === 'GW_ERR_SHUTTING_DOWN';
    rec.errorClass = cut ? null : failure.classified.class;
    rec.outcome = cut ? 'gateway_error' : 'upstream_error';
    rec.status = 200;
    if (!out.destroyed) out.end(api.sseErrorFrame(failure.error));
    return { committed: true };
  }
  rec.status = 200;
  out.end();
  return { committed: true };
}
