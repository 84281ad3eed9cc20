/**
 * The data path of one model call (chat completion, response, or message), top to bottom:
 * open the call -> find the model its API can reach -> prepare its admission under the key's
 * limits and budgets (made by the route's first store call, limits/gate.ts) -> begin the
 * route -> for each attempt the router gives: run it (attempt.ts) and report its one outcome
 * -> answer -> `finish` writes the one record. What differs between client APIs
 * is asked of the API's descriptor (apis/) and of the attempt's translator (translate/).
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { checkNesting } from '../apis/nesting.js';
import { unwrapExtraBody } from '../apis/normalise.js';
import type { ApiName } from '../apis/names.js';
import type { InboundApi } from '../apis/types.js';
import type { Model, Target } from '../config/types.js';
import { recordAttemptFailed, recordAttemptOk, recordAttemptStart, trackInFlight } from '../metrics/record.js';
import { runAttempt, type AttemptEnv } from './attempt.js';
import { openCall, type Call, type PipelineDeps } from './call.js';
import { fitContext, holds } from './context-window.js';
import { ended, failedEnding, stopped } from './endings.js';
import { finish } from './finish.js';
import type { Ending, Progress } from './outcome.js';
import { Continuation, inputItems, recordResponse } from './continuation.js';
import { requestTags } from '../record/tags.js';
import type { AttemptEnd } from '../tracing/index.js';
import { allowedModel, forApi, pickStrategy, promptBytes, servedOn, wireOf } from './select.js';
import { pinSession, sessionKey, sessionOfResponse } from './session.js';
import { answerWarmup, isWarmup } from './warmup.js';

export type { PipelineDeps } from './call.js';

/** An attempt's span ending for an unexpected error (tracing/types.ts). */
const THREW: AttemptEnd = { kind: 'threw' };

/**
 * Handles one model call in `api`'s dialect (`POST /v1/chat/completions`, `/v1/responses`,
 * `/v1/responses/compact`, `/v1/messages`); never throws (every outcome is answered and
 * recorded once).
 */
export async function handleModelCall(api: InboundApi, deps: PipelineDeps, req: FastifyRequest, reply: FastifyReply): Promise<void> {
  req.pipelineOwned = true;
  const call = openCall(api, deps, req, reply);
  const progress: Progress = { named: null, model: null, admission: null, route: null, attempt: null };
  let ending: Ending;
  try {
    ending = await serve(deps, call, progress);
  } catch (err) {
    ending = failedEnding(call, progress, err);
  } finally {
    call.close();
    if (progress.model) trackInFlight(deps.metrics, progress.model.name, -1);
  }
  await finish(deps, call, progress.admission, ending);
}

