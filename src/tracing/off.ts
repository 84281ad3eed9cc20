/**
 * Tracing off (the default): no span is made and no OpenTelemetry SDK module is
 * loaded (only `@opentelemetry/api`, which prom-client loads for its exemplars anyway). A
 * client's own valid `traceparent` (and `tracestate`) is forwarded to the upstream unchanged,
 * as W3C Trace Context lets a hop that does not trace do (W3C Recommendation "Trace Context",
 * "Processing Model": a vendor that does not participate passes the headers on as they
 * came); nothing is added when the client sent none.
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { AttemptSpan, CallSpan, Tracing } from './types.js';

/** `version-traceid-parentid-flags` in lower-case hex, version not `ff`, ids not all zero (Trace Context, "traceparent Header"). */
const TRACEPARENT = /^(?!ff)[\da-f]{2}-(?!0{32})[\da-f]{32}-(?!0{16})[\da-f]{16}-[\da-f]{2}$/;
/** Longest `tracestate` passed on (Trace Context, "tracestate Limits": at least 512 characters SHOULD be propagated); a longer one is dropped. */
const MAX_TRACESTATE = 512;

const NO_ATTEMPT: AttemptSpan = { headers: undefined, responded: () => {}, end: () => {} };
const NO_CALL: CallSpan = { attempt: () => NO_ATTEMPT, end: () => {} };

/** The client's trace headers to pass on, or null when it sent no valid `traceparent`. */
export function clientTraceHeaders(headers: IncomingHttpHeaders): Record<string, string> | null {
  const parent = headers.traceparent;
  if (typeof parent !== 'string' || !TRACEPARENT.test(parent)) return null;
  const state = headers.tracestate;
  return typeof state === 'string' && state !== '' && state.length <= MAX_TRACESTATE ? { traceparent: parent, tracestate: state } : { traceparent: parent };
}

export const TRACING_OFF: Tracing = {
  enabled: false,
  modelCall(headers) {
    if (headers.traceparent === undefined) return NO_CALL;
    const forward = clientTraceHeaders(headers);
    if (!forward) return NO_CALL;
    const attempt: AttemptSpan = { ...NO_ATTEMPT, headers: forward };
    return { attempt: () => attempt, end: () => {} };
  },
  shutdown: async () => {},
};
