/**
 * One Responses API WebSocket connection (routes/responses-ws.ts): reads the client's
 * frames, runs each `response.create` as a turn (server/ws/turn.ts), one at a time, and
 * keeps the socket healthy.
 *
 * - A connection runs its responses sequentially, one in flight (OpenAI guide "WebSocket
 *   mode": no multiplexing on one connection); a `response.create` sent while one runs waits
 *   its turn, up to MAX_QUEUED of them; past that it gets an `error` event.
 * - A frame that is not a `response.create` (not text, not a JSON object, another `type`,
 *   larger than `server.body_limit_bytes`, `background: true`) gets an `error` event in the
 *   WebSocket error shape, and the socket stays usable. `response.processed` (Codex's
 *   acknowledgement of a response) is taken and ignored: the gateway keeps no per-socket state.
 * - The client leaving aborts the turn in flight (booked 499 by the pipeline) unless its
 *   final event was already sent; waiting frames are dropped.
 * - A ping every PING_MS; a client that did not answer the previous one is cut. With no turn
 *   and no frame for `idle_timeout_ms`, the socket is closed (1000).
 * - Once the gateway drains, the socket closes (1001, going away) when it has no turn left.
 */
import type { FastifyBaseLogger } from 'fastify';
import type { RawData, WebSocket } from 'ws';
import { GatewayError } from '../../errors/codes.js';
import { recordWebSocketTurn, trackWebSocket } from '../../metrics/record.js';
import type { WebSocketMetrics } from '../../metrics/websocket.js';
import { gatewayErrorEvent, Turn, type TurnEnv } from './turn.js';

/** `response.create` frames that may wait behind the one running. */
const MAX_QUEUED = 16;
/** Between pings, ms (a client that answered none since the last one is gone). */
const PING_MS = 30_000;
/** Past this many bytes buffered for the client, a frame is sent only once the socket took the previous ones. */
const HIGH_WATER = 1024 * 1024;

/** What a connection is opened with. */
export interface SessionEnv {
  readonly turn: Omit<TurnEnv, 'send'>;
  /** Largest `response.create` taken (`server.body_limit_bytes`). */
  readonly maxFrameBytes: number;
  readonly idleTimeoutMs: number;
  readonly metrics: WebSocketMetrics;
  readonly log: FastifyBaseLogger;
}

const invalid = (message: string, param: string | null = null): GatewayError => new GatewayError('GW_ERR_INVALID_REQUEST', { message, param });

export class ResponsesSocket {
  private readonly waiting: Record<string, unknown>[] = [];
  private current: Turn | null = null;
  private draining = false;
  private closed = false;
  private answeredPing = true;
  private turns = 0;
  private readonly openedAt = Date.now();
  private idleTimer: NodeJS.Timeout | undefined;
  private readonly pingTimer: NodeJS.Timeout;
  private readonly env: TurnEnv;

  constructor(
    private readonly ws: WebSocket,
    private readonly session: SessionEnv,
    private readonly onClosed: (s: ResponsesSocket) => void,
  ) {
    this.env = { ...session.turn, send: (text) => this.send(text) };
    trackWebSocket(session.metrics, 1);
    ws.on('message', (data, isBinary) => this.onFrame(data, isBinary));
    ws.on('pong', () => (this.answeredPing = true));
    ws.once('close', (code) => this.onClose(code));
    this.pingTimer = setInterval(() => this.ping(), PING_MS);
    this.pingTimer.unref();
    this.armIdle();
  }

  /** The gateway is draining: close now if idle, else once the turns left are done. */
  drain(): void {
    this.draining = true;
    this.closeIfDone();
  }

  /** Closes the socket with `code` (1000 normal, 1001 going away); cut if the client does not answer within 1 s. */
  close(code: number, reason: string): void {
    if (this.ws.readyState !== this.ws.OPEN) return;
    this.ws.close(code, reason);
    setTimeout(() => this.ws.terminate(), 1_000).unref();
  }

