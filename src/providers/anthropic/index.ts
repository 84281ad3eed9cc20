/**
 * Anthropic upstreams (api.anthropic.com or a compatible proxy): `POST <base_url>/messages`
 * with `x-api-key` and `anthropic-version` (Anthropic API reference, "Messages"). Serves the
 * `messages` API natively (body and response passed through untouched) and the `chat` API
 * by translating OpenAI Chat Completions both ways (request.ts, response.ts, stream.ts,
 * errors.ts).
 */
import { pipeline, Readable } from 'node:stream';
import type { LiveUpstream } from '../../config/load.js';
import { GatewayError } from '../../errors/codes.js';
import { createPool } from '../../upstream/pools.js';
import { discardBody, readCapped, sendUpstream } from '../../upstream/send.js';
import type { ApiName, Provider, ProviderKind, SendRequest, UpstreamResponse } from '../types.js';
import { toOpenAIError } from './errors.js';
import { AnthropicOptionsSchema, resolveAnthropicOptions } from './options.js';
import { toAnthropicRequest } from './request.js';
import { toChatCompletion } from './response.js';
import { AnthropicChatStream } from './stream.js';

/** Largest upstream error body read (bytes); the rest is discarded. */
const MAX_ERROR_BODY = 64 * 1024;
/** Largest upstream JSON message read (bytes); far above any real reply. */
const MAX_JSON_BODY = 64 * 1024 * 1024;

const APIS: ReadonlySet<ApiName> = new Set<ApiName>(['chat', 'messages']);

function header(headers: UpstreamResponse['headers'], name: string): string | undefined {
  const v = headers[name];
  return Array.isArray(v) ? v[0] : v;
}

/** Joins comma-list header values (`anthropic-beta`), dropping duplicates. */
function joinList(...values: (string | undefined)[]): string | undefined {
  const items = values.flatMap((v) => (v ? v.split(',') : [])).map((s) => s.trim()).filter((s) => s !== '');
  return items.length > 0 ? [...new Set(items)].join(',') : undefined;
}

/** A non-2xx Anthropic reply as the OpenAI error response the chat client gets. */
async function translateError(res: UpstreamResponse): Promise<UpstreamResponse> {
  let buf: Buffer = Buffer.alloc(0);
  try {
    buf = (await readCapped(res.body, MAX_ERROR_BODY)).buf;
  } catch {
    // a broken error body still gets the generic message
  }
  const mapped = toOpenAIError(res.statusCode, buf);
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  for (const h of ['retry-after', 'retry-after-ms']) {
    const v = header(res.headers, h);
    if (v) headers[h] = v;
  }
  return { statusCode: mapped.status, headers, body: Readable.from([Buffer.from(JSON.stringify(mapped.body))]) };
}

/** A 2xx JSON Anthropic message as an OpenAI `chat.completion`. */
async function translateJson(res: UpstreamResponse): Promise<UpstreamResponse> {
  const { buf, truncated } = await readCapped(res.body, MAX_JSON_BODY);
  let msg: unknown;
  try {
    if (truncated) throw new Error('upstream JSON body too large');
    msg = JSON.parse(buf.toString('utf8'));
  } catch (err) {
    throw new GatewayError('GW_ERR_UPSTREAM_BAD_RESPONSE', { cause: err });
  }
  if (!msg || typeof msg !== 'object' || Array.isArray(msg)) throw new GatewayError('GW_ERR_UPSTREAM_BAD_RESPONSE');
  const out = Buffer.from(JSON.stringify(toChatCompletion(msg as Record<string, unknown>)));
  return { statusCode: res.statusCode, headers: { 'content-type': 'application/json' }, body: Readable.from([out]) };
}

/**
 * A 2xx Anthropic SSE stream as an OpenAI chat SSE stream. Destroying the returned body
 * destroys the upstream body (pipeline), and an upstream failure destroys the returned
 * body with that error; once the translator ends early (after an `error` event), the
 * upstream body is released.
 */
function translateStream(res: UpstreamResponse): UpstreamResponse {
  const out = new AnthropicChatStream();
  pipeline(res.body, out, () => {});
  out.once('end', () => {
    if (!res.body.readableEnded && !res.body.destroyed) discardBody(res.body);
  });
  const headers: Record<string, string | string[] | undefined> = { ...res.headers, 'content-type': 'text/event-stream; charset=utf-8' };
  delete headers['content-length'];
  return { statusCode: res.statusCode, headers, body: out };
}

/**
 * Creates the provider for one upstream.
 * @param upstream needs `base_url` (e.g. `https://api.anthropic.com/v1`); `apiKey` is sent
 *   as `x-api-key`; `options` follows `AnthropicOptionsSchema`.
 * @throws Error when `upstream.options` does not match the schema.
 */
export function createAnthropic(upstream: LiveUpstream): Provider {
  const opts = resolveAnthropicOptions(upstream.options);
  const base = new URL(upstream.base_url!);
  const prefix = base.pathname.replace(/\/+$/, '');
  const pool = createPool(upstream, base);

  function headersFor(req: SendRequest): Record<string, string> {
    const h: Record<string, string> = { ...upstream.headers, ...req.forwardHeaders };
    const beta = joinList(upstream.headers['anthropic-beta'], req.forwardHeaders?.['anthropic-beta']);
    if (beta) h['anthropic-beta'] = beta;
    h['anthropic-version'] = opts.anthropic_version;
    h['content-type'] = 'application/json';
    h['accept'] = req.stream ? 'text/event-stream' : 'application/json';
    h['accept-encoding'] = 'gzip, deflate, br';
    h['x-request-id'] = req.requestId;
    if (upstream.apiKey) h['x-api-key'] = upstream.apiKey;
    return h;
  }

  function post(req: SendRequest, body: string): Promise<UpstreamResponse> {
    return sendUpstream(pool, {
      path: `${prefix}/messages`,
      method: 'POST',
      headers: headersFor(req),
      body,
      signal: req.signal,
      firstByteMs: upstream.timeouts.first_byte_ms,
      idleMs: upstream.timeouts.idle_ms,
    });
  }

  return {
    apis: APIS,
    async send(req: SendRequest): Promise<UpstreamResponse> {
      if (req.api === 'messages') return post(req, JSON.stringify(req.body));
      if (req.api !== 'chat') {
        throw new GatewayError('GW_ERR_INVALID_REQUEST', { message: `Anthropic upstreams do not serve the ${req.api} API.` });
      }
      const body = toAnthropicRequest(req.body, opts);
      if (req.stream) body['stream'] = true;
      else delete body['stream'];
      const res = await post(req, JSON.stringify(body));
      if (res.statusCode >= 400) return translateError(res);
      const type = header(res.headers, 'content-type') ?? '';
      if (type.toLowerCase().includes('text/event-stream')) return translateStream(res);
      return translateJson(res);
    },
    close: () => pool.close(),
  };
}

/** Registry entry for `provider: anthropic`. */
export const anthropicKind: ProviderKind = { create: createAnthropic, options: AnthropicOptionsSchema, needsBaseUrl: true };
