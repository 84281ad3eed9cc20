/**
 * The spans of a model call, made with the OpenTelemetry API on a tracer handed in (no
 * global provider or context manager: the contexts are passed along explicitly).
 *
 * - the call's span, kind SERVER, named `{gen_ai.operation.name} {gen_ai.request.model}`
 *   (e.g. `chat gpt-5`), a child of the client's `traceparent` when it sent a valid one;
 *   started at the request's arrival, ended with the request record's attributes;
 * - one span per upstream attempt, kind CLIENT (INTERNAL for an in-process upstream such as
 *   the simulator), named `chat {upstream model id}`, a child of the call's span; the
 *   upstream request carries its `traceparent`.
 *
 * Attribute names: names.ts (GenAI semantic conventions and `switchyard.*`). Prompts,
 * replies and keys are never attributes; a key appears by its configured name only.
 */
import {
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  defaultTextMapGetter,
  defaultTextMapSetter,
  trace,
  type Attributes,
  type Context,
  type Span,
  type TextMapPropagator,
  type Tracer,
} from '@opentelemetry/api';
import type { IncomingHttpHeaders } from 'node:http';
import type { LiveUpstream } from '../config/types.js';
import type { Provider } from '../providers/types.js';
import type { RequestRecord } from '../record/request.js';
import type { Attempt } from '../router/attempt.js';
import type { Usage } from '../usage/usage.js';
import * as N from './names.js';
import type { AttemptEnd, AttemptSpan, CallSpan } from './types.js';

/** Longest model name put in a span name or attribute, characters. */
const MAX_MODEL = 256;

/** `error.type`'s value when nothing more specific is known (semconv general attributes). */
const OTHER_ERROR = '_OTHER';

/** The token attributes of a usage: the GenAI conventions' counts, zeros of the optional parts left out. */
function usageAttributes(u: Usage, into: Attributes): void {
  into[N.GEN_AI_USAGE_INPUT_TOKENS] = u.input;
  into[N.GEN_AI_USAGE_OUTPUT_TOKENS] = u.output;
  if (u.cached > 0) into[N.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS] = u.cached;
  if (u.cacheWrite) into[N.GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS] = u.cacheWrite;
  if (u.cacheWrite1h) into[N.SY_CACHE_WRITE_1H_TOKENS] = u.cacheWrite1h;
  if (u.reasoning > 0) into[N.SY_REASONING_TOKENS] = u.reasoning;
}

/** `server.address` / `server.port` of an upstream's `base_url` (null: in-process), worked out once per upstream. */
const servers = new WeakMap<LiveUpstream, { address: string; port: number } | null>();
function serverOf(upstream: LiveUpstream): { address: string; port: number } | null {
  let s = servers.get(upstream);
  if (s === undefined) {
    const url = upstream.base_url ? new URL(upstream.base_url) : null;
    s = url ? { address: url.hostname, port: url.port ? Number(url.port) : url.protocol === 'https:' ? 443 : 80 } : null;
    servers.set(upstream, s);
  }
  return s;
}

class OtelAttemptSpan implements AttemptSpan {
  readonly headers: Readonly<Record<string, string>>;
  private ended = false;

  constructor(
    private readonly span: Span,
    private readonly upstreamModel: string,
    ctx: Context,
    propagator: TextMapPropagator,
  ) {
    const carrier: Record<string, string> = {};
    propagator.inject(trace.setSpan(ctx, span), carrier, defaultTextMapSetter);
    this.headers = carrier;
  }

  responded(status: number): void {
    this.span.setAttribute(N.HTTP_RESPONSE_STATUS_CODE, status);
  }

  end(outcome: AttemptEnd): void {
    if (this.ended) return;
    this.ended = true;
    const a: Attributes = { [N.SY_OUTCOME]: outcome.kind === 'threw' ? 'failed' : outcome.kind };
    let error: string | null = null;
    switch (outcome.kind) {
      case 'answered':
        a[N.GEN_AI_RESPONSE_MODEL] = this.upstreamModel;
        if (outcome.relayed.usage) usageAttributes(outcome.relayed.usage, a);
        if (outcome.relayed.failure) error = outcome.relayed.failure.classified.class;
        break;
      case 'failed':
        error = outcome.failure.classified.class;
        break;
      case 'refused':
        error = outcome.error.openaiCode ?? String(outcome.error.status);
        break;
      case 'threw':
        error = OTHER_ERROR;
        break;
      case 'aborted':
        break;
    }
    if (error !== null) {
      a[N.ERROR_TYPE] = error;
      this.span.setStatus({ code: SpanStatusCode.ERROR, message: error });
    }
    this.span.setAttributes(a);
    // Epoch ms, the clock the start time (the attempt's `startedAt`) was read from.
    this.span.end(Date.now());
  }
}

