/**
 * One model call's state, opened when the pipeline takes a request and closed when it is
 * done: the client's body, the config generation it is pinned to, and the abort controller
 * that the client's disconnect and the drain deadline fire.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { InboundApi } from '../apis/types.js';
import type { GatewayConfig } from '../config/types.js';
import { ClientDisconnected } from '../errors/aborts.js';
import type { Metrics } from '../metrics/registry.js';
import type { KeyLimits } from '../limits/index.js';
import type { Provider } from '../providers/types.js';
import type { Router } from '../router/index.js';
import type { RecordSink } from '../record/request.js';
import type { ResponseJournal } from '../store/roles.js';
import type { CallSpan, Tracing } from '../tracing/index.js';
import { NO_TAGS, type Tags } from '../record/tags.js';
import type { Continuation } from './continuation.js';

/** A config generation pinned for one request (server/reload/live.ts); `release()` when done. */
export interface HeldGeneration {
  readonly config: GatewayConfig;
  readonly router: Router;
  readonly providers: ReadonlyMap<string, Provider>;
  release(): void;
}

/** Registers a call so a shutdown past its drain deadline can abort it (server/lifecycle/drain.ts). */
export interface CallTracker {
  track(abort: AbortController): () => void;
}

export interface PipelineDeps {
  /**
   * Pins the current config generation (config, router, providers) for one request: a hot
   * reload during the request changes nothing it uses, and the providers it may still call
   * stay open until it releases them.
   */
  readonly hold: () => HeldGeneration;
  readonly metrics: Metrics;
  /** Per-key limits and budgets. */
  readonly limits: KeyLimits;
  /** Absent: calls are not tracked for the drain. */
  readonly drain?: CallTracker;
  /** Absent: no ledger configured. */
  readonly ledger?: RecordSink;
  /** Spans of model calls and their attempts (`TRACING_OFF` unless an OTLP endpoint is set). */
  readonly tracing: Tracing;
  /** The journal of relayed Responses conversations (pipeline/continuation.ts). */
  readonly journal: ResponseJournal;
}

export interface Call {
  readonly api: InboundApi;
  readonly req: FastifyRequest;
  readonly reply: FastifyReply;
  /** The client's body (`extra_body` is unwrapped into it first thing: `pipeline/handle.ts`). */
  body: Record<string, unknown> & { model: string };
  readonly stream: boolean;
  readonly abort: AbortController;
  readonly gen: HeldGeneration;
  /** Client headers the API forwards (e.g. `anthropic-beta`). */
  readonly forwardHeaders: Readonly<Record<string, string>> | undefined;
  /** The conversation a Responses call continues (`previous_response_id`), once read: pipeline/continuation.ts. */
  continuation: Continuation | null;
  /** Key-limit headers (`x-ratelimit-*`), set once the key's limits admitted the call. */
  limitHeaders: Record<string, string>;
  /** The request's tags (record/tags.ts), once read. */
  tags: Tags;
  /**
   * The prompt's input-token estimate a bridged stream announces (`InboundApi.countedPrompt`),
   * counted once per call when an attempt first needs it (attempt.ts).
   */
  promptTokens: Promise<number> | null;
  /** The call's trace span (tracing/): attempts open theirs in it, `finish` ends it. */
  readonly trace: CallSpan;
  /** Releases everything the call holds; idempotent. */
  close(): void;
}

function forwarded(req: FastifyRequest, api: InboundApi): Record<string, string> | undefined {
  let out: Record<string, string> | undefined;
  for (const name of api.forwardHeaders) {
    const v = req.headers[name];
    if (typeof v === 'string') (out ??= {})[name] = v;
  }
  return out;
}

/**
 * Opens a call: pins the config generation, tracks the call for the drain, and aborts it
 * with `ClientDisconnected` when the client's connection closes before the answer ends.
 */
export function openCall(api: InboundApi, deps: PipelineDeps, req: FastifyRequest, reply: FastifyReply): Call {
  const abort = new AbortController();
  const untrack = deps.drain?.track(abort);
  const onClose = (): void => {
    if (!reply.raw.writableFinished) abort.abort(new ClientDisconnected());
  };
  reply.raw.on('close', onClose);
  const gen = deps.hold();
  let closed = false;
  const raw = req.body as Record<string, unknown>;
  const close = (): void => {
    if (closed) return;
    closed = true;
    reply.raw.off('close', onClose);
    untrack?.();
    gen.release();
  };
  const body = raw as Record<string, unknown> & { model: string };
  const trace = deps.tracing.modelCall(req.headers, req.startedAt, api.name, typeof body.model === 'string' ? body.model : '');
  return {
    api,
    req,
    reply,
    body,
    stream: body['stream'] === true,
    abort,
    gen,
    forwardHeaders: forwarded(req, api),
    continuation: null,
    limitHeaders: {},
    tags: NO_TAGS,
    promptTokens: null,
    trace,
    close,
  };
}