/** Routes the call until an attempt answers or the route stops. */
async function serve(deps: PipelineDeps, call: Call, progress: Progress): Promise<Ending> {
  const { config, router, providers } = call.gen;
  call.body = unwrapExtraBody(call.body);
  await checkNesting(call.body);
  const { api, body, req } = call;
  call.tags = requestTags(req.headers, req.caller?.metadata, config.tags.headers);
  // A Responses follow-up goes where its conversation is (pipeline/continuation.ts).
  call.continuation = api.name === 'responses' ? await Continuation.open(deps.journal, body) : null;
  const continuation = call.continuation;
  const wireOfTarget = (t: Target): ApiName | null => wireOf(api, providers.get(t.upstream.id)?.wireApis ?? new Set());
  const named = allowedModel(config, req, body.model);
  progress.named = named.name;
  const found = servedOn(config, providers, api, named);
  const model = continuation ? continuation.narrow(found, wireOfTarget) : found;
  progress.model = model;
  trackInFlight(deps.metrics, model.name, 1);
  // The key's limits and every budget the request counts against (limits/gate.ts): made by the
  // route's first store call (one round trip with its admission), or on its own before an answer without a route.
  const gate = await deps.limits.prepare(
    req.caller,
    { prompt: api.prompt(body), max_tokens: api.maxOutputTokens(body) },
    { budgets: config.budgets, alerts: config.budgetAlerts, tags: call.tags },
  );
  progress.admission = gate;
  const admitted = async (): Promise<void> => {
    await gate.run();
    call.limitHeaders = gate.headers;
  };
  const hints = api.sessionHints(body);
  const session = sessionKey(req, hints, continuation);
  // A Responses warmup (`generate: false`) is answered here; no upstream is called.
  if (isWarmup(call)) return admitted().then(() => answerWarmup(call, model, deps.journal, session));
  const images = api.hasImages(body);
  // Fallback and shed models the API cannot reach, or that cannot take the prompt's images, are left out.
  const reachable = (n: string): Model | undefined => {
    const m = forApi(config, providers, api, config.models.get(n));
    if (!m || (!m.capabilities.vision && images)) return undefined;
    return continuation ? (continuation.narrowOrNull(m, wireOfTarget) ?? undefined) : m;
  };
  // A prompt over the model's context window moves to its context fallback, or is refused with a 400 here.
  // (The key's limits answer first: a request they refuse gets their 429, as before its size was read.)
  const fit = await fitContext(call, model, reachable, (n) => config.models.get(n)).catch(async (err: unknown) => {
    await admitted();
    throw err;
  });
  const strategy = continuation?.owner !== undefined ? 'sticky' : pickStrategy(req, body, model);
  const bytes = promptBytes(req);
  const route = router.begin({
    model: fit.model,
    ...(fit.from ? { movedFrom: fit.from.name } : {}),
    strategy,
    ...(session ? { session: pinSession(session, model.name) } : {}),
    ...(session && hints.cacheLifetimeMs !== undefined ? { cacheLifetimeMs: hints.cacheLifetimeMs } : {}),
    ...(bytes !== undefined ? { promptBytes: bytes } : {}),
    effort: api.effort(body),
    ...(req.caller?.priority ? { priority: req.caller.priority } : {}),
    ...(continuation?.owner !== undefined ? { pinned: continuation.owner } : {}),
    gate: {
      request: gate.request,
      accept: (answer) => {
        const spent = gate.accept(answer);
        call.limitHeaders = gate.headers;
        return spent;
      },
    },
    // Nor those whose context window the counted prompt passes.
    lookup: (n) => {
      const m = reachable(n);
      return m && holds(m, fit.needed) ? m : undefined;
    },
  });
  progress.route = route;
  for (;;) {
    const next = await route.next(call.abort.signal);
    if ('stop' in next) return stopped(call, progress, strategy, next.stop);
    const attempt = next.attempt;
    progress.attempt = attempt;
    recordAttemptStart(deps.metrics, attempt);
    const span = call.trace.attempt(attempt, providers.get(attempt.target.upstream.id));
    const onCommit = (): void => {
      recordAttemptOk(deps.metrics, attempt.target.upstream.id);
      const latencyMs = Date.now() - attempt.startedAt;
      route.report(attempt, { ok: true, latencyMs, firstEventMs: call.stream ? latencyMs : null });
    };
    const env: AttemptEnv = { call, primary: model, strategy, route, onCommit, span };
    // The slot goes back once the outcome is reported, with what it says about the account.
    const outcome = await runAttempt(env, attempt).catch((err: unknown) => {
      attempt.release();
      span.end(THREW);
      throw err;
    });
    span.end(outcome);
    if (outcome.kind === 'failed') {
      recordAttemptFailed(deps.metrics, attempt.target.upstream.id, model.name, outcome.failure.classified.class);
      const retry = {
        ...(outcome.retryAfterMs !== undefined ? { retryAfterMs: outcome.retryAfterMs } : {}),
        ...(outcome.beyondCap ? { beyondCap: true } : {}),
      };
      route.report(attempt, {
        ok: false,
        classified: outcome.failure.classified,
        error: outcome.failure.error,
        reason: outcome.failure.reason ?? outcome.failure.error.message,
        ...(outcome.failure.resetAt !== undefined ? { resetAt: outcome.failure.resetAt } : {}),
        latencyMs: Date.now() - attempt.startedAt,
        ...retry,
      });
      continue;
    }
    // An answer was reported at its first byte (onCommit); anything else frees the target.
    if (outcome.kind !== 'answered') route.report(attempt, { ok: 'aborted' });
    else if (outcome.relayed.failure) {
      recordAttemptFailed(deps.metrics, attempt.target.upstream.id, model.name, outcome.relayed.failure.classified.class);
      route.broke(attempt);
    }
    // A delivered stream whose upstream body has not ended yet holds its slot until it does (≤ 1 s).
    const drained = outcome.kind === 'answered' ? outcome.relayed.drained : undefined;
    if (drained) void drained.then(() => attempt.release());
    else attempt.release();
    // A response is journalled for its follow-ups; a compaction's output goes back as the client's input instead.
    if (outcome.kind === 'answered' && !outcome.relayed.failure && outcome.answer && outcome.wire && !api.operation) {
      const input = continuation ? continuation.expandedInput(body) : inputItems(body['input']);
      const made = {
        answer: outcome.answer,
        target: attempt.target,
        wire: outcome.wire,
        input,
        key: req.caller?.name ?? null,
        session: sessionOfResponse(req, session, outcome.answer.id),
      };
      recordResponse(deps.journal, config.store.journal_ttl_ms, made);
    }
    return ended(call, progress, outcome);
  }
}
