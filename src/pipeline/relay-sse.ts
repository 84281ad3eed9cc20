/**
 * Relays an upstream SSE stream to the client as it arrives: the SSE framer splits the
 * bytes into events once, the attempt's translator turns each event into client frames
 * (a same-API translator hands back the event's own bytes), and this writes them.
 *
 * - Response headers are held until the first event that carries the answer (a preamble such
 *   as a response's `created` or a message's `message_start` waits with them), so a failure
 *   before the first token can still fail over (or become a JSON error).
 * - Until then, an upstream that sends nothing for `firstTokenTimeoutMs` has stalled: it is
 *   abandoned so the request can fail over.
 * - A failure after the first byte (the translator's error or cut-short verdict, a socket
 *   error, an idle timeout, the gateway's shutdown past its drain deadline) ends the stream
 *   with one final error event in the client API's dialect: the SDKs raise on it.
 * - Usage comes from the translator only; when the upstream reported none, the generated
 *   text seen is counted with the tokenizer and marked estimated.
 * - After the first byte, an upstream silent for `keepaliveMs` (long reasoning) gets a
 *   comment line sent for it, so proxies with idle timeouts keep the connection.
 * - Once the frames of the step marked `done` (the client API's terminal event: chat's
 *   `[DONE]`, Responses' `response.completed` / `response.incomplete`, Messages'
 *   `message_stop`) were written, the answer is delivered: the client's response ends at
 *   once and the relay stops reading, so whatever the client or the upstream does next
 *   (the client closes as Codex CLI does, the upstream lingers, errors or sends more) cannot
 *   turn a delivered answer into an abort or a failure. Every wire API reports its usage at
 *   or before that event (chat's usage chunk precedes `[DONE]`; Responses' is inside
 *   `response.completed`; Messages' last count is in `message_delta`), so nothing is left
 *   to read for the record; the rest of the upstream body is drained in the background
 *   (`releaseBody`).
 */
import { once } from 'node:events';
import type { ServerResponse } from 'node:http';
import type { FastifyReply } from 'fastify';
import { ShuttingDown } from '../errors/aborts.js';
import { afterFirstByte, classifyFailure } from '../errors/classify.js';
import { GatewayError } from '../errors/codes.js';
import type { UpstreamResponse } from '../providers/types.js';
import { EventTooLarge, SseFramer, terminated } from '../sse/parse.js';
import { gatewayFailure } from '../translate/failure.js';
import type { Failure, StreamStep, Translator } from '../translate/types.js';
import { discardBody, releaseBody } from '../upstream/send.js';
import { EMPTY_PROMPT, estimateUsage, type Prompt } from '../usage/estimate.js';
import type { Usage } from '../usage/usage.js';
import { GeneratedText } from './generated-text.js';
import type { Relayed } from './outcome.js';

export const SSE_HEADERS = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-cache',
  'x-accel-buffering': 'no',
  connection: 'keep-alive',
} as const;

export interface SseRelayArgs {
  readonly translator: Translator;
  readonly reply: FastifyReply;
  readonly upstream: UpstreamResponse;
  /** Extra response headers (request id, upstream, model). */
  readonly headers: Record<string, string>;
  /** Fires on client disconnect, or with a `ShuttingDown` reason at the drain deadline. */
  readonly signal: AbortSignal;
  /** Longest wait for the first event with data before giving up on this upstream (failover), ms. */
  readonly firstTokenTimeoutMs: number;
  /** Epoch ms the request arrived (TTFT is measured from it). */
  readonly startedAt: number;
  /** The final event of a stream broken after it started, in the client API's dialect. */
  readonly errorFrame: (err: GatewayError) => Buffer;
  /** The request's prompt, tokenized only when the upstream reports no usage. */
  readonly prompt: Prompt;
  /** Called once, when the first event goes to the client. */
  readonly onCommit: () => void;
  /** After the first event: a comment line is written when nothing else was for this long, ms (0: never). */
  readonly keepaliveMs?: number;
  /** Largest upstream event taken, bytes (`routing.max_event_bytes`); default sse/parse.ts MAX_EVENT_BYTES. */
  readonly maxEventBytes?: number;
}

