/**
 * Bounds the connections open on the client port, whatever their requests and keys: at most
 * `server.max_connections` in all and `server.max_connections_per_address` from one client
 * address (the TCP peer: behind a proxy, the proxy). A connection past either gets a raw
 * `HTTP/1.1 503` with an OpenAI-style `too_many_connections` body and `Connection: close`
 * before Node's HTTP parser is attached, so nothing it sends is read as a request.
 */
import type { Server } from 'node:http';
import type { Socket } from 'node:net';
import { GatewayError } from '../../errors/codes.js';
import { errorBody } from '../../errors/render.js';
import { waitHeaders } from '../../errors/wait.js';
import type { ConnectionMetrics } from '../../metrics/connections.js';
import { recordConnectionRefused, trackConnection } from '../../metrics/record.js';

/** The limits, from the config's `server` block; 0 = none. */
export interface ConnectionLimits {
  readonly maxConnections: number;
  readonly maxPerAddress: number;
}

export type RefusalReason = 'max_connections' | 'max_connections_per_address';

/**
 * Called at most once per `LOG_EVERY_MS` while connections are refused: the refusals by
 * reason since the last call (this one's included), and the address of this one.
 */
export type RefusalLog = (refused: Partial<Record<RefusalReason, number>>, address: string) => void;

/** One refusal log line per this many ms at most, however many connections are refused. */
const LOG_EVERY_MS = 1_000;
/** A refused connection is destroyed this long after its answer is flushed (a client still sending gets it before the close). */
const LINGER_MS = 100;

/** The refusal, written once: the same bytes for every refused connection. */
function refusalBytes(): Buffer {
  const err = new GatewayError('GW_ERR_TOO_MANY_CONNECTIONS');
  const body = JSON.stringify(errorBody(err));
  const wait = waitHeaders(1_000);
  return Buffer.from(
    `HTTP/1.1 ${err.status} Service Unavailable\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
      `Retry-After: ${wait['retry-after']}\r\nretry-after-ms: ${wait['retry-after-ms']}\r\nx-should-retry: true\r\nConnection: close\r\n\r\n${body}`,
  );
}

/** `::ffff:10.0.0.1` and `10.0.0.1` are one client. */
function addressOf(socket: Socket): string {
  const a = socket.remoteAddress ?? 'unknown';
  return a.startsWith('::ffff:') ? a.slice(7) : a;
}

/**
 * Puts the caps in front of `server`'s own 'connection' listeners (Node's HTTP parser among
 * them): an admitted connection reaches them, a refused one never does. Call before listening.
 * @param limits read once per connection.
 */
export function capConnections(server: Server, limits: () => ConnectionLimits, metrics: ConnectionMetrics, log: RefusalLog): void {
  const refusal = refusalBytes();
  const perAddress = new Map<string, number>();
  let open = 0;
  let lastLogAt = 0;
  let unlogged: Partial<Record<RefusalReason, number>> = {};

  const refuse = (socket: Socket, reason: RefusalReason, address: string): void => {
    recordConnectionRefused(metrics, reason);
    unlogged[reason] = (unlogged[reason] ?? 0) + 1;
    const now = Date.now();
    if (now - lastLogAt >= LOG_EVERY_MS) {
      lastLogAt = now;
      log(unlogged, address);
      unlogged = {};
    }
    socket.on('error', () => {});
    socket.resume(); // what the client sends is dropped, so the close is no reset ahead of the answer
    socket.end(refusal, () => setTimeout(() => socket.destroy(), LINGER_MS).unref());
  };

  const admitted = server.listeners('connection') as ((socket: Socket) => void)[];
  server.removeAllListeners('connection');
  server.on('connection', (socket: Socket) => {
    const { maxConnections, maxPerAddress } = limits();
    const address = addressOf(socket);
    const fromAddress = perAddress.get(address) ?? 0;
    if (maxConnections > 0 && open >= maxConnections) return refuse(socket, 'max_connections', address);
    if (maxPerAddress > 0 && fromAddress >= maxPerAddress) return refuse(socket, 'max_connections_per_address', address);
    open++;
    perAddress.set(address, fromAddress + 1);
    trackConnection(metrics, 1);
    socket.once('close', () => {
      open--;
      const left = (perAddress.get(address) ?? 1) - 1;
      if (left > 0) perAddress.set(address, left);
      else perAddress.delete(address);
      trackConnection(metrics, -1);
    });
    for (const listener of admitted) listener.call(server, socket);
  });
}
