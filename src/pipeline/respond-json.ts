/**
 * Relays a non-streaming upstream response: reads the (decoded) body, takes the usage from
 * it (in the API's dialect), and sends the upstream's bytes to the client unchanged, with the request's cost
 * (`price`, the target's) in `x-switchyard-cost-usd`.
 */
import type { FastifyReply } from 'fastify';
import { GatewayError } from '../errors/codes.js';
import type { UpstreamResponse } from '../providers/types.js';
import type { RequestRecord } from './context.js';
import { readCapped } from '../upstream/send.js';
import type { PriceConfig } from '../config/schema.js';
import { costUsd, formatCost } from './usage.js';
import type { InboundApi } from '../apis/types.js';

/** Largest upstream JSON body accepted; far above any chat completion. */
const MAX_JSON_BODY = 64 * 1024 * 1024;

/**
 * @throws GatewayError `GW_ERR_UPSTREAM_BAD_RESPONSE` when the body is not JSON (nothing
 *         was sent to the client yet); network errors while reading the body.
 */
export async function relayJson(
  api: InboundApi,
  reply: FastifyReply,
  upstream: UpstreamResponse,
  rec: RequestRecord,
  headers: Record<string, string>,
  price: Required<PriceConfig>,
): Promise<void> {
  const { buf, truncated } = await readCapped(upstream.body, MAX_JSON_BODY);
  let parsed: unknown;
  try {
    if (truncated) throw new Error('too large');
    parsed = JSON.parse(buf.toString('utf8'));
  } catch {
    throw new GatewayError('GW_ERR_UPSTREAM_BAD_RESPONSE');
  }
  const usage = api.jsonUsage(parsed);
  if (usage) rec.usage = usage;
  rec.costUsd = costUsd(rec.usage, price);
  rec.status = 200;
  const type = upstream.headers['content-type'];
  void reply
    .status(200)
    .headers(headers)
    .header('content-type', typeof type === 'string' ? type : 'application/json')
    .header('x-switchyard-cost-usd', formatCost(rec.costUsd))
    .send(buf);
}