/** The keep-alive comment: a line SSE clients ignore (WHATWG HTML, "Server-sent events": lines starting with a colon). */
const KEEPALIVE = Buffer.from(': keep-alive\n\n');

async function write(out: ServerResponse, buf: Buffer, signal: AbortSignal): Promise<void> {
  if (!out.write(buf)) await once(out, 'drain', { signal });
}

/** The failure of a thrown error while reading the upstream (socket error, idle timeout, stall). */
function readFailure(err: unknown, stalled: boolean, committed: boolean): Failure {
  if (stalled) {
    return {
      classified: classifyFailure({ local: 'stall' }),
      error: new GatewayError('GW_ERR_UPSTREAM_TIMEOUT', { message: 'The upstream sent no event within the first-token timeout.' }),
    };
  }
  if (err instanceof EventTooLarge) {
    return {
      classified: classifyFailure({ local: 'unreadable' }),
      error: new GatewayError('GW_ERR_UPSTREAM_BAD_RESPONSE', {
        message: `The upstream sent an event larger than ${err.limit} bytes (routing.max_event_bytes); the stream was ended.`,
      }),
    };
  }
  const classified = classifyFailure({ thrown: err });
  // A thrown error with no network code came from our own code (a translator), not the upstream.
  if (classified.class === 'gateway') return gatewayFailure(err);
  const timeout = classified.class === 'timeout';
  const error =
    timeout && !committed
      ? new GatewayError('GW_ERR_UPSTREAM_TIMEOUT', { message: 'The upstream stream went idle before its first event.' })
      : new GatewayError('GW_ERR_UPSTREAM_STREAM', {
          message: timeout ? 'The upstream stream went idle for too long.' : 'The upstream connection failed mid-stream.',
        });
  return { classified, error };
}

/** Runs the relay until the upstream stream ends, fails, or the client leaves. Never throws. */
export async function relaySse(args: SseRelayArgs): Promise<Relayed> {
  const { translator, reply, upstream, signal } = args;
  const out = reply.raw;
  const framer = new SseFramer(args.maxEventBytes);
  let committed = false;
  let ttftMs: number | null = null;
  let usage: Usage | null = null;
  /** Generated text, for an estimate when the answer does not complete with its usage. */
  const generated = new GeneratedText(translator);
  let pending: Buffer[] = [];
  let failure: Failure | null = null;
  let aborted: unknown = null;
  /** A step marked `done` was taken: its frames hold the client API's terminal event. */
  let done = false;

  // Keep-alives go out between whole events only (every write below is of whole events), so
  // the events' own bytes stay as the upstream sent them.
  let lastWrite = Date.now();
  const keepaliveMs = args.keepaliveMs ?? 0;
  const keepalive =
    keepaliveMs > 0
      ? setInterval(
          () => {
            if (!committed || Date.now() - lastWrite < keepaliveMs || out.writableEnded || out.writableNeedDrain) return;
            lastWrite = Date.now();
            out.write(KEEPALIVE);
          },
          Math.max(50, Math.floor(keepaliveMs / 4)),
        )
      : undefined;
  keepalive?.unref();

  let stalled = false;
  const firstTokenTimer = setTimeout(() => {
    stalled = true;
    upstream.body.destroy(new Error('first token timeout'));
  }, args.firstTokenTimeoutMs);

  /** Collects one step into the batch; returns whether it carried client data. */
  const take = (step: StreamStep, hasData: boolean, batch: Buffer[]): boolean => {
    if (step.usage) usage = step.usage;
    generated.add(step);
    if (step.error) failure = step.error;
    if (step.done) done = true;
    if (!step.frames || step.frames.length === 0) return false;
    for (const f of step.frames) batch.push(f);
    return hasData && step.hold !== true;
  };

  const flush = async (batch: Buffer[], hasData: boolean): Promise<void> => {
    if (!committed) {
      for (const b of batch) pending.push(b);
      if (!hasData) return;
      clearTimeout(firstTokenTimer);
      reply.hijack();
      out.writeHead(200, { ...SSE_HEADERS, ...args.headers });
      committed = true;
      ttftMs = Date.now() - args.startedAt;
      args.onCommit();
      batch = pending;
      pending = [];
    }
    if (batch.length > 0) lastWrite = Date.now();
    if (batch.length === 1) await write(out, batch[0]!, signal);
    else if (batch.length > 1) await write(out, Buffer.concat(batch), signal);
  };

  try {
    // Leaving the loop early does not destroy the body: after a delivered answer the rest
    // is drained (the connection can serve another request); any other early exit discards it.
    for await (const chunk of upstream.body.iterator({ destroyOnReturn: false }) as AsyncIterable<Buffer>) {
      const batch: Buffer[] = [];
      let hasData = false;
      for (const ev of framer.push(chunk)) {
        if (take(translator.event(ev), ev.data !== null, batch)) hasData = true;
        if (failure || done) break;
      }
      // Frames before an error in the same read still go out first.
      await flush(batch, hasData);
      if (failure || done) break;
    }
    if (!failure && !done) {
      const batch: Buffer[] = [];
      // An unterminated last event gets its blank line, so a frame added after it stays apart.
      const flushed = framer.end();
      const tail = flushed && terminated(flushed);
      let hasData = tail !== null && take(translator.event(tail), tail.data !== null, batch);
      if (!failure && take(translator.end(), true, batch)) hasData = true;
      await flush(batch, hasData);
    }
  } catch (err) {
    if (signal.aborted) aborted = signal.reason;
    else failure = readFailure(err, stalled, committed);
  } finally {
    clearTimeout(firstTokenTimer);
    clearInterval(keepalive);
  }

  const complete = failure === null && aborted === null;
  // The estimate needs the text of the events the translator skipped reading.
  if (!(complete && usage !== null)) generated.readDeferred();
  return finishRelay(args, {
    committed,
    failure,
    aborted,
    ttftMs,
    ...(await counted(usage, complete, committed, generated.text, generated.reasoning, args.prompt)),
  });
}

