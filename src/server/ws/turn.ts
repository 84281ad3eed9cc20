/**
 * One turn of a Responses API WebSocket (routes/responses-ws.ts): a `response.create`
 * frame's body, run as a `POST /v1/responses` of the gateway itself, in-process (Fastify
 * `inject`, light-my-request's `payloadAsStream`), with the upgrade request's headers.
 *
 * Why in-process rather than a second pipeline: the turn then goes through exactly what an
 * HTTP call does (the drain's refusal, the body guard, auth with the key of the upgrade,
 * schema checks, the model allow-list, key limits and budgets, routing, shedding, failover,
 * the journal for `previous_response_id`, tracing, and `finish`'s one record), with no
 * second copy to keep in step. What the route writes (SSE frames, or a JSON error before the
 * stream) is read back here: each SSE event's data goes out as one text frame, as OpenAI's
 * WebSocket mode sends the events of the stream; an answer that is not a stream becomes one
 * `error` event. Every turn is its own request: its own request id (the turn's id, sent as
 * `x-request-id`), log line, metrics and ledger row, TTFT measured by the relay from the
 * turn's arrival.
 *
 * Aborts: light-my-request ends only the request stream on its `signal`; the pipeline
 * listens for its response closing, as it would for a real client. The hook in
 * responses-ws.ts destroys the injected response of a turn whose client left, so the
 * pipeline books it 499 and cancels the upstream call like any disconnect.
 */
import { randomUUID } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import type { Readable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { GatewayError } from '../../errors/codes.js';
import { errorBody } from '../../errors/render.js';
import { SseFramer, type SseEvent } from '../../sse/parse.js';
import type { Drain } from '../lifecycle/drain.js';

/** The turns in flight, by request id, with the signal that fires when their client leaves. */
export type TurnRegistry = Map<string, AbortSignal>;

/** Headers of the upgrade request a turn does not carry: the handshake's, hop-by-hop ones, the body's, the upgrade's own request id. */
const NOT_PASSED = new Set([
  'connection',
  'upgrade',
  'keep-alive',
  'te',
  'trailer',
  'transfer-encoding',
  'proxy-connection',
  'content-length',
  'content-type',
  'expect',
  'x-request-id',
]);

/** The upgrade request's headers as each turn sends them. */
export function turnHeaders(upgrade: IncomingHttpHeaders): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(upgrade)) {
    if (value === undefined || NOT_PASSED.has(name) || name.startsWith('sec-websocket-')) continue;
    out[name] = value;
  }
  return out;
}

/** Answer headers an error event carries (its `headers`, which Codex reads as an HTTP answer's: retry delay, limits). */
const EVENT_HEADERS = /^(retry-after|x-request-id|x-should-retry|x-ratelimit-|x-switchyard-)/;

/**
 * The WebSocket `error` event of a turn that failed before its stream started: `type`,
 * `status`, `error` (`type`, `code`, `message`, `param`) and `headers` (OpenAI guide
 * "WebSocket mode"; the shape Codex's responses_websocket.rs maps back onto the HTTP status).
 */
export function errorEvent(status: number, error: unknown, headers: Record<string, string> = {}): string {
  return JSON.stringify({ type: 'error', status, error, ...(Object.keys(headers).length > 0 ? { headers } : {}) });
}

/** The error event of a gateway error; `requestId` goes into its headers when it belongs to a turn. */
export function gatewayErrorEvent(err: GatewayError, requestId?: string): string {
  return errorEvent(err.status, errorBody(err).error, { ...err.headers, ...(requestId ? { 'x-request-id': requestId } : {}) });
}

/** The events after which the client expects nothing more of the turn. */
const TERMINAL = new Set(['response.completed', 'response.incomplete', 'response.failed', 'error']);

/** What a turn needs of its socket and of the gateway. */
export interface TurnEnv {
  /** The gateway app (the turn is injected into its `POST /v1/responses`). */
  readonly app: FastifyInstance;
  readonly registry: TurnRegistry;
  readonly drain: Drain;
  readonly headers: Record<string, string | string[]>;
  readonly remoteAddress: string;
  /** Sends one text frame; resolves once the socket took it (a slow client holds the relay back). */
  send(text: string): Promise<void>;
}

