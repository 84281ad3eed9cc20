/**
 * The data path of one model call (chat completion, response, or message), top to bottom:
 * model lookup -> target plan -> for each target: reshape the body for the model, send,
 * sort failures, maybe next target -> relay SSE or JSON -> record usage, cost, metrics,
 * one log line. What differs between inbound APIs is asked of the API's descriptor.
 */
import { createHash } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { mayUse } from '../auth/keys.js';
import type { GatewayConfig, Model, Target } from '../config/load.js';
import type { PriceConfig, Strategy } from '../config/schema.js';
import type { InboundApi, PreparedBody } from '../apis/types.js';
import type { ApiName, Provider } from '../providers/types.js';
import { GatewayError } from '../errors/codes.js';
import { classifiedAs, classifyFailure, isCallerFault, type Classified } from '../errors/classify.js';
import { sendError } from '../errors/reply.js';
import { recordAttemptOk, recordAttemptStart, recordUpstreamError, trackInFlight } from '../metrics/record.js';
import type { Metrics } from '../metrics/registry.js';
import { retryAfterMs } from '../router/backoff.js';
import type { RouteRun } from '../router/run.js';
import { STRATEGY_NAMES } from '../router/strategies/index.js';
import type { Held } from '../server/live.js';
import { ShuttingDown, type CallTracker } from '../server/drain.js';
import type { Admission, KeyLimits } from '../limits/index.js';
import { newRecord, type RequestRecord } from './context.js';
import { finishRequest } from './finish.js';
import { relayJson } from './respond-json.js';
import { relaySse } from './respond-sse.js';
import { readUpstreamError } from './upstream-error.js';
import { costUsd } from './usage.js';
import { discardBody } from '../upstream/send.js';

export interface PipelineDeps {
  /**
   * Pins the current config generation (config, router, providers) for one request: a hot
   * reload during the request changes nothing it uses, and the providers it may still call
   * stay open until it releases them.
   */
  readonly hold: () => Held;
  readonly metrics: Metrics;
  /** Per-key limits and budgets. */
  readonly limits: KeyLimits;
  /** Registers each call so a shutdown past its drain deadline can abort it (absent: untracked). */
  readonly drain?: CallTracker;
}

/** The abort reason used when the client goes away. */
export class ClientDisconnected extends Error {
  constructor() {
    super('client disconnected');
    this.name = 'ClientDisconnected';
  }
}

function findModel(config: GatewayConfig, req: FastifyRequest, name: string): Model {
  const model = config.models.get(name);
  if (!model || !req.caller || !mayUse(req.caller, name)) {
    throw new GatewayError('GW_ERR_MODEL_NOT_FOUND', {
      message: `The model \`${name.slice(0, 256)}\` does not exist or you do not have access to it.`,
      param: 'model',
    });
  }
  return model;
}

/** Per config generation and API: each model with only the targets whose provider serves the API (null: none). */
const servable = new WeakMap<GatewayConfig, Map<string, Model | null>>();

/**
 * The model as seen from one inbound API: its targets narrowed to providers that serve the
 * API (`chat` is served by every provider). Cached per config generation.
 */
function forApi(config: GatewayConfig, providers: ReadonlyMap<string, Provider>, api: ApiName, model: Model | undefined): Model | undefined {
  if (!model || api === 'chat') return model;
  let byName = servable.get(config);
  if (!byName) servable.set(config, (byName = new Map()));
  const key = `${api}\n${model.name}`;
  let view = byName.get(key);
  if (view === undefined) {
    const targets = model.targets.filter((t) => providers.get(t.upstream.id)?.apis.has(api) === true);
    view = targets.length === 0 ? null : targets.length === model.targets.length ? model : Object.freeze({ ...model, targets: Object.freeze(targets) });
    byName.set(key, view);
  }
  return view ?? undefined;
}