/**
 * The usage to record. A complete answer's is the upstream's own. Otherwise (the upstream
 * reported none, or the stream was cut before its final count) what was seen is counted
 * with the tokenizer and marked estimated: everything when the upstream reported no usage
 * (once the stream reached the client the prompt was processed, even if no text came yet),
 * else the upstream's input counts with the larger of the output it had reported so far and
 * the count of the text seen.
 */
async function counted(
  usage: Usage | null,
  complete: boolean,
  committed: boolean,
  text: string[],
  reasoning: string[],
  prompt: Prompt,
): Promise<{ usage: Usage | null; estimated: boolean }> {
  const seen = text.length > 0 || reasoning.length > 0;
  if (usage !== null && complete) return { usage, estimated: false };
  if (!seen && !committed) return { usage, estimated: false };
  const est = await estimateUsage({ output: text, reasoning }, usage === null ? prompt : EMPTY_PROMPT).catch(() => ({
    input: 0,
    cached: 0,
    output: text.length,
    reasoning: 0,
  }));
  if (usage === null) return { usage: est, estimated: true };
  const output = Math.max(usage.output, est.output);
  return { usage: { ...usage, output, reasoning: Math.min(output, Math.max(usage.reasoning, est.reasoning)) }, estimated: true };
}

/** Ends the client's side of the stream according to how the relay went. */
function finishRelay(args: SseRelayArgs, r: Relayed): Relayed {
  const out = args.reply.raw;
  const body = args.upstream.body;
  if (r.aborted !== null) {
    discardBody(body);
    // Cut at the drain deadline after the first byte: the client gets a final error event.
    if (r.committed && r.aborted instanceof ShuttingDown && !out.destroyed) out.end(args.errorFrame(new GatewayError('GW_ERR_SHUTTING_DOWN')));
    return r;
  }
  if (r.failure) {
    discardBody(body);
    if (!r.committed) return r;
    const failure = { ...r.failure, classified: afterFirstByte(r.failure.classified) };
    if (!out.destroyed) out.end(args.errorFrame(failure.error));
    return { ...r, failure };
  }
  out.end();
  // Delivered before the upstream ended its body: nothing more is needed from it, but the
  // provider counts the call until the body ends, so the slot waits for that (`drained`).
  if (!body.readableEnded) return { ...r, drained: releaseBody(body) };
  return r;
}
