/**
 * Compressed request bodies. A client may send its body with `Content-Encoding` (RFC 9110
 * §8.4; coding names from the IANA "HTTP Content Coding Registry"): coding agents compress
 * long prompts. On the routes whose JSON body the gateway reads (`config.decodesBody`: the
 * model calls and count_tokens) the body is decoded as it arrives, before Fastify parses it:
 *
 * - `gzip` / `x-gzip` (RFC 1952), `deflate` (zlib-wrapped, RFC 1950; a raw RFC 1951 stream,
 *   which some clients send under that name, is told apart by its first byte), `br`
 *   (RFC 7932), and `zstd` (RFC 8878) where this Node has `zlib.createZstdDecompress`
 *   (Node ≥ 22.15 / 23.8); `identity` is no coding. Several codings are decoded last first.
 * - Any other coding, or zstd on an older Node: 415 `unsupported_content_encoding` naming it,
 *   before the body is read.
 * - The decoded body is held to `server.body_limit_bytes` while it is decoded: past it the
 *   decoders stop and the client gets 413 `request_too_large` naming the limit, so a small
 *   "bomb" (10 MB of zeros gzip to 10 KB) is never inflated whole.
 * - Data that is not what its coding says (corrupt, cut short): 400 `invalid_body_encoding`.
 *
 * Passthrough routes forward a body unchanged, `Content-Encoding` and all (routes/passthrough.ts).
 */
import type { FastifyInstance } from 'fastify';
import { Transform, type Readable, type TransformCallback } from 'node:stream';
import zlib from 'node:zlib';
import { GatewayError } from '../../errors/codes.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The route's body is decoded by its `Content-Encoding` before it is parsed (server/http/body-decoding.ts). */
    decodesBody?: boolean;
  }
}

/** Most codings one body may stack (RFC 9110 allows a list; real clients send one). */
const MAX_CODINGS = 2;

type ZstdFactory = (() => Transform) | undefined;

/** `zlib.createZstdDecompress` when this Node has it (Node ≥ 22.15 / 23.8), else undefined. */
function zstdFactory(): ZstdFactory {
  return (zlib as unknown as { createZstdDecompress?: () => Transform }).createZstdDecompress;
}

/** Whether this Node decodes `zstd` request bodies. */
export function zstdSupported(): boolean {
  return typeof zstdFactory() === 'function';
}

/**
 * The content codings of a request body, in the order the client applied them, lower-cased,
 * `identity` dropped (RFC 9110 §8.4: a comma-separated list). Empty: the body is not encoded.
 */
export function requestCodings(header: string | string[] | undefined): string[] {
  if (header === undefined) return [];
  const joined = Array.isArray(header) ? header.join(',') : header;
  return joined
    .split(',')
    .map((c) => c.trim().toLowerCase())
    .filter((c) => c !== '' && c !== 'identity');
}

/**
 * Checks that every coding can be decoded here.
 * @throws GatewayError 415 `unsupported_content_encoding` naming the first that cannot.
 */
export function checkCodings(codings: readonly string[]): void {
  if (codings.length > MAX_CODINGS) {
    throw new GatewayError('GW_ERR_UNSUPPORTED_ENCODING', {
      message: `The request body has ${codings.length} content codings (${codings.join(', ')}); this gateway decodes at most ${MAX_CODINGS}: send it uncompressed.`,
    });
  }
  for (const coding of codings) {
    if (coding === 'zstd' && !zstdSupported()) {
      throw new GatewayError('GW_ERR_UNSUPPORTED_ENCODING', {
        message: `This gateway cannot decode zstd request bodies (Content-Encoding: zstd needs Node.js 22.15 or later): send the body uncompressed, or as gzip or br.`,
      });
    }
    if (!['gzip', 'x-gzip', 'deflate', 'br', 'zstd'].includes(coding)) {
      throw new GatewayError('GW_ERR_UNSUPPORTED_ENCODING', {
        message: `The request body's Content-Encoding "${coding.slice(0, 40)}" is not supported (gzip, deflate, br${zstdSupported() ? ', zstd' : ''} are): send it uncompressed.`,
      });
    }
  }
}

/** Whether the first bytes of a deflate body start a zlib stream (RFC 1950 §2.2: CM 8, CINFO ≤ 7, FCHECK) rather than raw deflate. */
function zlibWrapped(head: Buffer): boolean {
  const cmf = head[0]!;
  if ((cmf & 0x0f) !== 8 || cmf >> 4 > 7) return false;
  return head.length < 2 || ((cmf << 8) | head[1]!) % 31 === 0;
}

