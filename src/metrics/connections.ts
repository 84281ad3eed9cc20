/**
 * The metrics of the client port's connections (server/http/connection-cap.ts), in a file of
 * their own because registry.ts is at its size cap; registry.ts creates them on its registry.
 */
import { Counter, Gauge, type Registry } from 'prom-client';

export interface ConnectionMetrics {
  /** Client-port connections open now (refused ones not counted). */
  readonly open: Gauge;
  /** Connections answered 503 and closed at once, by reason: `max_connections`, `max_connections_per_address`. */
  readonly refused: Counter<'reason'>;
}

/** Creates the connection metrics on `registers`. */
export function createConnectionMetrics(registers: Registry[]): ConnectionMetrics {
  return {
    open: new Gauge({
      name: 'switchyard_connections_open',
      help: 'TCP connections open on the client port now (summed over the worker processes).',
      registers,
    }),
    refused: new Counter({
      name: 'switchyard_connections_refused_total',
      help: 'Connections answered 503 too_many_connections and closed, by reason: max_connections (server.max_connections reached), max_connections_per_address (server.max_connections_per_address reached).',
      labelNames: ['reason'],
      registers,
    }),
  };
}
