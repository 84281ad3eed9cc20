/**
 * A scripted fake provider on loopback. Each request is answered by the current script
 * (status, headers, JSON body, or a list of streamed writes with delays and a socket
 * destroy), and recorded (headers, body, whether the client aborted and when).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gzipSync } from 'node:zlib';

export type Step =
  | string
  | Buffer
  /** Pause before the next write. */
  | { delayMs: number }
  /** Destroy the socket (a reset mid-stream). */
  | { destroy: true };

export interface ScriptedReply {
  status?: number;
  headers?: Record<string, string>;
  /** JSON or raw body for a plain response. */
  body?: unknown;
  /** Streamed writes; when present the response is written step by step. */
  steps?: Step[];
  /** Delay before the status line, ms. */
  delayMs?: number;
  /** gzip the plain body and label it. */
  gzip?: boolean;
}

export interface ReceivedRequest {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: string;
  /** The body's bytes as received (a compressed body is not valid UTF-8). */
  bytes: Buffer;
  json: Record<string, unknown> | undefined;
  receivedAt: number;
  /** Set when the connection closed before the reply finished. */
  abortedAt: number | null;
  finished: boolean;
}

export type Script = (req: ReceivedRequest, index: number) => ScriptedReply | Promise<ScriptedReply>;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export class FakeUpstream {
  readonly requests: ReceivedRequest[] = [];
  private server: Server;
  private script: Script = () => ({ status: 500, body: { error: { message: 'no script' } } });
  private sockets = new Set<import('node:net').Socket>();
  url = '';
  /** Requests received whose response has not closed yet (the one a script is answering included). */
  inFlight = 0;
  /** The most requests in flight at once. */
  peakInFlight = 0;

  constructor() {
    this.server = createServer((req, res) => void this.handle(req, res));
    this.server.on('connection', (s) => {
      this.sockets.add(s);
      s.on('close', () => this.sockets.delete(s));
    });
  }

  /** Starts listening on 127.0.0.1 and a free port. */
  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  /** Replaces the script for later requests. */
  on(script: Script): this {
    this.script = script;
    return this;
  }

  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const parts: Buffer[] = [];
    for await (const c of req) parts.push(c as Buffer);
    const bytes = Buffer.concat(parts);
    const body = bytes.toString('utf8');
    let json: Record<string, unknown> | undefined;
    try {
      json = JSON.parse(body) as Record<string, unknown>;
    } catch {
      json = undefined;
    }
    const rec: ReceivedRequest = {
      method: req.method ?? '',
      url: req.url ?? '',
      headers: req.headers,
      body,
      bytes,
      json,
      receivedAt: Date.now(),
      abortedAt: null,
      finished: false,
    };
    this.requests.push(rec);
    this.inFlight++;
    this.peakInFlight = Math.max(this.peakInFlight, this.inFlight);
    res.on('close', () => {
      this.inFlight--;
      if (!res.writableFinished) rec.abortedAt = Date.now();
    });
    const reply = await this.script(rec, this.requests.length - 1);
    if (reply.delayMs) await sleep(reply.delayMs);
    if (res.destroyed) return;
    if (reply.steps) {
      res.writeHead(reply.status ?? 200, { 'content-type': 'text/event-stream', ...reply.headers });
      res.flushHeaders();
      for (const step of reply.steps) {
        if (res.destroyed) return;
        if (typeof step === 'string' || Buffer.isBuffer(step)) res.write(step);
        else if ('delayMs' in step) await sleep(step.delayMs);
        else {
          res.socket?.destroy();
          return;
        }
      }
      res.end();
      rec.finished = true;
      return;
    }
    let payload: Buffer =
      typeof reply.body === 'string' ? Buffer.from(reply.body) : Buffer.isBuffer(reply.body) ? reply.body : Buffer.from(JSON.stringify(reply.body ?? {}));
    const headers: Record<string, string> = { 'content-type': 'application/json', ...reply.headers };
    if (reply.gzip) {
      payload = gzipSync(payload);
      headers['content-encoding'] = 'gzip';
    }
    res.writeHead(reply.status ?? 200, headers);
    res.end(payload);
    rec.finished = true;
  }
}