/** The streaming decoder of one (checked) coding; `head`: the first bytes it will see. */
function decoder(coding: string, head: Buffer): Transform {
  if (coding === 'gzip' || coding === 'x-gzip') return zlib.createGunzip();
  if (coding === 'deflate') return zlibWrapped(head) ? zlib.createInflate() : zlib.createInflateRaw();
  if (coding === 'br') return zlib.createBrotliDecompress();
  return zstdFactory()!();
}

/** Counts the bytes going through; past `limit` it fails with `tooLarge()`. */
class ByteCounter extends Transform {
  bytes = 0;
  /** Called with the first chunk, before it is passed on. */
  onFirst: ((chunk: Buffer) => void) | null = null;
  /** Called before the end when no chunk came. */
  onEmpty: (() => void) | null = null;

  constructor(
    private readonly limit: number,
    private readonly tooLarge: () => GatewayError,
  ) {
    super();
  }

  override _transform(chunk: Buffer, _enc: BufferEncoding, cb: TransformCallback): void {
    if (this.bytes === 0 && chunk.length > 0 && this.onFirst) {
      this.onFirst(chunk);
      this.onFirst = null;
      this.onEmpty = null;
    }
    this.bytes += chunk.length;
    if (this.bytes > this.limit) cb(this.tooLarge());
    else cb(null, chunk);
  }

  override _flush(cb: TransformCallback): void {
    this.onEmpty?.();
    this.onEmpty = null;
    cb();
  }
}

/** A decoded body stream; `receivedEncodedLength` is what Fastify checks against Content-Length. */
/**
 * The decoded stream. `stop(err)` ends it with `err` and stops decoding at once: the rest of
 * the encoded body is read and dropped, never inflated (a body refused mid-way).
 */
export type DecodedBody = Readable & { readonly receivedEncodedLength: number; stop(err: Error): void };

/**
 * Decodes `source` through `codings` (checked with {@link checkCodings}, in the order applied),
 * streaming, holding both the encoded and the decoded bytes to `limit`.
 * @returns the decoded stream; it fails with a GatewayError: 413 `request_too_large` past
 *   `limit` bytes (the decoders stop there), 400 `invalid_body_encoding` for data its coding
 *   cannot decode; or with the source's own error (a client gone).
 */
export function decodeBody(source: Readable, codings: readonly string[], limit: number): DecodedBody {
  const tooLarge = (what: string) => () =>
    new GatewayError('GW_ERR_BODY_TOO_LARGE', {
      message: `The ${what} request body is larger than this gateway accepts (server.body_limit_bytes, ${limit} bytes).`,
    });
  const encoded = new ByteCounter(limit, tooLarge('encoded'));
  const out = new ByteCounter(limit, tooLarge('decoded'));
  Object.defineProperty(out, 'receivedEncodedLength', { get: () => encoded.bytes });
  const stages: Transform[] = [encoded];
  let failed = false;
  const fail = (err: Error): void => {
    if (failed) return;
    failed = true;
    source.unpipe(encoded);
    // The rest is read and dropped; the answer closes the connection (server/http/request-hooks.ts).
    source.resume();
    for (const s of stages) s.destroy();
    out.destroy(err);
  };
  const build = (head: Buffer): void => {
    let from: Readable = encoded;
    // The last coding applied is decoded first.
    for (const coding of [...codings].reverse()) {
      const d = decoder(coding, from === encoded ? head : Buffer.alloc(0));
      d.on('error', (err) => {
        if (err instanceof GatewayError) return fail(err);
        fail(
          new GatewayError('GW_ERR_BODY_ENCODING', {
            message: `The request body could not be decoded as ${coding}, as its Content-Encoding says (${err.message}).`,
          }),
        );
      });
      stages.push(d);
      from = from.pipe(d);
    }
    from.pipe(out);
  };
  Object.defineProperty(out, 'stop', { value: fail });
  encoded.onFirst = build;
  encoded.onEmpty = () => build(Buffer.alloc(0));
  encoded.on('error', fail);
  out.on('error', fail);
  source.on('error', fail);
  // Read once the parser reads (its listeners are on): an error before would reach no one.
  out.once('resume', () => {
    if (!failed) source.pipe(encoded);
  });
  return out as unknown as DecodedBody;
}

/**
 * Adds the decoding as a `preParsing` hook of `app`, for routes with `config.decodesBody`.
 * @param limit the current `server.body_limit_bytes`, bytes.
 */
export function useBodyDecoding(app: FastifyInstance, limit: () => number): void {
  app.addHook('preParsing', async (req, _reply, payload) => {
    if (req.routeOptions.config?.decodesBody !== true) return payload;
    const codings = requestCodings(req.headers['content-encoding']);
    if (codings.length === 0) return payload;
    checkCodings(codings);
    return decodeBody(payload, codings, limit());
  });
}
