/**
 * Relays a non-streaming upstream answer: reads the (decoded) body once, hands it to the
 * attempt's translator (a same-API translator returns the upstream's bytes unchanged), and
 * sends the result with the request's cost (`price`, the serving target's) in
 * `x-switchyard-cost-usd`. An answer without usage is counted with the tokenizer and marked
 * estimated; a 2xx body that is an error object is a failure (nothing is sent).
 *
 * Once the body is handed to Fastify the answer is delivered: a client that leaves while it
 * is being written still has an `ok` request. One that left before (while the upstream
 * answered, or while its answer was counted) gets nothing; the usage counted stays on the
 * request's record.
 */
import type { FastifyReply } from 'fastify';
import type { PriceConfig } from '../config/schema.js';
import { classifiedAs, classifyFailure } from '../errors/classify.js';
import { GatewayError } from '../errors/codes.js';
import type { UpstreamResponse } from '../providers/types.js';
import { unreadable } from '../translate/failure.js';
import type { Failure, Translator } from '../translate/types.js';
import { readCapped } from '../upstream/send.js';
import { estimateUsage, type Prompt } from '../usage/estimate.js';
import { costUsd, formatCost, ZERO_USAGE, type Usage } from '../usage/usage.js';

/** Largest upstream JSON body accepted (bytes); far above any real answer. */

/**
 * @returns the usage sent; the usage of an answer the client left before it was sent, with
 *   the abort reason (`aborted`); or the failure when nothing was sent (unreadable body,
 *   connection lost while reading: the route may fail over).
 * @throws the abort reason when `signal` fired while reading.
 */
export async function relayJson(
  translator: Translator,
  reply: FastifyReply,
  upstream: UpstreamResponse,
  headers: Record<string, string>,
  price: Required<PriceConfig>,
  signal: AbortSignal,
  prompt: Prompt,
  maxBytes: number,
): Promise<{ readonly usage: Usage | null; readonly estimated: boolean; readonly aborted?: unknown } | { readonly failure: Failure }> {
  let buf: Buffer;
  let truncated: boolean;
  try {
    ({ buf, truncated } = await readCapped(upstream.body, maxBytes));
  } catch (err) {
    if (signal.aborted) throw signal.reason;
    // Only the upstream's bytes are read here: whatever broke, it is the upstream's answer.
    const thrown = classifyFailure({ thrown: err });
    const classified = thrown.class === 'gateway' ? classifiedAs('unknown') : thrown;
    // An upstream gone silent mid-answer (the idle timeout) is a timeout, as on a stream.
    const error =
      classified.class === 'timeout'
        ? new GatewayError('GW_ERR_UPSTREAM_TIMEOUT')
        : new GatewayError('GW_ERR_UPSTREAM_STREAM', { message: 'The upstream connection failed while sending its answer.' });
    return { failure: { classified, error } };
  }
  if (truncated) return { failure: unreadable(`The upstream's answer is larger than ${maxBytes} bytes (routing.max_answer_bytes); it was not relayed.`) };
  let parsed: unknown;
  try {
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
  if (result.failure) return { failure: result.failure };
  // An answer without usage is counted with the tokenizer (prompt and generated text), never free.
  const estimated = result.usage === null;
  const usage = result.usage ?? (await estimateUsage({ output: [result.text ?? ''], reasoning: [] }, prompt).catch(() => null));
  if (signal.aborted) return { usage, estimated, aborted: signal.reason };
  const cost = costUsd(usage ?? ZERO_USAGE, price);
  const type = upstream.headers['content-type'];
  void reply
    .status(200)
    .headers(headers)
    .header('content-type', result.body === buf && typeof type === 'string' ? type : 'application/json')
    .header('x-switchyard-cost-usd', formatCost(cost))
    .send(result.body);
  return { usage, estimated };
}
