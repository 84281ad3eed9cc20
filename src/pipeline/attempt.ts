/**
 * One attempt of a model call, top to bottom: the translator for (client API, the target's
 * wire API) shapes the request, the provider sends it, and the answer comes back through the
 * same translator (an error sorted by the classifier, a stream relayed event by event, or a
 * JSON body). Returns one outcome value; records nothing (see `finish.ts`).
 */
import type { ApiName } from '../apis/names.js';
import type { Model } from '../config/types.js';
import type { Strategy } from '../config/schema.js';
import { classifyFailure } from '../errors/classify.js';
import { GatewayError } from '../errors/codes.js';
import { retryAfterMs } from '../router/backoff.js';
import type { Attempt, RouteRun } from '../router/run.js';
import type { StallWatch } from '../router/feedback.js';
import { translator as makeTranslator } from '../translate/table.js';
import type { Translator, WireBody } from '../translate/types.js';
import type { AttemptSpan } from '../tracing/index.js';
import { gatewayFailure } from '../translate/failure.js';
import { discardBody, readCapped } from '../upstream/send.js';
import { countPromptTokens } from '../usage/estimate.js';
import type { Call } from './call.js';
import type { ContinuationMark } from './continuation.js';
import type { AttemptOutcome, Relayed } from './outcome.js';
import { relayJson } from './relay-json.js';
import { relaySse } from './relay-sse.js';
import { routeHeaders, wireOf } from './select.js';

/** Largest upstream error body read (bytes); the rest is discarded. */
const MAX_ERROR_BODY = 64 * 1024;

export interface AttemptEnv {
  readonly call: Call;
  /** The model the client asked for (only it may reject a parameter). */
  readonly primary: Model;
  readonly strategy: Strategy;
  readonly route: RouteRun;
  /** Called once, when the answer starts going to the client. */
  readonly onCommit: () => void;
  /** The attempt's trace span: its `traceparent` goes upstream, the upstream's status onto it. */
  readonly span: AttemptSpan;
}

const aborted = (reason: unknown): AttemptOutcome => ({
  kind: 'aborted',
  relayed: { committed: false, failure: null, aborted: reason, usage: null, estimated: false, ttftMs: null },
});

/**
 * The prompt's token estimate when this attempt's stream announces one the wire does not
 * give (a Messages stream bridged to another wire API: `message_start.usage.input_tokens`),
 * counted once per call with bounded work (`usage/estimate.ts`, ~30 ms at most whatever the
 * prompt's size); undefined otherwise.
 */
async function promptTokens(call: Call, wireApi: ApiName): Promise<number | undefined> {
  if (!call.stream || call.api.name !== 'messages' || wireApi === call.api.name) return undefined;
  call.promptTokens ??= countPromptTokens(call.api.prompt(call.body)).catch(() => 0);
  return call.promptTokens;
}

/** The translator and wire request for this attempt, or why the request cannot be sent. */
function shape(
  env: AttemptEnv,
  attempt: Attempt,
  wireApi: ApiName,
  estimate: number | undefined,
): { tr: Translator; wire: WireBody; dropped: readonly string[]; continuation: ContinuationMark | null } | GatewayError {
  const { call } = env;
  const { target } = attempt;
  try {
    // A continued conversation as this target can take it (pipeline/continuation.ts).
    const continued = call.continuation?.bodyFor(call.body, target, wireApi) ?? null;
    const base = continued?.body ?? call.body;
    // Reshaped for the model this attempt lands on (a fallback may take other parameters).
    const body = attempt.effort === undefined ? base : call.api.withEffort(base, attempt.effort);
    const prepared = call.api.prepare(body, target.model, attempt.model, attempt.model === env.primary);
    const tr = makeTranslator(call.api.name, wireApi, {
      stream: call.stream,
      wantsUsage: call.api.wantsUsage(call.body),
      secrets: [target.upstream.apiKey],
      retryAfterCapMs: call.gen.config.routing.retry_after_cap_ms,
      options: target.upstream.options,
      maxTokensField: attempt.model.capabilities.max_tokens_field,
      cacheBreakpoints: attempt.model.cacheBreakpoints,
      ...(estimate !== undefined ? { promptTokens: estimate } : {}),
      ...(call.forwardHeaders ? { forwardHeaders: call.forwardHeaders } : {}),
    });
    return { tr, wire: tr.request(prepared.body), dropped: prepared.dropped, continuation: continued?.mark ?? null };
  } catch (err) {
    if (err instanceof GatewayError) return err;
    throw err;
  }
}

