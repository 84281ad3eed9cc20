/**
 * Scrubs key material from text that may reach a client or a log: provider keys
 * (`sk-…`, including OpenAI's masked echo `sk-abc***xyz`), bearer tokens, and any exact
 * secret the caller passes (the upstream's configured key).
 */
const KEY_LIKE = /\b(?:sk|pk|rk|sess|key)-[A-Za-z0-9_*.-]{6,}/g;
const BEARER = /\b(Bearer)\s+[A-Za-z0-9._~+/=*-]{6,}/gi;

/** Returns `text` with every secret-looking token replaced by `[redacted]`. */
export function redactSecrets(text: string, exact: readonly (string | undefined)[] = []): string {
  let out = text;
  for (const s of exact) if (s && s.length >= 4) out = out.split(s).join('[redacted]');
  return out.replace(KEY_LIKE, '[redacted]').replace(BEARER, '$1 [redacted]');
}