/** One `response.create`, run once with `run()`. */
export class Turn {
  readonly id = randomUUID();
  private readonly left = new AbortController();
  /** Set once the turn's final event went to the client. */
  private terminal = false;

  constructor(
    private readonly env: TurnEnv,
    private readonly body: Record<string, unknown>,
  ) {}

  /** The client left: the turn is aborted, unless its final event already went out (then it just ends). */
  clientLeft(): void {
    if (!this.terminal) this.left.abort();
  }

  /** Runs the turn to its end; never throws. */
  async run(): Promise<void> {
    const { env } = this;
    const release = env.drain.holdRequest();
    env.registry.set(this.id, this.left.signal);
    try {
      let res;
      try {
        res = await env.app.inject({
          method: 'POST',
          url: '/v1/responses',
          headers: { ...env.headers, 'content-type': 'application/json', 'x-request-id': this.id },
          payload: JSON.stringify(this.body),
          payloadAsStream: true,
          remoteAddress: env.remoteAddress,
        });
      } catch (err) {
        // Destroyed before its answer began (the client left: the pipeline booked it), or the app is closing.
        const closing = (err as { code?: unknown }).code === 'FST_ERR_REOPENED_CLOSE_SERVER';
        if (!this.left.signal.aborted) await this.fail(new GatewayError(closing ? 'GW_ERR_SHUTTING_DOWN' : 'GW_ERR_INTERNAL'));
        return;
      }
      const stream = res.stream();
      const type = String(res.headers['content-type'] ?? '');
      if (res.statusCode === 200 && type.startsWith('text/event-stream')) await this.relay(stream);
      else await this.answer(res.statusCode, res.headers, stream);
    } finally {
      env.registry.delete(this.id);
      release();
    }
  }

  /** Sends each event of the turn's SSE answer as a text frame. */
  private async relay(stream: Readable): Promise<void> {
    const framer = new SseFramer();
    try {
      for await (const chunk of stream as AsyncIterable<Buffer>) {
        for (const ev of framer.push(chunk)) await this.forward(ev);
      }
      const tail = framer.end();
      if (tail) await this.forward(tail);
    } catch {
      // The answer was destroyed: the client left, or the pipeline cut the stream.
    }
    if (!this.terminal && !this.left.signal.aborted)
      await this.fail(new GatewayError('GW_ERR_INTERNAL', { message: 'The response stream ended before its final event.' }));
  }

  private async forward(ev: SseEvent): Promise<void> {
    // Comment lines (the relay's keep-alives) have no data; the socket has pings of its own.
    if (ev.data === null || !ev.data.startsWith('{')) return;
    const type = ev.event ?? eventType(ev.data);
    if (type !== null && TERMINAL.has(type)) this.terminal = true;
    await this.env.send(ev.data);
  }

  /** A JSON answer (an error before the stream began, or a body that is not a stream): one event. */
  private async answer(status: number, headers: Record<string, unknown>, stream: Readable): Promise<void> {
    const parts: Buffer[] = [];
    try {
      for await (const chunk of stream as AsyncIterable<Buffer>) parts.push(chunk);
    } catch {
      return; // the client left
    }
    let body: Record<string, unknown> | null = null;
    try {
      body = JSON.parse(Buffer.concat(parts).toString('utf8')) as Record<string, unknown>;
    } catch {
      // not JSON: described below
    }
    this.terminal = true;
    if (status === 200 && body) return this.env.send(JSON.stringify({ type: 'response.completed', response: body }));
    const passed: Record<string, string> = {};
    for (const [name, value] of Object.entries(headers)) if (EVENT_HEADERS.test(name) && typeof value === 'string') passed[name] = value;
    const error = body?.['error'] ?? errorBody(new GatewayError('GW_ERR_INTERNAL', { message: `The gateway answered ${status} without an error body.` })).error;
    await this.env.send(errorEvent(status, error, passed));
  }

  private async fail(err: GatewayError): Promise<void> {
    this.terminal = true;
    await this.env.send(gatewayErrorEvent(err, this.id));
  }
}

/** The `type` of an event whose SSE block named none (read from its JSON). */
function eventType(data: string): string | null {
  try {
    const t = (JSON.parse(data) as { type?: unknown }).type;
    return typeof t === 'string' ? t : null;
  } catch {
    return null;
  }
}