/** Response headers saying where the call went and how it was routed. */
function routeHeaders(rec: RequestRecord, route: RouteRun, strategy: Strategy, target: Target | null): Record<string, string> {
  const h: Record<string, string> = {
    'x-request-id': rec.requestId,
    'x-switchyard-strategy': strategy,
    'x-switchyard-attempts': String(route.attempts),
  };
  if (target) {
    h['x-switchyard-upstream'] = target.upstream.id;
    h['x-switchyard-model'] = target.model;
  }
  if (route.sticky) h['x-switchyard-sticky'] = route.sticky;
  if (route.fallback) h['x-switchyard-fallback'] = route.fallback;
  if (route.shed) h['x-switchyard-shed'] = route.shed;
  return h;
}

/** The strategy for this request: body `cluster_routing`, header `x-switchyard-strategy`, or the model's. */
function pickStrategy(req: FastifyRequest, body: Record<string, unknown>, model: Model): Strategy {
  const inBody = body['cluster_routing'];
  if (typeof inBody === 'string' && (STRATEGY_NAMES as string[]).includes(inBody)) return inBody as Strategy;
  const header = req.headers['x-switchyard-strategy'];
  if (header === undefined) return model.strategy;
  const value = String(header).trim().toLowerCase();
  if (!(STRATEGY_NAMES as string[]).includes(value)) {
    throw new GatewayError('GW_ERR_INVALID_REQUEST', {
      message: `Invalid x-switchyard-strategy header: expected one of ${STRATEGY_NAMES.join(', ')}.`,
      param: 'x-switchyard-strategy',
    });
  }
  return value as Strategy;
}

/** The `sticky` session key: `x-session-id`, then the API's own hint (`prompt_cache_key`, `user` …). */
function sessionKey(req: FastifyRequest, api: InboundApi, body: Record<string, unknown>): string | undefined {
  const header = req.headers['x-session-id'];
  const key = (typeof header === 'string' && header) || api.sessionHint(body);
  // Hashed: bounded length, and no client text stored in the shared store.
  return key ? createHash('sha256').update(`${req.caller?.name ?? ''}\n${key}`).digest('base64url') : undefined;
}

/** Client headers the API forwards (e.g. `anthropic-beta`). */
function forwarded(req: FastifyRequest, api: InboundApi): Record<string, string> | undefined {
  let out: Record<string, string> | undefined;
  for (const name of api.forwardHeaders) {
    const v = req.headers[name];
    if (typeof v === 'string') (out ??= {})[name] = v;
  }
  return out;
}

/**
 * Handles one model call in `api`'s dialect (`POST /v1/chat/completions`, `/v1/responses`,
 * `/v1/messages`); never throws (every outcome is answered and recorded).
 */
