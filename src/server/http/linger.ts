/**
 * Lingering close (RFC 9112 §9.6): a server that answers before the request's body is all in
 * and then closes must not close both ways at once, or the client's next write of the body
 * meets a reset (EPIPE / ECONNRESET) and a client that reads its answer only after sending
 * (undici's fetch on Node 24, and so the OpenAI SDK's multipart uploads) reports a connection
 * error instead of the 403 or 401 it was sent. Node's HTTP server closes an answered
 * `connection: close` socket with `destroySoon()` (end, then destroy once written); this
 * replaces that, for one socket, with: end (the client sees the answer, then end of stream),
 * go on reading and dropping what it still sends, and destroy when it closes its side or at
 * `ms`, whichever comes first, so a client trickling its body (slowloris) holds the socket
 * no longer than `ms` after the answer.
 */
import type { Socket } from 'node:net';

/** How long an answered connection keeps reading (and dropping) a body still arriving, ms. */
export const EARLY_ANSWER_LINGER_MS = 250;

/** Makes `socket`'s close after its answer a lingering one of at most `ms` (see the file comment). */
export function lingerOnClose(socket: Socket | null | undefined, ms: number): void {
  if (!socket || socket.destroyed) return;
  socket.destroySoon = function lingeringClose(this: Socket): void {
    if (this.writable) this.end();
    const timer = setTimeout(() => this.destroy(), ms).unref();
    this.once('close', () => clearTimeout(timer));
    this.once('end', () => this.destroy());
    this.resume();
  };
}
