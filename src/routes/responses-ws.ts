/**
 * The Responses API's WebSocket mode (OpenAI guide "WebSocket mode"; reference "Responses
 * WebSocket events"): `GET /v1/responses` with a WebSocket upgrade, then one JSON text
 * frame `{"type":"response.create", …the body of POST /v1/responses…}` per turn, answered
 * with the events the SSE stream would carry, one text frame each. Codex uses it with
 * `supports_websockets = true` (it sends `OpenAI-Beta: responses_websockets=2026-02-06`).
 *
 * The upgrade request goes through the client app's hooks like any request: a bad key gets
 * its 401 as an HTTP answer, a draining gateway its 503, and `server.websocket.enabled: false`
 * a 426 (a plain GET gets 426 too: it must upgrade). Each turn is then run as a
 * `POST /v1/responses` of its own (server/ws/turn.ts), so it is authenticated, limited,
 * routed, recorded and traced as one; a socket outlives a config reload or an account
 * switch, since nothing is routed per socket. The connection's frames are handled by
 * server/ws/session.ts. Library: `@fastify/websocket` (on `ws`), which upgrades only after
 * Fastify's routing and hooks have run.
 */
import fastifyWebsocket from '@fastify/websocket';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { GatewayConfig } from '../config/types.js';
import { GatewayError } from '../errors/codes.js';
import type { WebSocketMetrics } from '../metrics/websocket.js';
import type { Drain } from '../server/lifecycle/drain.js';
import { ResponsesSocket } from '../server/ws/session.js';
import { turnHeaders, type TurnRegistry } from '../server/ws/turn.js';

/** What the WebSocket mode is set up with. */
export interface WebSocketDeps {
  /** The config at start-up (`server` changes take a restart). */
  readonly config: GatewayConfig;
  readonly drain: Drain;
  readonly metrics: WebSocketMetrics;
}

/** The open sockets and the turns in flight, shared by the hook, the route and the drain. */
export interface WebSockets {
  readonly deps: WebSocketDeps;
  readonly app: FastifyInstance;
  readonly registry: TurnRegistry;
  readonly sockets: Set<ResponsesSocket>;
}

/** How long sockets get to answer the close of a shutting-down gateway before they are cut, ms. */
const CLOSE_GRACE_MS = 1_000;

/**
 * The WebSocket mode's state for the client app `app` (its turns are injected there): no
 * socket open, no turn in flight. Set it up with {@link useWebSockets}.
 */
export function webSockets(app: FastifyInstance, deps: WebSocketDeps): WebSockets {
  return { deps, app, registry: new Map(), sockets: new Set() };
}

/**
 * Sets up the WebSocket mode on its client app: the upgrade handling (`@fastify/websocket`,
 * frames up to twice `server.body_limit_bytes`: a larger one closes the socket with 1009,
 * a smaller one past the limit gets an `error` event), and the hook that gives each turn
 * run in-process its client's aborts. Call before the app's other request hooks, so the
 * hook runs first. Register the route with {@link registerResponsesWs}.
 */
export async function useWebSockets(ws: WebSockets): Promise<void> {
  const { app, deps } = ws;
  await app.register(fastifyWebsocket, {
    options: { maxPayload: 2 * deps.config.server.body_limit_bytes },
    // A broken socket (a frame over maxPayload, a bad frame, a reset) is the client's doing: noted, not an error of the gateway.
    errorHandler: (err, socket, req) => {
      req.log.info({ reason: err.message }, 'websocket failed');
      socket.terminate();
    },
    // Sockets still open when the app closes (the drain closed the idle ones) go away with 1001.
    preClose: async function closeSockets(this: FastifyInstance) {
      const wss = this.websocketServer;
      const closed = new Promise<void>((resolve) => wss.close(() => resolve()));
      for (const s of ws.sockets) s.close(1001, 'the gateway is shutting down');
      await Promise.race([closed, new Promise((r) => setTimeout(r, CLOSE_GRACE_MS).unref())]);
      for (const client of wss.clients) client.terminate();
      await closed;
    },
  });
  deps.drain.onDraining(() => {
    for (const s of ws.sockets) s.drain();
  });
  app.addHook('onRequest', async (req, reply) => {
    if (req.ws) req.transport = 'websocket';
    const signal = ws.registry.get(req.id);
    // Only a turn injected by a session (a real request cannot carry light-my-request's response).
    if (!signal || (reply.raw as { isLightMyRequest?: boolean }).isLightMyRequest !== true) return;
    req.transport = 'websocket';
    const leave = (): void => {
      if (!reply.raw.writableFinished) reply.raw.destroy();
    };
    if (signal.aborted) return leave();
    signal.addEventListener('abort', leave, { once: true });
    reply.raw.once('close', () => signal.removeEventListener('abort', leave));
  });
}

/** Answers a plain GET, or an upgrade while the mode is off: 426. */
function refuse(enabled: boolean) {
  return async (_req: FastifyRequest, reply: FastifyReply): Promise<void> => {
    void reply.header('upgrade', 'websocket');
    throw new GatewayError(enabled ? 'GW_ERR_UPGRADE_REQUIRED' : 'GW_ERR_WEBSOCKET_DISABLED');
  };
}

/** Registers `GET /v1/responses` (WebSocket upgrade) in the authenticated `/v1` scope. */
export function registerResponsesWs(v1: FastifyInstance, ws: WebSockets): void {
  const { config, drain, metrics } = ws.deps;
  const { enabled, idle_timeout_ms: idleTimeoutMs } = config.server.websocket;
  v1.route({
    method: 'GET',
    url: '/v1/responses',
    // Before the upgrade: a gateway with the mode off answers 426 over HTTP.
    ...(enabled ? {} : { preHandler: refuse(false) }),
    handler: refuse(enabled),
    wsHandler: (socket, req) => {
      // The upgrade is not a request record of its own: each turn is one.
      req.recorded = true;
      const session = new ResponsesSocket(
        socket,
        {
          turn: { app: ws.app, registry: ws.registry, drain, headers: turnHeaders(req.headers), remoteAddress: req.ip },
          maxFrameBytes: config.server.body_limit_bytes,
          idleTimeoutMs,
          metrics,
          log: req.log,
        },
        (s) => ws.sockets.delete(s),
      );
      ws.sockets.add(session);
      if (drain.draining) session.drain();
    },
  });
}
