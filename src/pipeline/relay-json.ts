/**
 * Relays a non-streaming upstream answer: reads the (decoded) body once, hands it to the
 * attempt's translator (a same-API translator returns the upstream's bytes unchanged), and
 * sends the result with the request's cost (`price`, the serving target's) in
 * `x-switchyard-cost-usd`.
 */
import type { FastifyReply } from 'fastify';
import type { PriceConfig } from '../config/schema.js';
import { classifyFailure } from '../errors/classify.js';
import { GatewayError } from '../errors/codes.js';
import type { UpstreamResponse } from '../providers/types.js';
import { unreadable } from '../translate/failure.js';
import type { Failure, Translator } from '../translate/types.js';
import { readCapped } from '../upstream/send.js';
import { costUsd, formatCost, ZERO_USAGE, type Usage } from '../usage/usage.js';

/** Largest upstream JSON body accepted (bytes); far above any real answer. */
const MAX_JSON_BODY = 64 * 1024 * 1024;

/**
 * @returns the usage sent, or the failure when nothing was sent (unreadable body, connection
 *   lost while reading: the route may fail over).
 * @throws the abort reason when `signal` fired while reading.
 */
export async function relayJson(
  translator: Translator,
  reply: FastifyReply,
  upstream: UpstreamResponse,
  headers: Record<string, string>,
  price: Required<PriceConfig>,
  signal: AbortSignal,
): Promise<{ readonly usage: Usage | null } | { readonly failure: Failure }> {
  let buf: Buffer;
  let truncated: boolean;
  try {
    ({ buf, truncated } = await readCapped(upstream.body, MAX_JSON_BODY));
  } catch (err) {
    if (signal.aborted) throw signal.reason;
    return { failure: { classified: classifyFailure({ thrown: err }), error: new GatewayError('GW_ERR_UPSTREAM_STREAM', { message: 'The upstream connection failed while sending its answer.' }) } };
  }
  let parsed: unknown;
  try {
    if (truncated) throw new Error('too large');
    parsed = JSON.parse(buf.toString('utf8'));
  } catch {
    return { failure: unreadable('The upstream sent a response the gateway could not read.') };
  }
  let result;
  try {
    result = translator.json(buf, parsed);
  } catch (err) {
    if (err instanceof GatewayError) return { failure: unreadable(err.message) };
    throw err;
  }
  const cost = costUsd(result.usage ?? ZERO_USAGE, price);
  const type = upstream.headers['content-type'];
  void reply
    .status(200)
    .headers(headers)
    .header('content-type', result.body === buf && typeof type === 'string' ? type : 'application/json')
    .header('x-switchyard-cost-usd', formatCost(cost))
    .send(result.body);
  return { usage: result.usage };
}
