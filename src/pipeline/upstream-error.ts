/**
 * Turns an upstream's non-2xx response into the error the client gets: the upstream's
 * status and its OpenAI-style error fields (message scrubbed of key material), or a
 * generic message when the body is not OpenAI-shaped. A bad key or a model the account may
 * not use (classes credential, permission) is the gateway's problem, not the caller's: the
 * client gets 502 without that body.
 */
import { GatewayError } from '../errors/codes.js';
import { classifyFailure, type Classified } from '../errors/classify.js';
import { upstreamErrorFields } from '../errors/upstream-fields.js';
import type { UpstreamResponse } from '../providers/types.js';
import { readCapped } from '../upstream/send.js';

const MAX_ERROR_BODY = 64 * 1024;

function header(res: UpstreamResponse, name: string): string | undefined {
  const v = res.headers[name];
  return Array.isArray(v) ? v[0] : v;
}

export interface UpstreamFailure {
  readonly classified: Classified;
  readonly error: GatewayError;
  /** The upstream's own message, scrubbed of key material (for the gateway's log, not the client). */
  readonly reason: string;
}

/**
 * Reads an error response.
 * @param secrets exact strings to scrub (the upstream's key).
 */
export async function readUpstreamError(res: UpstreamResponse, secrets: readonly (string | undefined)[]): Promise<UpstreamFailure> {
  let parsed: unknown;
  try {
    const { buf } = await readCapped(res.body, MAX_ERROR_BODY);
    parsed = JSON.parse(buf.toString('utf8'));
  } catch {
    parsed = undefined;
  }
  const headers: Record<string, string> = {};
  for (const h of ['retry-after', 'retry-after-ms']) {
    const v = header(res, h);
    if (v) headers[h] = v;
  }
  const fields = upstreamErrorFields(
    (parsed as { error?: unknown } | undefined)?.error,
    {
      message: `The upstream provider returned HTTP ${res.statusCode}.`,
      type: res.statusCode >= 500 ? 'server_error' : 'invalid_request_error',
      code: null,
      param: null,
    },
    secrets,
  );
  const classified = classifyFailure({ status: res.statusCode, type: fields.type, code: fields.code, message: fields.message });
  if (classified.class === 'credential' || classified.class === 'permission') {
    const opts = classified.class === 'permission' ? { message: 'The upstream provider refused the gateway access to this model.' } : {};
    return { classified, error: new GatewayError('GW_ERR_UPSTREAM_AUTH', opts), reason: fields.message };
  }
  return {
    classified,
    reason: fields.message,
    error: new GatewayError('GW_ERR_UPSTREAM_ERROR', {
      status: res.statusCode,
      message: fields.message,
      type: fields.type,
      openaiCode: fields.code,
      param: fields.param,
      headers,
    }),
  };
}
