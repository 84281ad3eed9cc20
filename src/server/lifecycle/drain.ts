/**
 * Graceful shutdown (docs/deploy.md, "Graceful shutdown"). On SIGTERM the gateway
 *
 * 1. starts draining: `/readyz` answers 503 and every new request (but `/healthz`,
 *    `/readyz`, `/metrics`) gets 503 `shutting_down` with `Connection: close`, on new and
 *    on kept-alive connections alike; the listener stays open so late clients get that
 *    answer rather than a refused connection;
 * 2. waits for the requests in flight (streams included) to finish, up to `server.drain_ms`;
 * 3. past that deadline, aborts every model call still running with a {@link ShuttingDown}
 *    reason: its upstream request is cancelled, a started stream ends with a final error
 *    event (`shutting_down`), one not started yet is answered 503; any other request still
 *    open a moment later has its connection cut;
 * 4. closes the app: the listener, idle keep-alive connections, then the onClose hooks
 *    (upstream pools, Redis).
 *
 * WebSocket turns (routes/responses-ws.ts) run in-process, not as requests of the server:
 * each is counted with {@link Drain.holdRequest}, and the sockets close themselves (1001)
 * once idle when told by {@link Drain.onDraining}.
 */
import type { Server } from 'node:http';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { GatewayError } from '../../errors/codes.js';
import { sendError } from '../../errors/reply.js';

import { ShuttingDown } from '../../errors/aborts.js';

export { ShuttingDown } from '../../errors/aborts.js';

/** What the pipeline needs of the drain: registering a model call's abort controller. */
export interface CallTracker {
  /**
   * Registers a model call so a shutdown past its deadline can abort it (with a
   * {@link ShuttingDown} reason); returns the function that unregisters it.
   */
  track(abort: AbortController): () => void;
}

/** How a shutdown went (logged). */
export interface DrainResult {
  /** Every request finished within the deadline. */
  readonly drained: boolean;
  /** Model calls aborted at the deadline. */
  readonly aborted: number;
  /** Requests still open after the aborts' grace, whose connections were cut. */
  readonly cut: number;
  /** From the start of the drain to the app closed, ms. */
  readonly ms: number;
}

/** Paths answered while draining: probes and metrics. */
const EXEMPT = new Set(['/healthz', '/readyz', '/metrics']);

/** How often idle keep-alive connections are swept while the app closes, ms. */
const SWEEP_MS = 50;

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms).unref());

/** Tracks the requests in flight of one app and shuts it down gracefully. */
export class Drain implements CallTracker {
  private state: 'serving' | 'draining' | 'aborting' = 'serving';
  private readonly calls = new Set<AbortController>();
  private requests = 0;
  private started = 0;
  private idleWaiters: (() => void)[] = [];
  private readonly drainListeners: (() => void)[] = [];
  private app: FastifyInstance | null = null;
  private shutdownRun: Promise<DrainResult> | null = null;

  /** True once a shutdown started: readiness fails and new requests are refused. */
  get draining(): boolean {
    return this.state !== 'serving';
  }

  /** HTTP requests in flight that arrived before the drain started (any route). */
  get inFlight(): number {
    return this.requests;
  }

  /** Model calls started since start (probes and scrapes are not), for telling a quiet process from a busy one. */
  get callsStarted(): number {
    return this.started;
  }

  /** Model calls in flight (registered by the pipeline). */
  get modelCalls(): number {
    return this.calls.size;
  }

  /**
   * Hooks the drain into `app`: counts its server's requests, refuses new requests while
   * draining, and asks clients to close their connection on answers sent while draining.
   * Call once, before the app is ready.
   */
  attach(app: FastifyInstance): void {
    this.app = app;
    const server: Server = app.server;
    server.on('request', (_req, res) => {
      // Requests arriving while draining are refused (or are probes): the drain does not
      // wait for them, so a load balancer still sending cannot hold it open.
      if (this.state !== 'serving') return;
      this.requests++;
      res.once('close', () => {
        this.requests--;
        if (this.requests === 0) this.wakeIdle();
      });
    });
    app.addHook('onRequest', async (req: FastifyRequest, reply: FastifyReply) => {
      if (this.state === 'serving' || EXEMPT.has(req.url.split('?')[0]!)) return;
      sendError(reply, new GatewayError('GW_ERR_SHUTTING_DOWN'), { connection: 'close' });
      return reply;
    });
    app.addHook('onSend', async (_req, reply) => {
      if (this.state !== 'serving') void reply.header('connection', 'close');
    });
    // A plain `app.close()` (tests, embedding) refuses new requests the same way.
    app.addHook('preClose', async () => {
      if (this.state === 'serving') this.startDraining();
    });
  }