/** The abort reason of an attempt left because it stalled. */
const STALL_ABANDONED = Symbol('stall abandoned');
/** How often a watch whose account has no stall threshold yet looks again, ms. */
const RECHECK_MS = 250;

/**
 * Arms `watch` for an attempt sent at `sentAt`: `fire` runs once when no first event came by
 * the account's threshold. Decided in the check phase after the timer: a first event that
 * arrived while this process itself was busy (a long GC, a blocked loop) is read in the poll
 * phase between, so the gateway's own lag is not taken for the provider's stall.
 * @returns `stop` (the first event came, or the attempt ended) and the threshold it fired at.
 */
function armStallWatch(watch: StallWatch, sentAt: number, fire: () => void): { stop(): void; firedAfterMs(): number } {
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let after = 0;
  const arm = (): void => {
    const t = watch.thresholdMs();
    if (t === null) {
      timer = setTimeout(arm, RECHECK_MS);
      return;
    }
    after = t;
    timer = setTimeout(() => setImmediate(() => !stopped && fire()), Math.max(0, sentAt + t - Date.now()));
  };
  arm();
  return {
    stop: () => {
      stopped = true;
      clearTimeout(timer);
    },
    firedAfterMs: () => after,
  };
}

/**
 * Runs one attempt. Never throws for upstream trouble; unexpected bugs propagate. A deep
 * streamed attempt is watched for a stall from the moment it is sent: no first event by its
 * account's stall threshold tells the account's capacity at once and, while nothing has
 * reached the client and the route has somewhere else to go, the attempt is left (its
 * upstream request cancelled) and fails as a `stall`, so the route moves the call on.
 */
export async function runAttempt(env: AttemptEnv, attempt: Attempt): Promise<AttemptOutcome> {
  const parent = env.call.abort.signal;
  const watch = env.call.stream ? env.route.stallWatch(attempt) : null;
  if (!watch) return attemptOnce(env, attempt, parent);
  const ctl = new AbortController();
  const onParent = (): void => ctl.abort(parent.reason);
  parent.addEventListener('abort', onParent, { once: true });
  const armed = armStallWatch(watch, Date.now(), () => {
    watch.onStall();
    if (watch.abandon) ctl.abort(STALL_ABANDONED);
  });
  const onCommit = (): void => {
    armed.stop();
    env.onCommit();
  };
  try {
    const outcome = await attemptOnce({ ...env, onCommit }, attempt, ctl.signal);
    if (outcome.kind !== 'aborted' || ctl.signal.reason !== STALL_ABANDONED || parent.aborted) return outcome;
    const message = `The upstream sent no first event within ${armed.firedAfterMs()} ms while other calls were in flight on its account (a stall); the call moved on.`;
    return { kind: 'failed', failure: { classified: classifyFailure({ local: 'stall' }), error: new GatewayError('GW_ERR_UPSTREAM_TIMEOUT', { message }) } };
  } finally {
    armed.stop();
    parent.removeEventListener('abort', onParent);
  }
}

