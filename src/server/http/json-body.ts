/**
 * Request bodies read as JSON, whatever their content type (`curl -d` sends form-encoded by
 * default, and OpenAI itself accepts such bodies), without holding the event loop long.
 *
 * - A `__proto__` key (or a `constructor` holding a `prototype`) is dropped, not refused as
 *   unparseable: it means nothing to any API, and the rest of the body is the client's
 *   request (secure-json-parse's `remove`, the parser Fastify itself uses).
 * - A body under {@link BIG_BODY_BYTES} is parsed at once, as Fastify's default parser does.
 * - A bigger one (an agent's 24 MB history) is decoded in one turn, then parsed in pieces, one
 *   top-level value or top-level array element at a time with turns of the loop between them
 *   (server/http/json-pieces.ts), the poisoning scan run on each piece (only when the text
 *   holds `__proto__`, `constructor` or a `\u00` escape that could spell one). The longest
 *   turn is then one message of the history, not the body (`npm run bench:big-prompts`,
 *   docs/reliability.md).
 *
 * Errors are Fastify's own (400 through the error handler): an empty body
 * `FST_ERR_CTP_EMPTY_JSON_BODY`, anything not JSON `FST_ERR_CTP_INVALID_JSON_BODY`.
 */
import { errorCodes, type FastifyInstance, type FastifyRequest } from 'fastify';
import sjson from 'secure-json-parse';
import { parseJsonInPieces } from './json-pieces.js';

/** From this many bytes a body is parsed in steps (see the module comment). */
export const BIG_BODY_BYTES = 1 << 20;

const POISON = { protoAction: 'remove', constructorAction: 'remove' } as const;

type Done = (err: Error | null, body?: unknown) => void;

const nextTurn = (fn: () => void): void => {
  setImmediate(fn);
};

/** Whether a JSON text could hold a `__proto__` or `constructor` key, spelled plainly or with `\u00XX` escapes (one regex pass: ~6 ms on 24 MB). */
const MAYBE_POISONED = /__proto__|constructor|\\u00/;

/** The top level of a parsed body filtered as secure-json-parse's `remove` filters a node: its own `__proto__` dropped, a `constructor` holding a `prototype` dropped. */
function dropPoisonedKeys(value: Record<string, unknown>): void {
  if (Object.prototype.hasOwnProperty.call(value, '__proto__')) delete value['__proto__'];
  const ctor = Object.prototype.hasOwnProperty.call(value, 'constructor') ? value['constructor'] : undefined;
  if (ctor !== null && typeof ctor === 'object' && Object.prototype.hasOwnProperty.call(ctor, 'prototype')) delete value['constructor'];
}

/** Parses a big body in pieces (json-pieces.ts); calls `done` once. */
function parseBig(raw: Buffer, done: Done): void {
  nextTurn(() => {
    let text = raw.toString('utf8');
    if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
    const suspect = MAYBE_POISONED.test(text);
    const scan = suspect ? (piece: unknown): void => void (piece !== null && typeof piece === 'object' && sjson.scan(piece, POISON)) : undefined;
    parseJsonInPieces(text, scan).then(
      (value) => {
        if (suspect && value !== null && typeof value === 'object') {
          if (Array.isArray(value)) sjson.scan(value, POISON);
          else dropPoisonedKeys(value as Record<string, unknown>);
        }
        done(null, value);
      },
      () => done(new errorCodes.FST_ERR_CTP_INVALID_JSON_BODY()),
    );
  });
}

/**
 * Replaces `app`'s JSON and catch-all content-type parsers with the one above (body limit:
 * Fastify's `bodyLimit`, checked as the body arrives).
 */
export function useJsonBodies(app: FastifyInstance): void {
  const atOnce = app.getDefaultJsonParser('remove', 'remove');
  const parse = (req: FastifyRequest, raw: Buffer, done: Done): void => {
    if (raw.length < BIG_BODY_BYTES) return void atOnce(req, raw.toString('utf8'), done);
    parseBig(raw, done);
  };
  app.removeContentTypeParser(['application/json', 'text/plain']);
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, parse);
  app.addContentTypeParser('*', { parseAs: 'buffer' }, parse);
}