  private onFrame(data: RawData, isBinary: boolean): void {
    this.answeredPing = true;
    this.armIdle();
    const size = Array.isArray(data) ? data.reduce((n, b) => n + b.length, 0) : data.byteLength;
    if (size > this.session.maxFrameBytes) {
      const message = `The event is ${size} bytes; this gateway takes up to ${this.session.maxFrameBytes} (server.body_limit_bytes).`;
      return void this.send(gatewayErrorEvent(new GatewayError('GW_ERR_BODY_TOO_LARGE', { message })));
    }
    if (isBinary) return void this.send(gatewayErrorEvent(invalid('Send events as JSON text frames, not binary ones.')));
    const text = Buffer.isBuffer(data) ? data.toString('utf8') : Buffer.from(data as ArrayBuffer).toString('utf8');
    let event: unknown;
    try {
      event = JSON.parse(text);
    } catch {
      return void this.send(
        gatewayErrorEvent(new GatewayError('GW_ERR_INVALID_JSON', { message: 'The event is not valid JSON: send one JSON object per text frame.' })),
      );
    }
    if (!event || typeof event !== 'object' || Array.isArray(event))
      return void this.send(gatewayErrorEvent(invalid('The event must be a JSON object with a `type`.', 'type')));
    const { type, ...body } = event as Record<string, unknown>;
    if (type === 'response.processed') return;
    if (type !== 'response.create') {
      const named = typeof type === 'string' ? `'${type.slice(0, 64)}'` : 'missing';
      return void this.send(gatewayErrorEvent(invalid(`Unknown event type (${named}): this socket takes 'response.create'.`, 'type')));
    }
    if (body['background'] === true)
      return void this.send(gatewayErrorEvent(invalid('background is not supported over WebSocket: send the request as POST /v1/responses.', 'background')));
    if (this.waiting.length >= MAX_QUEUED) {
      return void this.send(
        gatewayErrorEvent(
          invalid(
            `${MAX_QUEUED} response.create events are already waiting: a connection runs one response at a time; wait for the final event, or open another connection.`,
          ),
        ),
      );
    }
    // Every turn streams (the event stream is the socket); `stream` is not sent over WebSocket.
    this.waiting.push({ ...body, stream: true });
    this.next();
  }

  private next(): void {
    if (this.current || this.closed) return;
    const body = this.waiting.shift();
    if (!body) return this.closeIfDone();
    const turn = new Turn(this.env, body);
    this.current = turn;
    this.turns++;
    recordWebSocketTurn(this.session.metrics);
    void turn.run().finally(() => {
      this.current = null;
      this.armIdle();
      this.next();
    });
  }

  private closeIfDone(): void {
    if (this.draining && !this.current && this.waiting.length === 0) this.close(1001, 'the gateway is shutting down');
  }

  private armIdle(): void {
    clearTimeout(this.idleTimer);
    if (this.closed) return;
    this.idleTimer = setTimeout(() => {
      if (this.current || this.waiting.length > 0) this.armIdle();
      else this.close(1000, `idle for ${this.session.idleTimeoutMs} ms`);
    }, this.session.idleTimeoutMs);
    this.idleTimer.unref();
  }

  private ping(): void {
    if (!this.answeredPing) return void this.ws.terminate();
    this.answeredPing = false;
    this.ws.ping();
  }

  private async send(text: string): Promise<void> {
    const { ws } = this;
    if (ws.readyState !== ws.OPEN) return;
    if (ws.bufferedAmount < HIGH_WATER) return void ws.send(text);
    await new Promise<void>((resolve) => ws.send(text, () => resolve()));
  }

  private onClose(code: number): void {
    this.closed = true;
    clearTimeout(this.idleTimer);
    clearInterval(this.pingTimer);
    this.waiting.length = 0;
    this.current?.clientLeft();
    trackWebSocket(this.session.metrics, -1);
    this.session.log.info({ turns: this.turns, duration_ms: Date.now() - this.openedAt, code }, 'websocket closed');
    this.onClosed(this);
  }
}
