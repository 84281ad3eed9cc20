/**
 * Scrubs key material from text that may reach a client or a log: provider keys
 * (`sk-…`, including OpenAI's masked echo `sk-abc***xyz`), bearer tokens, and any exact
 * secret the caller passes (the upstream's configured key) in every spelling an upstream may
 * echo it in: as is; with any of its characters percent-encoded, hex in either case, a space
 * as `+` (a key sent in a query string, `?key=…`, comes back in a URL, encoded by whichever
 * encoder: RFC 3986 §2.1, WHATWG URL, form encoding); JSON-escaped (`\"`, `\\`, `\/`,
 * `\uXXXX`: a key inside an echoed JSON string); and base64 at any alignment (an echoed
 * `Authorization: Basic` header, where the key follows `user:`).
 * Written here rather than taken from a library: the scrubbing libraries work on object
 * paths (pino's redact) or fixed patterns, not on one known secret's spellings in free text.
 */
const KEY_LIKE = /\b(?:sk|pk|rk|sess|key)-[A-Za-z0-9_*.-]{6,}/g;
const BEARER = /\b(Bearer)\s+[A-Za-z0-9._~+/=*-]{6,}/gi;
/** Shortest base64 run searched for: shorter ones would match ordinary text. */
const MIN_BASE64 = 12;

const escapeRe = (s: string): string => s.replace(/[.*+?^${}()|[\]\\/-]/g, '\\$&');

/** A pattern for one character of a secret in any of its spellings. */
function charPattern(ch: string): string {
  const alts = [escapeRe(ch)];
  alts.push(
    [...Buffer.from(ch, 'utf8')]
      .map(
        (b) =>
          `%${b
            .toString(16)
            .padStart(2, '0')
            .replace(/[a-f]/g, (h) => `[${h}${h.toUpperCase()}]`)}`,
      )
      .join(''),
  );
  if (ch === ' ') alts.push('\\+');
  if (ch === '"' || ch === '\\' || ch === '/') alts.push(`\\\\${escapeRe(ch)}`);
  for (const unit of ch.split('')) {
    const hex = unit.charCodeAt(0).toString(16).padStart(4, '0');
    alts.push(`\\\\u${hex.replace(/[a-f]/g, (h) => `[${h}${h.toUpperCase()}]`)}`);
  }
  return `(?:${alts.join('|')})`;
}

/** The key's base64 runs at each alignment (the characters that depend on the key alone). */
function base64Runs(secret: string): string[] {
  const key = Buffer.from(secret, 'utf8');
  const runs: string[] = [];
  for (const pad of [0, 1, 2]) {
    const all = Buffer.concat([Buffer.alloc(pad), key]).toString('base64');
    const run = all.slice([0, 2, 3][pad], 4 * Math.floor((pad + key.length) / 3));
    if (run.length >= MIN_BASE64) runs.push(run);
  }
  return runs;
}

/** One pattern per secret, built once (a gateway has a few configured keys). */
const patterns = new Map<string, RegExp>();

function patternOf(secret: string): RegExp {
  let re = patterns.get(secret);
  if (!re) {
    const spelled = [...secret].map(charPattern).join('');
    re = new RegExp([spelled, ...base64Runs(secret).map(escapeRe)].join('|'), 'g');
    if (patterns.size > 1_000) patterns.clear();
    patterns.set(secret, re);
  }
  return re;
}

/** Returns `text` with every secret-looking token replaced by `[redacted]`. */
export function redactSecrets(text: string, exact: readonly (string | undefined)[] = []): string {
  let out = text;
  for (const s of exact) if (s && s.length >= 4) out = out.replace(patternOf(s), '[redacted]');
  return out.replace(KEY_LIKE, '[redacted]').replace(BEARER, '$1 [redacted]');
}
