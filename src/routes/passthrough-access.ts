/**
 * What a passthrough request (routes/passthrough.ts) must pass before it is proxied, as a
 * model call must: a key held to some models (`models` other than `*`) may only call the
 * models it lists. A JSON body names its model (`/v1/embeddings`, `/v1/moderations`,
 * `/v1/images/generations`, `/v1/audio/speech`), so it is read (up to the body limit; JSON
 * bodies of these endpoints are small) and its `model` checked like a model route's. Where
 * the gateway cannot see which model will run (multipart uploads such as audio
 * transcriptions, files, batches, which run the models named inside their input file,
 * uploads, or a JSON body without `model`), only a key allowed every model may call: the
 * passthrough must not let a restricted key reach other models of the shared account, nor
 * read the account's files.
 */
import type { FastifyRequest } from 'fastify';
import { Readable } from 'node:stream';
import { mayUse, type Caller } from '../auth/keys.js';
import { GatewayError } from '../errors/codes.js';
import { checkCodings, decodeBody, requestCodings } from '../server/http/body-decoding.js';
import { BIG_BODY_BYTES } from '../server/http/json-body.js';
import { parseJsonInPieces } from '../server/http/json-pieces.js';

/** A JSON body read for its model: the bytes (forwarded unchanged) and the model it names, if any. */
export interface ReadBody {
  readonly bytes: Buffer;
  readonly model: string | null;
}

/** Whether the request carries a JSON body (its content type says so). */
export function isJson(req: FastifyRequest): boolean {
  return /^application\/(?:[\w.+-]+\+)?json\b/i.test(String(req.headers['content-type'] ?? ''));
}

/**
 * Reads a request body stream up to `limit` bytes.
 * @throws GatewayError 413 `request_too_large` past it (the rest is drained, not read).
 */
function readAll(stream: Readable, limit: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    let size = 0;
    const done = (): void => {
      stream.off('data', onData);
      stream.off('end', onEnd);
      stream.off('error', onError);
    };
    const onData = (chunk: Buffer | string): void => {
      const b = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
      size += b.length;
      if (size <= limit) {
        parts.push(b);
        return;
      }
      done();
      stream.resume();
      reject(
        new GatewayError('GW_ERR_BODY_TOO_LARGE', {
          message: `The request body is larger than this gateway accepts (server.body_limit_bytes, ${limit} bytes).`,
        }),
      );
    };
    const onEnd = (): void => {
      done();
      resolve(Buffer.concat(parts));
    };
    const onError = (err: Error): void => {
      done();
      reject(err);
    };
    stream.on('data', onData);
    stream.on('end', onEnd);
    stream.on('error', onError);
  });
}

/**
 * The JSON body of a passthrough request and the model it names; null when the request has
 * no JSON body (multipart, none).
 * @throws GatewayError 400 `invalid_json` for a body that is not JSON, 413 past `limit` bytes
 *   (encoded or decoded), 400 `invalid_body_encoding` / 415 `unsupported_content_encoding`
 *   for a compressed body that cannot be decoded.
 */
export async function readJsonBody(req: FastifyRequest, limit: number): Promise<ReadBody | null> {
  const stream = req.body as Readable | undefined;
  if (!isJson(req) || !stream || typeof stream.on !== 'function') return null;
  const bytes = await readAll(stream, limit);
  // A compressed body is forwarded as it came, Content-Encoding and all; a decoded copy is
  // read for the model (held to the same limit: a bomb gets 413; corrupt data 400; 415 for a
  // coding this gateway cannot decode, server/http/body-decoding.ts).
  const codings = requestCodings(req.headers['content-encoding']);
  let plain = bytes;
  if (codings.length > 0) {
    checkCodings(codings);
    plain = await readAll(decodeBody(Readable.from([bytes]), codings, limit), limit);
  }
  let parsed: unknown;
  try {
    // A big body (an embeddings batch) is parsed in pieces so the loop keeps turning (json-pieces.ts).
    parsed = plain.length === 0 ? {} : plain.length < BIG_BODY_BYTES ? JSON.parse(plain.toString('utf8')) : await parseJsonInPieces(plain.toString('utf8'));
  } catch {
    throw new GatewayError('GW_ERR_INVALID_JSON');
  }
  const model = parsed && typeof parsed === 'object' && !Array.isArray(parsed) ? (parsed as Record<string, unknown>)['model'] : undefined;
  return { bytes, model: typeof model === 'string' ? model : null };
}

/**
 * Checks that `caller` may make a passthrough call to `endpoint` naming `model` (null: the
 * gateway cannot tell which model runs).
 * @throws GatewayError 404 `model_not_found` (as on the model routes) for a model the key may
 *   not use; 403 `insufficient_permissions` when no model can be checked and the key is held
 *   to some models.
 */
export function checkPassthroughAccess(caller: Caller | null, endpoint: string, model: string | null): void {
  if (!caller) throw new GatewayError('GW_ERR_INVALID_API_KEY');
  if (model !== null) {
    if (!mayUse(caller, model)) {
      throw new GatewayError('GW_ERR_MODEL_NOT_FOUND', {
        message: `The model \`${model.slice(0, 256)}\` does not exist or you do not have access to it.`,
        param: 'model',
      });
    }
    return;
  }
  if (!caller.models.includes('*')) {
    throw new GatewayError('GW_ERR_FORBIDDEN', {
      message: `This key may use only some models, and the gateway cannot tell which model a ${endpoint} request runs (no \`model\` in a JSON body): only keys allowed every model may call it.`,
    });
  }
}

/** The endpoint a passthrough URL belongs to, for records and messages: `/v1/audio/speech?x` -> `audio`, `/v1/embeddings` -> `embeddings`. */
export function endpointOf(url: string): string {
  return url.split('?')[0]!.split('/')[2] ?? '';
}
