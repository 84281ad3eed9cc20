/**
 * How a model call ends, in every case: an attempt's outcome, a route that stopped, or an
 * error thrown before or between attempts. Each sends what the client must get (when
 * nothing went out yet) and returns the `Ending` that `finish` records.
 */
import { ClientDisconnected, ShuttingDown } from '../errors/aborts.js';
import { isCallerFault } from '../errors/classify.js';
import { GatewayError } from '../errors/codes.js';
import type { ErrorCode } from '../errors/table.js';
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
    model: p.model?.name ?? p.named,
    served: a ? { model: a.model.name, upstream: a.target.upstream.id, upstreamModel: a.target.model } : null,
    usage: c.usage,
    estimated: c.estimated,
    ttftMs: c.ttftMs,
    attempts: a?.number ?? 0,
    fallback: p.route?.fallback ?? null,
    shed: p.route?.shed ?? null,
    ...(p.route?.cache ? { cache: p.route.cache } : {}),
    price: a?.target.price ?? p.model?.price ?? null,
    provider: a?.target.upstream.provider ?? null,
  };
}

const NO_USAGE: Counted = { usage: null, estimated: false, ttftMs: null };

/**
 * Route stops the gateway decided itself, by error code, with their outcome: no upstream
 * answered them, so they are not `upstream_error` (record/request.ts `Outcome`).
 */
const GATEWAY_STOPS: Partial<Readonly<Record<ErrorCode, Ending['outcome']>>> = {
  GW_ERR_SHED_REJECTED: 'gateway_shed',
  GW_ERR_UPSTREAM_OVERLOADED: 'gateway_shed',
  GW_ERR_RETRY_BUDGET: 'gateway_refused',
  GW_ERR_ACCOUNTS_SPENT: 'gateway_refused',
};

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
  // Switchyard already retried a failing upstream: the answer is final (errors/reply.ts), as
  // the SDK retrying on top would multiply the load. An error that names a wait (every account
  // throttled, a shed, a full queue) is different: the client's retry after it should happen.
  const answer = route.attempts > 0 && err.status >= 500 && err.heals === 'maybe' ? err.asFinal() : err;
  const upstream: Record<string, string> = p.attempt ? { 'x-switchyard-upstream': p.attempt.target.upstream.id } : {};
  const status = sendError(call.reply, answer, { ...call.limitHeaders, ...upstream, ...routeHeaders(call.req.id, route, strategy, null) });
  const own = GATEWAY_STOPS[err.code];
  // The class of an upstream failure before the gateway's own stop still says why (a full
  // queue is recorded as the route's last failure itself: it has no upstream class).
  if (own) return make(p, NO_USAGE, status, own, route.lastFailure && route.lastFailure.error !== err ? route.lastFailure.classified.class : null);
  const outcome = last?.class === 'gateway' ? 'gateway_error' : last && isCallerFault(last) ? 'client_error' : 'upstream_error';
  return make(p, NO_USAGE, status, outcome, last?.class ?? null);
}

/** The ending of an error thrown before or between attempts (bad request, limits, abort while queued, a bug). */
export function failedEnding(call: Call, p: Progress, err: unknown): Ending {
  const signal = call.abort.signal;
  if (err instanceof ClientDisconnected || err instanceof ShuttingDown || signal.aborted)
    return abortEnding(call, p, signal.aborted ? signal.reason : err, null);
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
