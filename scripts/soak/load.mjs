// The soak's load generator: one chat call (JSON or SSE) through a gateway, read to the end
// and classified by who caused the outcome. A failure is the upstream's when the gateway's
// answer names an upstream failure (a 5xx or error event with an `upstream_*` code, or the
// provider's own 429 relayed once every account refused); anything else that is not a
// complete answer is the gateway's: an internal error, a refusal of its own, a stream that
// ends without `[DONE]` or an error event, a connection error, a timeout.
import { Agent, request } from 'undici';

const UPSTREAM_CODES = new Set([
  'upstream_unreachable',
  'upstream_timeout',
  'upstream_bad_response',
  'upstream_stream_error',
  'upstream_error',
  'upstream_overloaded',
]);

export const dispatcher = new Agent({ connections: 512, pipelining: 1, keepAliveTimeout: 30_000 });

function errorOf(text) {
  try {
    return JSON.parse(text)?.error ?? null;
  } catch {
    return null;
  }
}

/**
 * One call to `url` (`/v1/chat/completions`) with `key`; resolves (never rejects) with
 * { status, requestId, outcome: 'ok' | 'upstream' | 'gateway', cause, ms }.
 */
export async function call(url, key, stream, timeoutMs = 30_000) {
  const t0 = Date.now();
  const done = (status, requestId, outcome, cause) => ({ status, requestId, outcome, cause, ms: Date.now() - t0 });
  try {
    const res = await request(url, {
      method: 'POST',
      dispatcher,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'soak-model',
        stream,
        messages: [{ role: 'user', content: 'Summarise the soak test in one line.' }],
        ...(stream ? { stream_options: { include_usage: true } } : {}),
      }),
      headersTimeout: timeoutMs,
      bodyTimeout: timeoutMs,
    });
    const requestId = String(res.headers['x-request-id'] ?? '');
    const text = await res.body.text();
    if (res.statusCode !== 200) {
      const e = errorOf(text);
      const code = e?.code ?? e?.type ?? 'no error body';
      const upstream =
        UPSTREAM_CODES.has(code) || (res.statusCode === 429 && code === 'rate_limit_exceeded' && res.headers['x-switchyard-upstream'] !== undefined);
      return done(res.statusCode, requestId, upstream ? 'upstream' : 'gateway', `${res.statusCode} ${code}`);
    }
    if (!stream) return done(200, requestId, errorOf(text) === null && text.includes('"choices"') ? 'ok' : 'gateway', 'json');
    const frames = text
      .split('\n\n')
      .filter((f) => f.startsWith('data: '))
      .map((f) => f.slice(6));
    const last = frames.at(-1);
    if (last === '[DONE]') return done(200, requestId, 'ok', 'sse');
    const e = last ? errorOf(last) : null;
    if (e) return done(200, requestId, UPSTREAM_CODES.has(e.code) ? 'upstream' : 'gateway', `stream error ${e.code ?? e.type}`);
    return done(200, requestId, 'gateway', 'stream cut without [DONE] or error event');
  } catch (err) {
    return done(0, '', 'gateway', `client ${err.code ?? err.name}`);
  }
}
