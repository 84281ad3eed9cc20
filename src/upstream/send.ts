/**
 * Sends one HTTP request to an upstream through its pool and returns the response with
 * its body decoded (gzip, deflate, br), so everything downstream sees plain bytes and the
 * client never gets a body whose `content-encoding` label was dropped.
 *
 * Decoding is done here with node:zlib rather than undici's `interceptors.decompress()`:
 * in undici 7.30 that interceptor is experimental (it emits an ExperimentalWarning on first
 * use, which a gateway's logs and tests should not carry) and by default leaves error
 * responses (>= 400) compressed, while the translators read error bodies too.
 */
import { createBrotliDecompress, createGunzip, createInflate } from 'node:zlib';
import { finished, pipeline, type Readable, type Transform } from 'node:stream';
import type { Dispatcher, Pool } from 'undici';
import { encodeJson } from './encode-json.js';

/** An upstream's answer as received: status, headers, and the decoded body as a stream. */
export interface UpstreamResponse {
  readonly statusCode: number;
  /** Lower-case header names. `content-encoding` is already decoded away. */
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  /** The decoded body, streamed as it arrives. */
  readonly body: Readable;
}

export interface SendOptions {
  readonly path: string;
  readonly method: 'POST' | 'GET';
  readonly headers: Record<string, string>;
  /** The request body, sent as JSON (upstream/encode-json.ts). */
  readonly json?: unknown;
  readonly signal: AbortSignal;
  /** Time allowed until response headers, ms. */
  readonly firstByteMs: number;
  /** Longest silence between body chunks, ms. */
  readonly idleMs: number;
}

function decoderFor(encoding: string): Transform | null {
  switch (encoding.trim().toLowerCase()) {
    case 'gzip':
    case 'x-gzip':
      return createGunzip();
    case 'deflate':
      return createInflate();
    case 'br':
      return createBrotliDecompress();
    default:
      return null;
  }
}

/**
 * @throws undici errors (`UND_ERR_CONNECT_TIMEOUT`, `UND_ERR_HEADERS_TIMEOUT`, `UND_ERR_SOCKET`,
 *         `ECONNREFUSED`, abort) raised before the response headers arrive.
 */
export async function sendUpstream(pool: Pool, opts: SendOptions): Promise<UpstreamResponse> {
  const encoded = opts.json === undefined ? null : encodeJson(opts.json);
  const payload = typeof encoded === 'string' || encoded === null ? encoded : await encoded;
  const res: Dispatcher.ResponseData = await pool.request({
    path: opts.path,
    method: opts.method,
    headers: opts.headers,
    body: payload,
    signal: opts.signal,
    headersTimeout: opts.firstByteMs,
    bodyTimeout: opts.idleMs,
  });
  const headers = { ...res.headers };
  const decoded = decodedBody(res.body, headers['content-encoding']);
  if (decoded) {
    delete headers['content-encoding'];
    delete headers['content-length'];
  }
  return { statusCode: res.statusCode, headers, body: decoded ?? res.body };
}

/**
 * `body` decoded as its `content-encoding` header value says: a new stream for gzip, deflate
 * or br; null for no encoding, `identity`, or one not decoded here (the body is left as is).
 */
export function decodedBody(body: Readable, encoding: string | string[] | undefined): Readable | null {
  if (typeof encoding !== 'string' || encoding === 'identity') return null;
  const decoder = decoderFor(encoding);
  return decoder ? (pipeline(body, decoder, () => {}) as unknown as Readable) : null;
}

/**
 * Stops reading an upstream body we no longer need. undici reports the abort this causes
 * as an 'error' on the body; with nobody listening that would be an uncaught exception.
 */
export function discardBody(body: Readable): void {
  body.on('error', () => {});
  body.destroy();
}

/** How long a body left after a delivered answer may take to end before it is destroyed, ms. */
const RELEASE_GRACE_MS = 1000;
/** How many more bytes such a body may send before it is destroyed. */
const RELEASE_MAX_BYTES = 1024 * 1024;

/**
 * Lets go of the rest of an upstream body after the answer was delivered, in the background:
 * it is read and thrown away so the connection goes back to the pool (undici reuses a
 * keep-alive connection only once its response body was read to the end; destroying it
 * closes the socket), unless it sends more than `RELEASE_MAX_BYTES` or does not end within
 * `RELEASE_GRACE_MS` (an upstream that lingers after its last event): then it is destroyed.
 * Written here rather than with undici's `body.dump()`: that counts the bytes already read
 * against its limit, and a decoded (gzip) body is not undici's.
 * @returns a promise that settles once the body closed (ended or destroyed: at most
 *   RELEASE_GRACE_MS), never rejecting: until then the provider still counts the call.
 */
export function releaseBody(body: Readable): Promise<void> {
  body.on('error', () => {});
  if (body.closed || body.destroyed) return Promise.resolve();
  let left = RELEASE_MAX_BYTES;
  const timer = setTimeout(() => body.destroy(), RELEASE_GRACE_MS);
  timer.unref();
  const closed = new Promise<void>((resolve) =>
    body.once('close', () => {
      clearTimeout(timer);
      resolve();
    }),
  );
  body.on('data', (c: Buffer | string) => {
    left -= c.length;
    if (left < 0) body.destroy();
  });
  body.resume();
  return closed;
}

/**
 * Reads at most `limit` bytes of a body, then discards the rest.
 * Listens for 'data' and `finished` rather than `for await`: the async iterator costs a
 * promise and a tick per chunk and an iterator per body, on every non-streamed answer.
 * @returns the bytes read (one chunk as received, else joined) and whether the body was cut.
 * @throws (rejects with) the body's error, or ERR_STREAM_PREMATURE_CLOSE when it closed
 *   before its end: as `for await` over the stream would, which also destroyed the body
 *   once read (so does this).
 */
export function readCapped(body: Readable, limit: number): Promise<{ buf: Buffer; truncated: boolean }> {
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    let size = 0;
    let settled = false;
    /** Stops listening; the first caller wins (finished() may call back after the cap was hit). */
    const settle = (): boolean => {
      if (settled) return false;
      settled = true;
      stop();
      body.off('data', onData);
      return true;
    };
    const onData = (chunk: Buffer | string): void => {
      const b = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
      if (size + b.length > limit) {
        settle();
        discardBody(body);
        resolve({ buf: Buffer.concat(parts, size), truncated: true });
        return;
      }
      parts.push(b);
      size += b.length;
    };
    // The readable side only: a decoder (gzip, br) ends its output when the compressed data
    // is complete, while bytes after it may still be arriving on its input.
    const stop = finished(body, { writable: false }, (err) => {
      if (!settle()) return;
      if (err) return reject(err);
      // As `for await` did: a body read to its end is destroyed, so a decoder whose input is
      // still open lets go of the upstream connection (a no-op for a body that already closed).
      if (!body.destroyed) discardBody(body);
      resolve({ buf: parts.length === 1 ? parts[0]! : Buffer.concat(parts, size), truncated: false });
    });
    body.on('data', onData);
  });
}
