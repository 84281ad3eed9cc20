/**
 * A Responses API WebSocket client for tests (the `ws` library, as Codex's own client speaks
 * the protocol): opens `GET /v1/responses` with an upgrade, sends `response.create` frames,
 * and reads the server's events one text frame at a time.
 */
import WebSocket from 'ws';
import { CLIENT_KEY } from './gateway.js';

export type WsEvent = Record<string, unknown> & { type: string };

/** The events that end a turn. */
const TERMINAL = new Set(['response.completed', 'response.incomplete', 'response.failed', 'error']);

export class WsClient {
  readonly events: WsEvent[] = [];
  private read = 0;
  private waiter: (() => void) | null = null;
  /** The close code, once closed. */
  closeCode: number | null = null;

  private constructor(readonly ws: WebSocket) {
    ws.on('message', (data) => {
      this.events.push(JSON.parse(String(data)) as WsEvent);
      this.waiter?.();
    });
    ws.on('close', (code) => {
      this.closeCode = code;
      this.waiter?.();
    });
  }

  /** Opens a socket on `url` (the gateway's http URL) with the bearer `key`; rejects on a refused upgrade. */
  static open(url: string, key = CLIENT_KEY, headers: Record<string, string> = {}): Promise<WsClient> {
    const ws = new WebSocket(`${url.replace(/^http/, 'ws')}/v1/responses`, {
      headers: { authorization: `Bearer ${key}`, 'openai-beta': 'responses_websockets=2026-02-06', ...headers },
    });
    return new Promise((resolve, reject) => {
      ws.once('open', () => resolve(new WsClient(ws)));
      ws.once('unexpected-response', (_req, res) => reject(new Error(`upgrade answered ${res.statusCode}`)));
      ws.once('error', reject);
    });
  }

  /** Sends a `response.create` with `body` (or any raw frame as a string). */
  send(frame: Record<string, unknown> | string): void {
    this.ws.send(typeof frame === 'string' ? frame : JSON.stringify({ type: 'response.create', ...frame }));
  }

  /** The next event not read yet (waits up to `ms`). */
  async next(ms = 5000): Promise<WsEvent> {
    const end = Date.now() + ms;
    while (this.read >= this.events.length) {
      if (this.closeCode !== null) throw new Error(`socket closed (${this.closeCode}) while waiting for an event`);
      const left = end - Date.now();
      if (left <= 0) throw new Error('timed out waiting for an event');
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, left);
        this.waiter = () => {
          clearTimeout(t);
          resolve();
        };
      });
      this.waiter = null;
    }
    return this.events[this.read++]!;
  }

  /** Reads events up to and including the turn's final one. */
  async untilTerminal(ms = 5000): Promise<WsEvent[]> {
    const out: WsEvent[] = [];
    for (;;) {
      const ev = await this.next(ms);
      out.push(ev);
      if (TERMINAL.has(ev.type)) return out;
    }
  }

  /** Sends one turn and reads its events. */
  async turn(body: Record<string, unknown>, ms = 5000): Promise<WsEvent[]> {
    this.send(body);
    return this.untilTerminal(ms);
  }

  /** Resolves with the close code once the socket closed (waits up to `ms`). */
  async closed(ms = 5000): Promise<number> {
    const end = Date.now() + ms;
    while (this.closeCode === null) {
      if (Date.now() > end) throw new Error('timed out waiting for the socket to close');
      await new Promise((r) => setTimeout(r, 10));
    }
    return this.closeCode;
  }

  close(): void {
    this.ws.close();
  }
}

/** The HTTP status a refused upgrade got, and its body. */
export function refusedUpgrade(url: string, headers: Record<string, string>): Promise<{ status: number; body: string }> {
  const ws = new WebSocket(`${url.replace(/^http/, 'ws')}/v1/responses`, { headers });
  return new Promise((resolve, reject) => {
    ws.once('open', () => {
      ws.close();
      reject(new Error('the upgrade was accepted'));
    });
    ws.once('unexpected-response', (_req, res) => {
      let body = '';
      res.on('data', (d: Buffer) => (body += d.toString('utf8')));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    ws.once('error', (err) => reject(err));
  });
}
