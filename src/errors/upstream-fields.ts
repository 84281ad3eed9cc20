/**
 * Reads the fields of an upstream's error object (OpenAI's `{message,type,param,code}`,
 * or a bare string as some OpenAI-compatible servers send) with every field scrubbed of
 * key material, so nothing the upstream echoes can leak a credential to the client.
 */
import { redactSecrets } from '../util/redact.js';

export interface ErrorFields {
  message: string;
  type: string;
  code: string | null;
  param: string | null;
}

/**
 * @param err the value of the upstream's `error` field (object, string, or anything else).
 * @param defaults used for fields the upstream did not give.
 * @param secrets exact strings to scrub in addition to key-shaped tokens.
 */
export function upstreamErrorFields(err: unknown, defaults: ErrorFields, secrets: readonly (string | undefined)[]): ErrorFields {
  const out: ErrorFields = { ...defaults };
  if (typeof err === 'string') {
    out.message = err;
  } else if (err && typeof err === 'object') {
    const e = err as Record<string, unknown>;
    if (typeof e['message'] === 'string') out.message = e['message'];
    if (typeof e['type'] === 'string') out.type = e['type'];
    if (typeof e['code'] === 'string' || typeof e['code'] === 'number') out.code = String(e['code']);
    if (typeof e['param'] === 'string') out.param = e['param'];
  }
  const scrub = (v: string | null): string | null => (v === null ? null : redactSecrets(v, secrets));
  return { message: redactSecrets(out.message, secrets), type: scrub(out.type) ?? defaults.type, code: scrub(out.code), param: scrub(out.param) };
}