export async function handleModelCall(api: InboundApi, deps: PipelineDeps, req: FastifyRequest, reply: FastifyReply): Promise<void> {
  const rec = newRecord(req.id, req.caller?.name ?? null, req.startedAt);
  req.pipelineOwned = true;
  const body = req.body as Record<string, unknown> & { model: string };
  rec.stream = body['stream'] === true;
  const abort = new AbortController();
  const untrack = deps.drain?.track(abort);
  const onClose = (): void => {
    if (!reply.raw.writableFinished) abort.abort(new ClientDisconnected());
  };
  reply.raw.on('close', onClose);
  let requested: Model | null = null;
  let price: Required<PriceConfig> | null = null;
  // Read once: every step of this request uses the config, router and providers it started with.
  const held = deps.hold();
  const { config, router, providers } = held;
  let admission: Admission | null = null;
  /** The routing run, for the fallback/shed marks of the console's recent requests. */
  let routeMarks: RouteRun | null = null;

  try {
    const declared = findModel(config, req, body.model);
    const model = forApi(config, providers, api.name, declared);
    if (!model) {
      throw new GatewayError('GW_ERR_API_NOT_SUPPORTED', {
        message: `The model \`${declared.name}\` is not served on ${api.path}: none of its upstreams speaks this API.`,
        param: 'model',
      });
    }
    const prompt = api.promptMessages(body);
    admission = await deps.limits.admit(req.caller, { messages: prompt, max_tokens: api.maxOutputTokens(body) });
    const limitHeaders = admission.headers;
    requested = model;
    price = model.price;
    rec.model = model.name;
    trackInFlight(deps.metrics, model.name, 1);
    const strategy = pickStrategy(req, body, model);
    const session = sessionKey(req, api, body);
    const wantsUsage = api.wantsUsage(body);
    const forwardHeaders = forwarded(req, api);
    const images = api.hasImages(body);
    const route = router.begin({
      model,
      strategy,
      ...(session ? { session } : {}),
      effort: api.effort(body),
      // Fallback and shed models that cannot take the prompt's images are left out.
      lookup: (n) => {
        const m = forApi(config, providers, api.name, config.models.get(n));
        return m && (m.capabilities.vision || !images) ? m : undefined;
      },
    });
    routeMarks = route;

    for (;;) {
      const next = await route.next(abort.signal);
      if ('stop' in next) {
        const err = next.stop;
        rec.errorClass = route.lastFailure?.classified.class ?? null;
        rec.outcome = route.lastFailure && isCallerFault(route.lastFailure.classified) ? 'client_error' : 'upstream_error';
        // Switchyard already retried; the SDK retrying on top would multiply upstream load.
        const noRetry: Record<string, string> = route.attempts > 0 && err.status >= 429 ? { 'x-should-retry': 'false' } : {};
        const last: Record<string, string> = rec.upstream ? { 'x-switchyard-upstream': rec.upstream } : {};
        rec.status = sendError(reply, err, { ...limitHeaders, ...noRetry, ...last, ...routeHeaders(rec, route, strategy, null) });
        return;
      }
      const { attempt } = next;
      const { target } = attempt;
      recordAttemptStart(deps.metrics, attempt);
      rec.attempts = attempt.number;
      rec.upstream = target.upstream.id;
      rec.upstreamModel = target.model;
      rec.model = attempt.model.name;
      price = target.price;
      const secrets = [target.upstream.apiKey];
      // Reshaped for the model this attempt lands on (a fallback may take other parameters).
      let prepared: PreparedBody;
      try {
        prepared = api.prepare(body, target.model, attempt.model, attempt.model === model);
      } catch (err) {
        // A parameter this model rejects: the caller's fault, answered as a 400.
        route.report(attempt, { ok: 'aborted' });
        attempt.release();
        throw err;
      }
      const headers = { ...limitHeaders, ...routeHeaders(rec, route, strategy, target) };
      if (prepared.dropped.length > 0) headers['x-switchyard-dropped-params'] = prepared.dropped.join(',');
      const failed = (classified: Classified, error: GatewayError, retryAfter?: number, reason?: string): void => {
        recordUpstreamError(deps.metrics, target.upstream.id, classified.class);
        route.report(attempt, { ok: false, classified, error, latencyMs: Date.now() - attempt.startedAt, ...(retryAfter !== undefined ? { retryAfterMs: retryAfter } : {}), ...(reason !== undefined ? { reason } : {}) });
      };

      try {
        let res;
        try {
          res = await providers.get(target.upstream.id)!.send({
            api: api.name,
            body: prepared.body,
            stream: rec.stream,
            requestId: rec.requestId,
            signal: abort.signal,
            ...(forwardHeaders ? { forwardHeaders } : {}),
          });
        } catch (err) {
          if (abort.signal.aborted) throw abort.signal.reason;
          if (err instanceof GatewayError) {
            // The request cannot be expressed in this upstream's API: the caller's problem.
            if (err.status < 500) throw err;
            // The provider could not read or translate the upstream's answer.
            failed(classifiedAs('bad_response'), err);
            continue;
          }
          const classified = classifyFailure({ thrown: err });
          failed(classified, new GatewayError(classified.class === 'timeout' ? 'GW_ERR_UPSTREAM_TIMEOUT' : 'GW_ERR_UPSTREAM_UNREACHABLE'));
          continue;
        }

        if (res.statusCode >= 400) {
          const failure = await readUpstreamError(res, secrets);
          failed(failure.classified, failure.error, retryAfterMs(res.headers, config.routing.retry_after_cap_ms), failure.reason);
          continue;
        }

        const isSse = String(res.headers['content-type'] ?? '').includes('text/event-stream');
        if (rec.stream && isSse) {
          const result = await relaySse({
            api,
            reply,
            upstream: res,
            wantsUsage,
            rec,
            headers,
            signal: abort.signal,
            secrets,
            firstTokenTimeoutMs: config.routing.first_token_timeout_ms,
            messages: prompt,
            onCommit: () => {
              recordAttemptOk(deps.metrics, target.upstream.id);
              route.report(attempt, { ok: true, latencyMs: Date.now() - attempt.startedAt });
            },
          });
          if (result.committed) {
            if (rec.errorClass) recordUpstreamError(deps.metrics, target.upstream.id, rec.errorClass);
            return;
          }
          failed(result.classified, result.error);
          continue;
        }
        if (rec.stream) {
          // A stream was asked for and the upstream answered something else.
          discardBody(res.body);
          failed(classifiedAs('bad_response'), new GatewayError('GW_ERR_UPSTREAM_BAD_RESPONSE', { message: 'The upstream answered a streaming request without an event stream.' }));
          continue;
        }
        try {
          await relayJson(api, reply, res, rec, headers, target.price);
          recordAttemptOk(deps.metrics, target.upstream.id);
          route.report(attempt, { ok: true, latencyMs: Date.now() - attempt.startedAt });
          return;
        } catch (err) {
          if (abort.signal.aborted) throw abort.signal.reason;
          if (err instanceof GatewayError) failed(classifiedAs('bad_response'), err);
          else failed(classifyFailure({ thrown: err }), new GatewayError('GW_ERR_UPSTREAM_STREAM', { cause: err }));
          continue;
        }
      } catch (err) {
        route.report(attempt, { ok: 'aborted' });
        throw err;
      } finally {
        attempt.release();
      }
    }
  } catch (err) {
    if (abort.signal.reason instanceof ShuttingDown) {
      // Cut at the drain deadline before the answer started (a started stream ended in relaySse).
      rec.outcome = 'gateway_error';
      rec.status = sendError(reply, new GatewayError('GW_ERR_SHUTTING_DOWN'), { connection: 'close' });
      if (reply.raw.headersSent && !reply.raw.writableEnded) reply.raw.destroy();
    } else if (err instanceof ClientDisconnected || abort.signal.aborted) {
      rec.outcome = 'client_aborted';
      rec.status = 499;
    } else if (err instanceof GatewayError) {
      rec.outcome = err.status >= 500 ? 'gateway_error' : 'client_error';
      rec.status = sendError(reply, err);
    } else {
      req.log.error({ err }, 'unexpected error in chat pipeline');
      rec.outcome = 'gateway_error';
      rec.status = reply.raw.headersSent ? rec.status || 500 : sendError(reply, new GatewayError('GW_ERR_INTERNAL'));
      if (reply.raw.headersSent && !reply.raw.writableEnded) reply.raw.destroy();
    }
  } finally {
    reply.raw.off('close', onClose);
    untrack?.();
    held.release();
    if (requested) trackInFlight(deps.metrics, requested.name, -1);
    if (price) rec.costUsd = costUsd(rec.usage, price);
    if (admission) {
      // Awaited: the response is already out, and a caller's next request sees this one's spend.
      await admission.settle(rec.usage, rec.costUsd).catch((err: unknown) => req.log.warn({ err }, 'settling key limits failed'));
    }
    // Spend per key and per model, per UTC day, in the shared store (not awaited).
    if (rec.costUsd > 0) void deps.limits.recordSpend(rec.key, rec.model, rec.costUsd);
    rec.durationMs = Date.now() - rec.startedAt;
    req.recorded = true;
    finishRequest(deps.metrics, req.log, rec, routeMarks);
  }
}

