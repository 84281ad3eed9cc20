/**
 * The data path of one chat completion, top to bottom:
 * model lookup -> target plan -> for each target: rewrite body, send, sort failures,
 * maybe next target -> relay SSE or JSON -> record usage, cost, metrics, one log line.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { mayUse } from '../auth/keys.js';
import type { GatewayConfig, Model, Target } from '../config/load.js';
import { GatewayError } from '../errors/codes.js';
import { classifyError, type Classified } from '../errors/classify.js';
import { sendError } from '../errors/reply.js';
import { recordUpstreamError, trackInFlight } from '../metrics/record.js';
import type { Metrics } from '../metrics/registry.js';
import type { Provider } from '../providers/types.js';
import { planTargets } from '../router/index.js';
import { upstreamBody, type ChatRequest } from './chat-request.js';
import { newRecord, type RequestRecord } from './context.js';
import { finishRequest } from './finish.js';
import { relayJson } from './respond-json.js';
import { relaySse } from './respond-sse.js';
import { readUpstreamError } from './upstream-error.js';
import { costUsd } from './usage.js';

export interface PipelineDeps {
  readonly config: () => GatewayConfig;
  readonly providers: () => ReadonlyMap<string, Provider>;
  readonly metrics: Metrics;
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

function routeHeaders(rec: RequestRecord, target: Target): Record<string, string> {
  return { 'x-request-id': rec.requestId, 'x-switchyard-upstream': target.upstream.id, 'x-switchyard-model': target.model };
}

/** Handles `POST /v1/chat/completions`; never throws (every outcome is answered and recorded). */
export async function handleChatCompletion(deps: PipelineDeps, req: FastifyRequest, reply: FastifyReply): Promise<void> {
  const rec = newRecord(req.id, req.caller?.name ?? null, req.startedAt);
  const body = req.body as ChatRequest;
  rec.stream = body.stream === true;
  const abort = new AbortController();
  const onClose = (): void => {
    if (!reply.raw.writableFinished) abort.abort(new ClientDisconnected());
  };
  reply.raw.on('close', onClose);
  let model: Model | null = null;

  try {
    const config = deps.config();
    model = findModel(config, req, body.model);
    rec.model = model.name;
    trackInFlight(deps.metrics, model.name, 1);
    const wantsUsage = rec.stream && body.stream_options?.include_usage === true;
    let last: { classified: Classified; error: GatewayError } | null = null;

    for (const target of planTargets(model)) {
      if (abort.signal.aborted) throw abort.signal.reason;
      const provider = deps.providers().get(target.upstream.id);
      if (!provider) continue;
      rec.attempts++;
      rec.upstream = target.upstream.id;
      rec.upstreamModel = target.model;
      const secrets = [target.upstream.apiKey];
      const headers = routeHeaders(rec, target);

      let res;
      try {
        res = await provider.sendChat({ body: upstreamBody(body, target.model), stream: rec.stream, requestId: rec.requestId, signal: abort.signal });
      } catch (err) {
        if (abort.signal.aborted) throw abort.signal.reason;
        const classified = classifyError(err);
        last = {
          classified,
          error: new GatewayError(classified.class === 'timeout' ? 'GW_ERR_UPSTREAM_TIMEOUT' : 'GW_ERR_UPSTREAM_UNREACHABLE'),
        };
        recordUpstreamError(deps.metrics, target.upstream.id, classified.class);
        continue;
      }

      if (res.statusCode >= 400) {
        last = await readUpstreamError(res, secrets);
        recordUpstreamError(deps.metrics, target.upstream.id, last.classified.class);
        if (last.classified.retryable) continue;
        break;
      }

      const isSse = String(res.headers['content-type'] ?? '').includes('text/event-stream');
      if (rec.stream && isSse) {
        const result = await relaySse({ reply, upstream: res, wantsUsage, rec, headers, signal: abort.signal, secrets });
        if (result.committed) {
          if (rec.errorClass) recordUpstreamError(deps.metrics, target.upstream.id, rec.errorClass);
          return;
        }
        last = result;
        recordUpstreamError(deps.metrics, target.upstream.id, result.classified.class);
        if (result.classified.retryable) continue;
        break;
      }
      try {
        await relayJson(reply, res, rec, headers);
        return;
      } catch (err) {
        if (abort.signal.aborted) throw abort.signal.reason;
        const classified: Classified = err instanceof GatewayError ? { class: 'bad_response', retryable: true } : classifyError(err);
        last = { classified, error: err instanceof GatewayError ? err : new GatewayError('GW_ERR_UPSTREAM_STREAM', { cause: err }) };
        recordUpstreamError(deps.metrics, target.upstream.id, classified.class);
        continue;
      }
    }

    const final = last ?? { classified: null, error: new GatewayError('GW_ERR_NO_TARGET') };
    rec.errorClass = final.classified?.class ?? null;
    rec.outcome = final.error.status < 500 && final.classified?.class === 'caller' ? 'client_error' : 'upstream_error';
    rec.status = sendError(reply, final.error);
  } catch (err) {
    if (err instanceof ClientDisconnected || abort.signal.aborted) {
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
    if (model) {
      trackInFlight(deps.metrics, model.name, -1);
      rec.costUsd = costUsd(rec.usage, model.price);
    }
    rec.durationMs = Date.now() - rec.startedAt;
    req.recorded = true;
    finishRequest(deps.metrics, req.log, rec);
  }
}

