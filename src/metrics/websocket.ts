/**
 * The metrics of the Responses API's WebSocket mode (routes/responses-ws.ts), in a file of
 * their own because registry.ts is at its size cap; registry.ts creates them on its registry.
 * Each turn is also a request of `switchyard_requests_total` like an HTTP call; these say how
 * many came over a socket.
 */
import { Counter, Gauge, type Registry } from 'prom-client';

export interface WebSocketMetrics {
  /** Sockets open now. */
  readonly connections: Gauge;
  /** `response.create` frames run as turns (each also a request of its own record). */
  readonly turns: Counter;
}

/** Creates the WebSocket metrics on `registers`. */
export function createWebSocketMetrics(registers: Registry[]): WebSocketMetrics {
  return {
    connections: new Gauge({ name: 'switchyard_websocket_connections', help: 'Responses API WebSocket connections open now.', registers }),
    turns: new Counter({
      name: 'switchyard_websocket_turns_total',
      help: 'response.create frames received over the Responses API WebSocket and run as turns (each is also counted in switchyard_requests_total).',
      registers,
    }),
  };
}
