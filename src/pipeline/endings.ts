/**
 * How a model call ends, in every case: an attempt's outcome, a route that stopped, or an
 * error thrown before or between attempts. Each sends what the client must get (when
 * nothing went out yet) and returns the `Ending` that `finish` records.
 */
import { ClientDisconnected, ShuttingDown } from '../errors/aborts.js';
import { isCallerFault } from '../errors/classify.js';
import { GatewayError } from '../errors/codes.js';
import { sendError } from '../errors/reply.js';
import type { Strategy } from '../config/schema.js';
import type { Call } from './call.js';
import type { AttemptOutcome, Ending, Progress, Relayed } from './outcome.js';
import { routeHeaders } from './select.js';

/** What was counted of an answer. */
interface Counted {
  readonly usage: Relayed['usage'];
  readonly estimated: boolean;
  readonly ttftMs: number | null;
}

/**
 * An ending: how far the call got (`p`), what was counted, and how it ended. Built as one
 * object literal of a fixed shape (spreading partial objects here showed up in profiles).
 */
function make(p: Progress, c: Counted, status: number, outcome: Ending['outcome'], errorClass: string | null): Ending {
  const a = p.attempt;
  return {
    status,
    outcome,
    errorClass,
    model: p.model?.name ?? null,
    served: a ? { model: a.model.name, upstream: a.target.upstream.id, upstreamModel: a.target.model } : null,
    usage: c.usage,
    estimated: c.estimated,
    ttftMs: c.ttftMs,
    attempts: a?.number ?? 0,
    fallback: p.route?.fallback ?? null,
    shed: p.route?.shed ?? null,
    price: a?.target.price ?? p.model?.price ?? null,
  };
}

const NO_USAGE: Counted = { usage: null, estimated: false, ttftMs: null };

/** The ending of a call aborted by the client leaving or the drain deadline. */
function abortEnding(call: Call, p: Progress, reason: unknown, relayed: Relayed | null): Ending {
  const counted: Counted = relayed ?? NO_USAGE;
  if (reason instanceof ShuttingDown) {
    // A stream already started got its final error event in the relay.
    if (relayed?.committed) return make(p, counted, 200, 'gateway_error', null);
    const status = sendError(call.reply, new GatewayError('GW_ERR_SHUTTING_DOWN'), { connection: 'close' });
    if (call.reply.raw.headersSent && !call.reply.raw.writableEnded) call.reply.raw.destroy();
    return make(p, counted, status, 'gateway_error', null);
  }
  return make(p, counted, 499, 'client_aborted', null);
}

/** The ending of an attempt that answered, was refused, or was aborted. */
export function ended(call: Call, p: Progress, outcome: Exclude<AttemptOutcome, { kind: 'failed' }>): Ending {
  switch (outcome.kind) {
    case 'answered': {
      const r = outcome.relayed;
      const failed = r.failure !== null;
      return make(p, r, 200, failed ? 'upstream_error' : 'ok', failed ? r.failure!.classified.class : null);
    }
    case 'aborted':
      return abortEnding(call, p, outcome.relayed.aborted, outcome.relayed);
    case 'refused': {
      const status = sendError(call.reply, outcome.error);
      return make(p, NO_USAGE, status, status >= 500 ? 'gateway_error' : 'client_error', null);
    }
  }
}

/** The ending of a route that stopped: the last upstream failure (or why no attempt was made) goes to the client. */
export function stopped(call: Call, p: Progress, strategy: Strategy, err: GatewayError): Ending {
  const route = p.route!;
  const last = route.lastFailure?.classified ?? null;
  // Switchyard already retried a failing upstream; the SDK retrying on top would multiply the
  // load. A 429 (every account throttled, or shed) is different: its Retry-After is honest,
  // and the client's own retry after it is what should happen.
  const noRetry: Record<string, string> = route.attempts > 0 && err.status >= 500 ? { 'x-should-retry': 'false' } : {};
  const upstream: Record<string, string> = p.attempt ? { 'x-switchyard-upstream': p.attempt.target.upstream.id } : {};
  const status = sendError(call.reply, err, { ...call.limitHeaders, ...noRetry, ...upstream, ...routeHeaders(call.req.id, route, strategy, null) });
  return make(p, NO_USAGE, status, last && isCallerFault(last) ? 'client_error' : 'upstream_error', last?.class ?? null);
}

/** The ending of an error thrown before or between attempts (bad request, limits, abort while queued, a bug). */
export function failedEnding(call: Call, p: Progress, err: unknown): Ending {
  const signal = call.abort.signal;
  if (err instanceof ClientDisconnected || err instanceof ShuttingDown || signal.aborted) return abortEnding(call, p, signal.aborted ? signal.reason : err, null);
  if (err instanceof GatewayError) {
    const status = sendError(call.reply, err, call.limitHeaders);
    return make(p, NO_USAGE, status, err.status >= 500 ? 'gateway_error' : 'client_error', null);
  }
  call.req.log.error({ err }, 'unexpected error in the model-call pipeline');
  const raw = call.reply.raw;
  const status = raw.headersSent ? 500 : sendError(call.reply, new GatewayError('GW_ERR_INTERNAL'));
  if (raw.headersSent && !raw.writableEnded) raw.destroy();
  return make(p, NO_USAGE, status, 'gateway_error', null);
}