  /**
   * Counts a request the server never saw as one (a WebSocket turn run in-process) until the
   * returned function is called (idempotent): the drain waits for it as for any request.
   */
  holdRequest(): () => void {
    this.requests++;
    let held = true;
    return () => {
      if (!held) return;
      held = false;
      this.requests--;
      if (this.requests === 0) this.wakeIdle();
    };
  }

  /** Runs `fn` once the drain starts (at once when it already has). */
  onDraining(fn: () => void): void {
    if (this.state !== 'serving') fn();
    else this.drainListeners.push(fn);
  }

  private startDraining(): void {
    this.state = 'draining';
    for (const fn of this.drainListeners.splice(0)) fn();
  }

  /** {@inheritDoc CallTracker.track} */
  track(abort: AbortController): () => void {
    // A call starting after the deadline (its request arrived before the drain) ends at once.
    if (this.state === 'aborting') abort.abort(new ShuttingDown());
    this.calls.add(abort);
    this.started++;
    return () => {
      this.calls.delete(abort);
    };
  }

  /**
   * Drains and closes the app (steps in the module comment); idempotent: a second call
   * returns the first one's result.
   * @param deadlineMs how long requests in flight may take to finish (`server.drain_ms`).
   * @param graceMs after the aborts, how long requests get to end before their connections are cut.
   */
  shutdown(deadlineMs: number, graceMs = 1_000): Promise<DrainResult> {
    this.shutdownRun ??= this.run(deadlineMs, graceMs);
    return this.shutdownRun;
  }

  private async run(deadlineMs: number, graceMs: number): Promise<DrainResult> {
    const t0 = Date.now();
    if (this.state === 'serving') this.startDraining();
    const drained = await this.idle(deadlineMs);
    let aborted = 0;
    let cut = 0;
    if (!drained) {
      this.state = 'aborting';
      aborted = this.calls.size;
      for (const abort of this.calls) abort.abort(new ShuttingDown());
      if (!(await this.idle(graceMs))) {
        cut = this.requests;
        this.app?.server.closeAllConnections();
      }
    }
    if (this.app) await this.closeApp(graceMs);
    return { drained, aborted, cut, ms: Date.now() - t0 };
  }

  /**
   * `app.close()` waits for every connection to end, and Node closes only the connections
   * idle at that moment: one whose last answer is still being flushed would stay open
   * until its keep-alive timeout. They are swept until the close completes, and cut after
   * `graceMs`.
   */
  private async closeApp(graceMs: number): Promise<void> {
    const server = this.app!.server;
    const sweep = setInterval(() => server.closeIdleConnections(), SWEEP_MS);
    const cutAll = setTimeout(() => server.closeAllConnections(), graceMs);
    try {
      await this.app!.close();
    } finally {
      clearInterval(sweep);
      clearTimeout(cutAll);
    }
  }

  /** Resolves true once no request is in flight, false after `ms`. */
  private async idle(ms: number): Promise<boolean> {
    if (this.requests === 0) return true;
    let wake!: () => void;
    const done = new Promise<boolean>((resolve) => {
      wake = () => resolve(true);
      this.idleWaiters.push(wake);
    });
    const result = await Promise.race([done, sleep(ms).then(() => false)]);
    this.idleWaiters = this.idleWaiters.filter((w) => w !== wake);
    return result;
  }

  private wakeIdle(): void {
    const waiters = this.idleWaiters;
    this.idleWaiters = [];
    for (const w of waiters) w();
  }
}