class OtelCallSpan implements CallSpan {
  private readonly ctx: Context;
  private queuedMs = 0;
  private ended = false;

  constructor(
    private readonly tracer: Tracer,
    private readonly propagator: TextMapPropagator,
    private readonly span: Span,
    parent: Context,
  ) {
    this.ctx = trace.setSpan(parent, span);
  }

  attempt(attempt: Attempt, provider: Provider | undefined): AttemptSpan {
    const { target } = attempt;
    const server = serverOf(target.upstream);
    const attributes: Attributes = {
      [N.GEN_AI_OPERATION_NAME]: N.OPERATION_CHAT,
      [N.GEN_AI_PROVIDER_NAME]: provider?.genAiProvider ?? target.upstream.provider,
      [N.GEN_AI_REQUEST_MODEL]: target.model,
      [N.SY_UPSTREAM]: target.upstream.id,
      [N.SY_ATTEMPT]: attempt.number,
      [N.SY_MODEL]: attempt.model.name,
      [N.SY_QUEUE_MS]: attempt.queuedMs,
      [N.SY_DEEP]: attempt.deep,
    };
    if (server) {
      attributes[N.SERVER_ADDRESS] = server.address;
      attributes[N.SERVER_PORT] = server.port;
    }
    if (attempt.fallbackFrom !== undefined) attributes[N.SY_FALLBACK] = `${attempt.fallbackFrom}->${attempt.model.name}`;
    this.queuedMs += attempt.queuedMs;
    const span = this.tracer.startSpan(
      `${N.OPERATION_CHAT} ${target.model}`,
      { kind: server ? SpanKind.CLIENT : SpanKind.INTERNAL, startTime: attempt.startedAt, attributes },
      this.ctx,
    );
    return new OtelAttemptSpan(span, target.model, this.ctx, this.propagator);
  }

  end(rec: RequestRecord): void {
    if (this.ended) return;
    this.ended = true;
    const a: Attributes = {
      [N.HTTP_RESPONSE_STATUS_CODE]: rec.status,
      [N.SY_REQUEST_ID]: rec.requestId,
      [N.SY_OUTCOME]: rec.outcome,
      [N.SY_STREAM]: rec.stream,
      [N.SY_ATTEMPTS]: rec.attempts,
      [N.SY_QUEUE_MS]: this.queuedMs,
      [N.SY_COST_USD]: rec.costUsd,
    };
    if (rec.key !== null) a[N.SY_KEY] = rec.key;
    if (rec.model !== null) a[N.SY_MODEL] = rec.model;
    if (rec.upstream !== null) a[N.SY_UPSTREAM] = rec.upstream;
    if (rec.upstreamModel !== null && rec.outcome === 'ok') a[N.GEN_AI_RESPONSE_MODEL] = rec.upstreamModel;
    if (rec.fallback !== null) a[N.SY_FALLBACK] = rec.fallback;
    if (rec.shed !== null) a[N.SY_SHED] = rec.shed;
    if (rec.ttftMs !== null) a[N.SY_TTFT_MS] = rec.ttftMs;
    if (rec.attempts > 0) {
      usageAttributes(rec.usage, a);
      a[N.SY_USAGE_ESTIMATED] = rec.usageEstimated;
    }
    if (rec.outcome === 'upstream_error' || rec.outcome === 'gateway_error' || rec.outcome === 'gateway_shed' || rec.outcome === 'gateway_refused') {
      const error = rec.errorClass ?? String(rec.status);
      a[N.ERROR_TYPE] = error;
      this.span.setStatus({ code: SpanStatusCode.ERROR, message: error });
    }
    this.span.setAttributes(a);
    this.span.end(rec.startedAt + rec.durationMs);
  }
}

/** Opens a model call's span on `tracer`, continuing the trace of the client's `traceparent` / `tracestate` when valid. */
export function openCallSpan(
  tracer: Tracer,
  propagator: TextMapPropagator,
  headers: IncomingHttpHeaders,
  startedAt: number,
  api: string,
  requested: string,
): CallSpan {
  // A span name stays short whatever the client sent as `model`.
  const model = requested.length > MAX_MODEL ? requested.slice(0, MAX_MODEL) : requested;
  const parent = headers.traceparent === undefined ? ROOT_CONTEXT : propagator.extract(ROOT_CONTEXT, headers, defaultTextMapGetter);
  const span = tracer.startSpan(
    `${N.OPERATION_CHAT} ${model}`,
    {
      kind: SpanKind.SERVER,
      startTime: startedAt,
      attributes: { [N.GEN_AI_OPERATION_NAME]: N.OPERATION_CHAT, [N.GEN_AI_REQUEST_MODEL]: model, [N.SY_API]: api },
    },
    parent,
  );
  return new OtelCallSpan(tracer, propagator, span, parent);
}
