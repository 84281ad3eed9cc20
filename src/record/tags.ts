/**
 * A request's tags: who and why it was made (`team=search`, `repo=api`, `dev=ana`), for the
 * ledger's per-tag spend and the tag metrics. From the key's `metadata` (set by the operator,
 * so it wins), the `x-switchyard-tags` request header (`name=value` pairs, comma-separated)
 * and the headers named in `tags.headers` (an agent's session id). Bounded so a
 * client cannot grow the ledger or the metrics without limit.
 */
import { TAG_NAME } from '../config/schema-tags.js';
import { GatewayError } from '../errors/codes.js';

/** At most this many tags per request (metadata included). */
export const MAX_TAGS = 16;
/** Tag names: lower-case letter first, then letters, digits, `_`, `-`, `.`; at most 32 characters. */
const NAME = new RegExp(TAG_NAME);
/** The characters of tag values: printable ASCII other than `,` and `=`. */
const VALUE_CHARS = '\\x20-\\x2b\\x2d-\\x3c\\x3e-\\x7e';
/** Tag values: 1–128 of {@link VALUE_CHARS}. */
const VALUE = new RegExp(`^[${VALUE_CHARS}]{1,128}$`);
/** What a header tag's value loses: every character not in {@link VALUE_CHARS}. */
const NOT_VALUE = new RegExp(`[^${VALUE_CHARS}]`, 'g');

export type Tags = Readonly<Record<string, string>>;
export const NO_TAGS: Tags = Object.freeze({});

function invalid(message: string): GatewayError {
  return new GatewayError('GW_ERR_INVALID_REQUEST', { message, param: 'x-switchyard-tags' });
}

/** A configured header's value as a tag value: its printable part, at most 128 characters; null when nothing is left. */
function headerValue(v: string | string[] | undefined): string | null {
  const text = (Array.isArray(v) ? v[0] : v)?.replace(NOT_VALUE, '').trim().slice(0, 128);
  return text ? text : null;
}

/** Whether `o` has no own enumerable key. */
function none(o: object): boolean {
  for (const k in o) if (Object.hasOwn(o, k)) return false;
  return true;
}

/**
 * The tags of one request, lowest precedence first: the configured tag headers
 * (`tags.headers`, e.g. an agent's session id), the `x-switchyard-tags` header, the key's
 * `metadata` (set by the operator, so it wins).
 * @param headers the request's headers (Node's lower-cased `IncomingHttpHeaders`).
 * @param metadata the key's configured `metadata`.
 * @param fromHeaders `tags.headers`: tag name -> header name(s), the first present wins.
 * @throws GatewayError GW_ERR_INVALID_REQUEST (400) when `x-switchyard-tags` is malformed: a
 *         pair without `=`, a bad name or value, a name given twice, or more than {@link MAX_TAGS}.
 */
export function requestTags(
  headers: Readonly<Record<string, string | string[] | undefined>>,
  metadata: Tags | undefined,
  fromHeaders: Readonly<Record<string, string | readonly string[]>> = {},
): Tags {
  if (metadata === undefined && headers['x-switchyard-tags'] === undefined && none(fromHeaders)) return NO_TAGS;
  const out: Record<string, string> = {};
  const fromConfig: Record<string, string> = {};
  for (const [name, names] of Object.entries(fromHeaders)) {
    for (const h of typeof names === 'string' ? [names] : names) {
      const v = headerValue(headers[h.toLowerCase()]);
      if (v !== null) {
        fromConfig[name] = v;
        break;
      }
    }
  }
  const header = headers['x-switchyard-tags'];
  const text = Array.isArray(header) ? header.join(',') : header;
  if (text !== undefined && text.trim() !== '') {
    for (const raw of text.split(',')) {
      const pair = raw.trim();
      if (pair === '') continue;
      const eq = pair.indexOf('=');
      if (eq <= 0) throw invalid(`Invalid x-switchyard-tags header: "${pair.slice(0, 40)}" is not name=value; send e.g. "team=search,repo=api".`);
      const name = pair.slice(0, eq).trim();
      const value = pair.slice(eq + 1).trim();
      if (!NAME.test(name))
        throw invalid(`Invalid tag name "${name.slice(0, 40)}": use a lower-case letter then letters, digits, "_", "-" or "." (at most 32).`);
      if (!VALUE.test(value)) throw invalid(`Invalid value for tag "${name}": use 1 to 128 printable ASCII characters without "," or "=".`);
      if (Object.hasOwn(out, name)) throw invalid(`Tag "${name}" is given twice in x-switchyard-tags.`);
      out[name] = value;
    }
  }
  for (const [name, value] of Object.entries(fromConfig)) if (!Object.hasOwn(out, name)) out[name] = value;
  for (const [name, value] of Object.entries(metadata ?? {})) {
    if (NAME.test(name) && VALUE.test(value)) out[name] = value;
  }
  if (Object.keys(out).length > MAX_TAGS) throw invalid(`Too many tags: at most ${MAX_TAGS} per request, the key's metadata included.`);
  return Object.freeze(out);
}
