/**
 * A memory guard for large request bodies. While its request runs, a JSON body of B bytes
 * costs about 4.4 × B: the raw text, the parsed document, the re-serialised upstream body
 * and its buffer, until collected (`npm run bench:bodies`: eight concurrent 27 MB prompts
 * took one process from 119 MB to 984 MB; docs/deploy.md, "Memory"). A handful of large
 * prompts at once could take a pod past its memory limit and get everything on it killed.
 *
 * So a request whose `Content-Length` is at least {@link LARGE_BODY_BYTES} reserves it
 * against `server.max_body_bytes_in_flight` before its body is read; one that does not fit
 * gets 503 `server_overloaded` with `Retry-After: 1` (the SDKs retry it) and its body is
 * never read. The reservation is given back when the response ends, whatever the outcome.
 * A request is always admitted when no other large body is in flight, so any body up to
 * `body_limit_bytes` is served in time. Smaller bodies are not counted (their memory is part
 * of the base), nor are chunked bodies, whose size is unknown until read (body_limit_bytes
 * still caps each). 0 switches the guard off.
 */
import type { FastifyInstance } from 'fastify';
import { GatewayError } from '../errors/codes.js';
import { waitHeaders } from '../errors/wait.js';

/** Bodies from this size on are counted (1 MiB: a long coding-agent prompt is 0.2–2 MB). */
export const LARGE_BODY_BYTES = 1024 * 1024;

export class BodyGuard {
  private inFlight = 0;
  private count = 0;

  /** Large-body bytes being processed now (gauge). */
  get bytes(): number {
    return this.inFlight;
  }

  /** Reserves `n` bytes under `cap`; false when they do not fit (and something else is in flight). */
  take(n: number, cap: number): boolean {
    if (cap > 0 && this.count > 0 && this.inFlight + n > cap) return false;
    this.inFlight += n;
    this.count++;
    return true;
  }

  give(n: number): void {
    this.inFlight -= n;
    this.count--;
  }
}

/**
 * Adds the guard to `app` as an `onRequest` hook (before the body is read).
 * @param cap the current `server.max_body_bytes_in_flight`, bytes (0: no guard).
 * @param onRefused counts a refusal (metrics).
 */
export function useBodyGuard(app: FastifyInstance, guard: BodyGuard, cap: () => number, onRefused: () => void): void {
  app.addHook('onRequest', async (req, reply) => {
    const n = Number(req.headers['content-length']);
    if (!Number.isFinite(n) || n < LARGE_BODY_BYTES || cap() === 0) return;
    if (!guard.take(n, cap())) {
      onRefused();
      // The body is not read: close the connection after the answer rather than drain it.
      void reply.header('connection', 'close');
      throw new GatewayError('GW_ERR_OVERLOADED', {
        message: `This gateway is processing ${Math.round(guard.bytes / 1048576)} MiB of large request bodies (limit server.max_body_bytes_in_flight = ${Math.round(cap() / 1048576)} MiB); retry the request shortly.`,
        headers: waitHeaders(1_000),
      });
    }
    reply.raw.once('close', () => guard.give(n));
  });
}
