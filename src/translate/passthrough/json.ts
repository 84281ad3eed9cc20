/**
 * The 2xx JSON answer of a same-API translator: the upstream's bytes, unchanged, the usage
 * read from them, the generated text (for an estimate when the answer has no usage), and the
 * failure when a 200 body is in fact an error.
 */
import { GatewayError } from '../../errors/codes.js';
import type { Usage } from '../../usage/usage.js';
import { isObj, type Obj } from '../read.js';
import type { Failure, JsonResult } from '../types.js';

/** How one wire API's answer is read. */
export interface AnswerReader {
  readonly usage: (o: Obj) => Usage | null;
  /** Generated text: content, tool names and arguments, reasoning. */
  readonly text: (o: Obj) => string;
  /** The failure of a 200 body that is an error object, else null. */
  readonly error: (o: Obj) => Failure | null;
}

/**
 * @throws GatewayError `GW_ERR_UPSTREAM_BAD_RESPONSE` when the answer is not a JSON object.
 */
export function jsonAnswer(raw: Buffer, parsed: unknown, read: AnswerReader): JsonResult {
  if (!isObj(parsed)) throw new GatewayError('GW_ERR_UPSTREAM_BAD_RESPONSE', { message: 'The upstream answered with JSON that is not an object.' });
  const failure = read.error(parsed);
  if (failure) return { body: raw, usage: null, failure };
  const usage = read.usage(parsed);
  return usage ? { body: raw, usage } : { body: raw, usage, text: read.text(parsed) };
}

/** Concatenated string values found at `path` keys down an answer (arrays walked), for estimates. */
export function textsOf(v: unknown, keys: ReadonlySet<string>, depth = 0): string {
  if (depth > 6 || v === null || typeof v !== 'object') return '';
  let out = '';
  if (Array.isArray(v)) {
    for (const x of v) out += textsOf(x, keys, depth + 1);
    return out;
  }
  for (const [k, x] of Object.entries(v as Obj)) {
    if (typeof x === 'string') {
      if (keys.has(k)) out += x;
    } else {
      out += textsOf(x, keys, depth + 1);
    }
  }
  return out;
}
