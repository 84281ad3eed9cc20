/**
 * The simulator as a standalone OpenAI-compatible server: N independent provider accounts
 * on one port, so a benchmark or a test can go "direct" to a simulated account, or point a
 * gateway's `openai-compatible` upstreams at them. Each account is its own simulator
 * instance (`createSimulator`) with its own throttle window, PRNG (seeded `seed + n - 1`)
 * and stats.
 *
 *   POST /acct-<n>/v1/chat/completions   account n (1-based); /v1/chat/completions is account 1
 *   GET  /health                         {"ok":true,"accounts":N}
 *   GET  /stats                          per-account counters (see ThrottleStats)
 *   POST /reset                          clears every account's throttle state and stats
 *
 * Any API key is accepted. A client that disconnects aborts its simulated request (which
 * leaves the account's window at once).
 */
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pipeline } from 'node:stream/promises';
import type { SimulatorConfig } from '../../config/schema.js';
import { createSimulator, type SimulatorProvider, type ThrottleStats } from './index.js';

export interface SimulatorServerOptions {
  /** Simulator settings every account uses (`seed` is offset per account). */
  readonly simulator: SimulatorConfig;
  /** Number of accounts, `acct-1` … `acct-N`. Default 4. */
  readonly accounts?: number;
  /** Default 0 (a free port). */
  readonly port?: number;
  /** Default 127.0.0.1. */
  readonly host?: string;
  /** Largest accepted request body. Default 32 MiB. */
  readonly bodyLimitBytes?: number;
}

export interface SimulatorServer {
  /** `http://host:port`, no trailing slash. */
  readonly url: string;
  readonly port: number;
  readonly accounts: readonly SimulatorProvider[];
  stats(): Record<string, ThrottleStats>;
  reset(): void;
  close(): Promise<void>;
}

const ROUTE = /^(?:\/acct-(\d+))?\/v1\/chat\/completions$/;

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

function sendError(res: ServerResponse, status: number, message: string, code: string | null, type = 'invalid_request_error'): void {
  sendJson(res, status, { error: { message, type, param: null, code } });
}

class TooLarge extends Error {}

async function readBody(req: IncomingMessage, limit: number): Promise<string> {
  const parts: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > limit) throw new TooLarge();
    parts.push(chunk as Buffer);
  }
  return Buffer.concat(parts).toString('utf8');
}

/** Starts the server; resolves once it listens. */
export async function startSimulatorServer(opts: SimulatorServerOptions): Promise<SimulatorServer> {
  const count = opts.accounts ?? 4;
  if (!Number.isInteger(count) || count < 1) throw new Error(`accounts must be a positive integer, got ${count}`);
  const limit = opts.bodyLimitBytes ?? 32 * 1024 * 1024;
  const accounts = Array.from({ length: count }, (_v, i) =>
    createSimulator({ id: `acct-${i + 1}`, simulator: { ...opts.simulator, seed: (opts.simulator.seed + i) >>> 0 } }),
  );
  const stats = (): Record<string, ThrottleStats> => Object.fromEntries(accounts.map((a) => [a.id, a.stats()]));
  const reset = (): void => accounts.forEach((a) => a.reset());

  async function chat(account: SimulatorProvider, req: IncomingMessage, res: ServerResponse): Promise<void> {
    let text: string;
    try {
      text = await readBody(req, limit);
    } catch (err) {
      if (err instanceof TooLarge) sendError(res, 413, 'Request body too large.', 'request_too_large');
      else res.destroy();
      return;
    }
    let parsed: { stream?: unknown };
    try {
      parsed = JSON.parse(text) as { stream?: unknown };
      if (parsed === null || typeof parsed !== 'object') throw new Error('not an object');
    } catch {
      sendError(res, 400, 'We could not parse the JSON body of your request.', 'invalid_json');
      return;
    }
    const controller = new AbortController();
    res.once('close', () => {
      if (!res.writableFinished) controller.abort();
    });
    const header = req.headers['x-request-id'];
    let upstream;
    try {
      upstream = await account.send({
        api: 'chat',
        body: parsed as Record<string, unknown>,
        stream: parsed.stream === true,
        requestId: typeof header === 'string' && header ? header : randomUUID(),
        signal: controller.signal,
      });
    } catch (err) {
      if (!controller.signal.aborted) sendError(res, 500, `simulator failed: ${(err as Error).message}`, null, 'server_error');
      return;
    }
    if (controller.signal.aborted) {
      upstream.body.destroy();
      return;
    }
    res.writeHead(upstream.statusCode, { ...upstream.headers, 'x-simulator-account': account.id });
    // Headers now, even when a stalled stream holds its first event back (as real providers do).
    res.flushHeaders();
    try {
      await pipeline(upstream.body, res);
    } catch {
      // the client went away or the replay was aborted: the account already released the call
    }
  }

  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0]!;
    const route = ROUTE.exec(path);
    if (route) {
      if (req.method !== 'POST') return sendError(res, 405, `Use POST for ${path}.`, 'method_not_allowed');
      const n = route[1] === undefined ? 1 : Number(route[1]);
      const account = accounts[n - 1];
      if (!account) return sendError(res, 404, `No simulated account acct-${route[1]} (there are ${count}).`, 'account_not_found');
      void chat(account, req, res);
      return;
    }
    if (req.method === 'GET' && path === '/health') return sendJson(res, 200, { ok: true, accounts: count });
    if (req.method === 'GET' && path === '/stats') return sendJson(res, 200, { accounts: stats() });
    if (req.method === 'POST' && path === '/reset') {
      req.resume();
      reset();
      return sendJson(res, 200, { ok: true });
    }
    sendError(res, 404, `Unknown route ${req.method} ${path}.`, 'not_found');
  });
  server.keepAliveTimeout = 30_000;

  const host = opts.host ?? '127.0.0.1';
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  const shownHost = host.includes(':') ? `[${host}]` : host;
  return {
    url: `http://${shownHost}:${port}`,
    port,
    accounts,
    stats,
    reset,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
