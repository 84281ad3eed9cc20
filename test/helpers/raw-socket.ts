/**
 * Raw TCP clients of the gateway for the hostile-client tests (test/hostile/): a socket that
 * records what it received and when the gateway closed it, and a writer that drips bytes.
 */
import { connect, type Socket } from 'node:net';

/** A raw connection to the gateway and what came back on it. */
export interface RawConnection {
  readonly socket: Socket;
  /** Everything received so far, as text. */
  received(): string;
  /** Resolves once the connection is closed (by either side): ms since it was opened. */
  readonly closed: Promise<number>;
}

/**
 * Opens a TCP connection to the gateway at `url` (from `localAddress`, e.g. `127.0.0.2`, when
 * given) and resolves once connected. Socket errors (a reset) only end it.
 */
export function openRaw(url: string, localAddress?: string): Promise<RawConnection> {
  const { port, hostname } = new URL(url);
  const t0 = Date.now();
  return new Promise((resolve, reject) => {
    const socket = connect({ port: Number(port), host: hostname, ...(localAddress ? { localAddress } : {}) });
    let text = '';
    socket.on('data', (d: Buffer) => (text += d.toString('utf8')));
    const closed = new Promise<number>((done) => socket.once('close', () => done(Date.now() - t0)));
    socket.once('connect', () => {
      socket.removeListener('error', reject);
      socket.on('error', () => {});
      resolve({ socket, received: () => text, closed });
    });
    socket.once('error', reject);
  });
}

/** Writes `text` one byte every `everyMs` for as long as the socket is open; returns a stop function. */
export function drip(socket: Socket, text: string, everyMs: number): () => void {
  let i = 0;
  const timer = setInterval(() => {
    if (!socket.writable || i >= text.length) return clearInterval(timer);
    socket.write(text[i++]!);
  }, everyMs);
  socket.once('close', () => clearInterval(timer));
  return () => clearInterval(timer);
}

/** Resolves with `p`'s value, or with `fallback` once `ms` passed (the test's own give-up time). */
export function within<T>(p: Promise<T>, ms: number, fallback: T): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([p, new Promise<T>((r) => (timer = setTimeout(() => r(fallback), ms)))]).finally(() => clearTimeout(timer));
}
