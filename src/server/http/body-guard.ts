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
 * never read. A body whose size is not known up front (compressed: a 2 MB gzip can hold
 * 24 MB of prompt; or chunked, with no `Content-Length`) reserves its decoded bytes as they
 * arrive, from {@link LARGE_BODY_BYTES} on, a MiB at a time; past what fits it gets the
 * same 503 and the rest of it is not read. The reservation is given back when the response
 * ends, whatever the outcome. A request is always admitted when no other large body is in
 * flight, so any body up to `body_limit_bytes` is served in time. Smaller bodies are not
 * counted (their memory is part of the base). 0 switches the guard off.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { Transform, type Readable, type TransformCallback } from 'node:stream';
import { GatewayError } from '../../errors/codes.js';
import { waitHeaders } from '../../errors/wait.js';
import type { DecodedBody } from './body-decoding.js';

/** Bodies from this size on are counted (1 MiB: a long coding-agent prompt is 0.2–2 MB). */
export const LARGE_BODY_BYTES = 1024 * 1024;

/** What one request has reserved, bytes. */
interface Hold {
  bytes: number;
}

export class BodyGuard {
  private inFlight = 0;
  private count = 0;

  /** Large-body bytes being processed now (gauge). */
  get bytes(): number {
    return this.inFlight;
  }

  /** Adds `n` bytes to `hold` under `cap`; false when they do not fit (and another large body is in flight). */
  take(hold: Hold, n: number, cap: number): boolean {
    const others = this.count - (hold.bytes > 0 ? 1 : 0);
    if (cap > 0 && others > 0 && this.inFlight + n > cap) return false;
    if (hold.bytes === 0) this.count++;
    hold.bytes += n;
    this.inFlight += n;
    return true;
  }

  /** Gives back everything `hold` has. */
  give(hold: Hold): void {
    if (hold.bytes === 0) return;
    this.inFlight -= hold.bytes;
    this.count--;
    hold.bytes = 0;
  }
}

/** Counts a body's (decoded) bytes as Fastify reads them, reserving more as it grows. */
class Meter extends Transform {
  private seen = 0;

  constructor(
    private readonly reserve: (upTo: number) => GatewayError | null,
    inner: Readable,
  ) {
    super();
    // Fastify compares what arrived on the wire with Content-Length (server/http/body-decoding.ts).
    Object.defineProperty(this, 'receivedEncodedLength', { get: () => (inner as { receivedEncodedLength?: number }).receivedEncodedLength });
  }

  override _transform(chunk: Buffer, _enc: BufferEncoding, cb: TransformCallback): void {
    this.seen += chunk.length;
    cb(this.seen >= LARGE_BODY_BYTES ? this.reserve(this.seen) : null, chunk);
  }
}

function overloaded(guard: BodyGuard, cap: number): GatewayError {
  return new GatewayError('GW_ERR_OVERLOADED', {
    message: `This gateway is processing ${Math.round(guard.bytes / 1048576)} MiB of large request bodies (limit server.max_body_bytes_in_flight = ${Math.round(cap / 1048576)} MiB); retry the request shortly.`,
    headers: waitHeaders(1_000),
  });
}

/**
 * Adds the guard to `app`: an `onRequest` hook (before the body is read) for bodies of known
 * size, and a `preParsing` hook metering the others on the routes whose body is parsed
 * (`config.decodesBody`); add it after server/http/body-decoding.ts, so it meters decoded bytes.
 * @param cap the current `server.max_body_bytes_in_flight`, bytes (0: no guard).
 * @param onRefused counts a refusal (metrics).
 */
export function useBodyGuard(app: FastifyInstance, guard: BodyGuard, cap: () => number, onRefused: () => void): void {
  const holds = new WeakMap<FastifyRequest, Hold>();
  app.addHook('onRequest', async (req, reply) => {
    if (cap() === 0) return;
    const n = Number(req.headers['content-length']);
    // Compressed or chunked: metered as read (preParsing below); a body-less request: nothing.
    const metered = req.headers['content-encoding'] !== undefined || (!Number.isFinite(n) && req.headers['transfer-encoding'] !== undefined);
    if (!metered && !(n >= LARGE_BODY_BYTES)) return;
    const hold: Hold = { bytes: 0 };
    reply.raw.once('close', () => guard.give(hold));
    if (metered) return void holds.set(req, hold);
    if (!guard.take(hold, n, cap())) {
      onRefused();
      // The body is not read: close the connection after the answer rather than drain it.
      void reply.header('connection', 'close');
      throw overloaded(guard, cap());
    }
  });
  app.addHook('preParsing', async (req, _reply, payload) => {
    const hold = holds.get(req);
    if (!hold || req.routeOptions.config?.decodesBody !== true) return payload;
    const meter = new Meter((upTo) => {
      if (upTo <= hold.bytes) return null;
      // A MiB at a time, so a growing body asks a few dozen times, not per chunk.
      if (guard.take(hold, Math.max(upTo - hold.bytes, LARGE_BODY_BYTES), cap())) return null;
      onRefused();
      const err = overloaded(guard, cap());
      payload.unpipe(meter);
      // A decoded body stops decoding and its encoded rest is read and dropped (never
      // inflated); a plain one is read and dropped. The answer closes the connection.
      const stop = (payload as Partial<DecodedBody>).stop;
      if (stop) stop(err);
      else payload.resume();
      return err;
    }, payload);
    payload.on('error', (err) => meter.destroy(err));
    return payload.pipe(meter);
  });
}