async function attemptOnce(env: AttemptEnv, attempt: Attempt, signal: AbortSignal): Promise<AttemptOutcome> {
  const { call } = env;
  const { target } = attempt;
  const provider = call.gen.providers.get(target.upstream.id)!;
  const wireApi = wireOf(call.api, provider.wireApis)!;
  const shaped = shape(env, attempt, wireApi, await promptTokens(call, wireApi));
  if (shaped instanceof GatewayError) return { kind: 'refused', error: shaped };
  const { tr, wire } = shaped;

  // The attempt's `traceparent` (tracing on), or the client's own passed on (off).
  const traced = env.span.headers;
  const upHeaders = traced ? { ...wire.headers, ...traced } : wire.headers;
  let res;
  try {
    const operation = call.api.operation ? { operation: call.api.operation } : {};
    res = await provider.send({
      api: tr.wire,
      ...operation,
      body: wire.body,
      ...(upHeaders ? { headers: upHeaders } : {}),
      stream: call.stream,
      requestId: call.req.id,
      signal,
    });
    env.span.responded(res.statusCode);
  } catch (err) {
    if (signal.aborted) return aborted(signal.reason);
    const classified = classifyFailure({ thrown: err });
    if (classified.class === 'gateway') return { kind: 'failed', failure: gatewayFailure(err) };
    return {
      kind: 'failed',
      failure: { classified, error: new GatewayError(classified.class === 'timeout' ? 'GW_ERR_UPSTREAM_TIMEOUT' : 'GW_ERR_UPSTREAM_UNREACHABLE') },
    };
  }

  const windows = provider.rateWindows?.(res.headers);
  if (windows) env.route.rateWindows(attempt, windows);
  if (res.statusCode >= 400) {
    const body = await readCapped(res.body, MAX_ERROR_BODY).then(
      (r) => r.buf,
      () => Buffer.alloc(0),
    );
    if (signal.aborted) return aborted(signal.reason);
    const capMs = call.gen.config.routing.retry_after_cap_ms;
    const named = retryAfterMs(res.headers, Number.POSITIVE_INFINITY);
    const wait = named === undefined ? {} : { retryAfterMs: Math.min(named, capMs), ...(named > capMs ? { beyondCap: true } : {}) };
    return { kind: 'failed', failure: tr.error(res.statusCode, res.headers, body), ...wait };
  }

  const headers = routeHeaders(call.req.id, env.route, env.strategy, target, { ...call.limitHeaders });
  if (shaped.dropped.length > 0) headers['x-switchyard-dropped-params'] = shaped.dropped.join(',');
  if (shaped.continuation) headers['x-switchyard-continuation'] = shaped.continuation;
  const isSse = String(res.headers['content-type'] ?? '').includes('text/event-stream');
  if (call.stream && isSse) {
    const relayed: Relayed = await relaySse({
      translator: tr,
      reply: call.reply,
      upstream: res,
      headers,
      signal,
      firstTokenTimeoutMs: call.gen.config.routing.first_token_timeout_ms,
      startedAt: call.req.startedAt,
      errorFrame: (err) => call.api.sseErrorFrame(err),
      prompt: call.api.prompt(call.body),
      onCommit: env.onCommit,
      keepaliveMs: call.gen.config.routing.sse_keepalive_ms,
      maxEventBytes: call.gen.config.routing.max_event_bytes,
    });
    if (relayed.aborted !== null) return { kind: 'aborted', relayed };
    if (!relayed.committed) return { kind: 'failed', failure: relayed.failure! };
    return { kind: 'answered', relayed, answer: tr.answer?.() ?? null, wire: tr.wire };
  }
  if (call.stream) {
    // A stream was asked for and the upstream answered something else.
    discardBody(res.body);
    const classified = classifyFailure({ local: 'unreadable' });
    return {
      kind: 'failed',
      failure: {
        classified,
        error: new GatewayError('GW_ERR_UPSTREAM_BAD_RESPONSE', { message: 'The upstream answered a streaming request without an event stream.' }),
      },
    };
  }
  let sent;
  try {
    sent = await relayJson(tr, call.reply, res, headers, target.price, signal, call.api.prompt(call.body), call.gen.config.routing.max_answer_bytes);
  } catch (err) {
    if (signal.aborted) return aborted(signal.reason);
    throw err;
  }
  if ('failure' in sent) return { kind: 'failed', failure: sent.failure };
  if (sent.aborted !== undefined)
    return { kind: 'aborted', relayed: { committed: false, failure: null, aborted: sent.aborted, usage: sent.usage, estimated: sent.estimated, ttftMs: null } };
  env.onCommit();
  return {
    kind: 'answered',
    relayed: { committed: true, failure: null, aborted: null, usage: sent.usage, estimated: sent.estimated, ttftMs: null },
    answer: tr.answer?.() ?? null,
    wire: tr.wire,
  };
}
