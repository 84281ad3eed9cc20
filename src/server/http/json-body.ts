/**
 * Request bodies read as JSON, whatever their content type (`curl -d` sends form-encoded by
 * default, and OpenAI itself accepts such bodies), without holding the event loop long.
 *
 * - A `__proto__` key (or a `constructor` holding a `prototype`) is dropped, not refused as
 *   unparseable: it means nothing to any API, and the rest of the body is the client's
 *   request (secure-json-parse's `remove`, the parser Fastify itself uses).
 * - A body under {@link BIG_BODY_BYTES} is parsed at once, as Fastify's default parser does.
 * - A bigger one (an agent's 24 MB history) is parsed in steps with a turn of the event loop
 *   between them: UTF-8 decoding, `JSON.parse`, and the poisoning scan (only when the text
 *   holds `__proto__`, `constructor` or a `\u00` escape that could spell one). Each step is
 *   tens of ms on a 24 MB body; done back to back for two such prompts they held /healthz
 *   255 ms (`npm run bench:big-prompts`, docs/reliability.md). A worker thread does not help
 *   here: handing the parsed object back costs about what parsing it does.
 *
 * Errors are Fastify's own (400 through the error handler): an empty body
 * `FST_ERR_CTP_EMPTY_JSON_BODY`, anything not JSON `FST_ERR_CTP_INVALID_JSON_BODY`.
 */
import { errorCodes, type FastifyInstance, type FastifyRequest } from 'fastify';
import sjson from 'secure-json-parse';

/** From this many bytes a body is parsed in steps (see the module comment). */
export const BIG_BODY_BYTES = 1 << 20;

const POISON = { protoAction: 'remove', constructorAction: 'remove' } as const;

type Done = (err: Error | null, body?: unknown) => void;

const nextTurn = (fn: () => void): void => {
  setImmediate(fn);
};

/** Whether a JSON text could hold a `__proto__` or `constructor` key, spelled plainly or with `\u00XX` escapes (one regex pass: ~6 ms on 24 MB). */
const MAYBE_POISONED = /__proto__|constructor|\\u00/;

/** Parses a big body over up to three turns of the event loop; calls `done` once. */
function parseBig(raw: Buffer, done: Done): void {
  nextTurn(() => {
    let text = raw.toString('utf8');
    if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
    const suspect = MAYBE_POISONED.test(text);
    nextTurn(() => {
      let value: unknown;
      try {
        value = JSON.parse(text);
      } catch {
        return done(new errorCodes.FST_ERR_CTP_INVALID_JSON_BODY());
      }
      if (value === null || typeof value !== 'object' || !suspect) return done(null, value);
      nextTurn(() => done(null, sjson.scan(value, POISON)));
    });
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
