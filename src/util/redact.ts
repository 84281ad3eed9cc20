/**
 * Scrubs key material from text that may reach a client or a log: provider keys
 * (`sk-…`, including OpenAI's masked echo `sk-abc***xyz`), bearer tokens, and any exact
 * secret the caller passes (the upstream's configured key) in the forms an upstream may
 * echo it: as is, percent-encoded (a key sent in a query string, `?key=…`, comes back in
 * a URL; RFC 3986 §2.1) and JSON-escaped (a key inside an echoed JSON string).
 */
const KEY_LIKE = /\b(?:sk|pk|rk|sess|key)-[A-Za-z0-9_*.-]{6,}/g;
const BEARER = /\b(Bearer)\s+[A-Za-z0-9._~+/=*-]{6,}/gi;

/** The spellings of `secret` an echo may carry, the plain one first, each once. */
function spellings(secret: string): string[] {
  const out = [secret];
  const add = (s: string): void => {
    if (!out.includes(s)) out.push(s);
  };
  add(encodeURIComponent(secret));
  add(encodeURIComponent(secret).replace(/%20/g, '+'));
  add(JSON.stringify(secret).slice(1, -1));
  return out;
}

/** Returns `text` with every secret-looking token replaced by `[redacted]`. */
export function redactSecrets(text: string, exact: readonly (string | undefined)[] = []): string {
  let out = text;
  for (const s of exact) {
    if (!s || s.length < 4) continue;
    for (const form of spellings(s)) out = out.split(form).join('[redacted]');
    // Percent-encodings are case-insensitive (%2b = %2B).
    const lower = encodeURIComponent(s).replace(/%[0-9A-F]{2}/g, (m) => m.toLowerCase());
    if (lower !== s) out = out.split(lower).join('[redacted]');
  }
  return out.replace(KEY_LIKE, '[redacted]').replace(BEARER, '$1 [redacted]');
}
