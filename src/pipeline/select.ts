/**
 * What a request asks of routing, read from the request: the model as its client API can
 * reach it (targets narrowed by the support matrix), the strategy, and the response headers
 * that say where the call went. The `sticky` session is read by pipeline/session.ts.
 */
import type { FastifyRequest } from 'fastify';
import type { ApiName } from '../apis/names.js';
import type { InboundApi } from '../apis/types.js';
import { mayUse } from '../auth/keys.js';
import { modelNamed } from '../config/aliases.js';
import { MODEL_ID_MAX_CHARS } from '../config/schema-id.js';
import type { GatewayConfig, Model, Target } from '../config/types.js';
import type { Strategy } from '../config/schema.js';
import { GatewayError } from '../errors/codes.js';
import type { Provider } from '../providers/types.js';
import type { RouteRun } from '../router/run.js';
import { STRATEGY_NAMES } from '../router/strategies/index.js';
import { wireFor } from '../translate/table.js';

/** Per config generation: each (API, model) with only the targets that can serve the API (null: none). */
const servable = new WeakMap<GatewayConfig, Map<string, Model | null>>();

/**
 * The wire API an account speaking `wires` serves `api` over: the support matrix's choice
 * (`translate/table.ts`), or for an operation (a compaction) the client's own API only; null
 * when it cannot serve it.
 */
export function wireOf(api: InboundApi, wires: ReadonlySet<ApiName>): ApiName | null {
  if (api.operation) return wires.has(api.name) ? api.name : null;
  return wireFor(api.name, wires);
}

/**
 * The model as seen from one client API (or operation): its targets narrowed to upstreams
 * that can serve it ({@link wireOf}). Cached per config generation.
 */
export function forApi(config: GatewayConfig, providers: ReadonlyMap<string, Provider>, api: InboundApi, model: Model | undefined): Model | undefined {
  if (!model) return undefined;
  let byName = servable.get(config);
  if (!byName) servable.set(config, (byName = new Map()));
  const key = `${api.path}\n${model.name}`;
  let view = byName.get(key);
  if (view === undefined) {
    const targets = model.targets.filter((t) => {
      const p = providers.get(t.upstream.id);
      return p !== undefined && wireOf(api, p.wireApis) !== null;
    });
    view = targets.length === 0 ? null : targets.length === model.targets.length ? model : Object.freeze({ ...model, targets: Object.freeze(targets) });
    byName.set(key, view);
  }
  return view ?? undefined;
}

/**
 * The configured model `name` (or one of its aliases) stands for, when the caller's key may use it.
 * @throws GatewayError 400 `string_above_max_length` for a name over MODEL_ID_MAX_CHARS
 *   characters, before any alias or glob is looked at; 404 `model_not_found` (unknown, or
 *   not allowed for the key).
 */
export function allowedModel(config: GatewayConfig, req: FastifyRequest, name: string): Model {
  if (name.length > MODEL_ID_MAX_CHARS) {
    throw new GatewayError('GW_ERR_MODEL_ID_TOO_LONG', {
      message: `Invalid 'model': string too long. Expected a string with maximum length ${MODEL_ID_MAX_CHARS}, but got a string with length ${name.length} instead.`,
      param: 'model',
    });
  }
  const declared = modelNamed(config, name);
  if (!declared || !req.caller || !mayUse(req.caller, declared.name)) {
    throw new GatewayError('GW_ERR_MODEL_NOT_FOUND', {
      message: `The model \`${name.slice(0, 256)}\` does not exist or you do not have access to it.`,
      param: 'model',
    });
  }
  return declared;
}

/**
 * A model the request names (`allowedModel`), as its API can reach it.
 * @throws GatewayError 400 `unsupported_api` (no target speaks a wire API this client API can be served over).
 */
export function servedOn(config: GatewayConfig, providers: ReadonlyMap<string, Provider>, api: InboundApi, declared: Model): Model {
  const model = forApi(config, providers, api, declared);
  if (!model) {
    const why = api.operation
      ? `none of its upstreams serves the ${api.name} API, which this operation needs (it is not translated)`
      : 'none of its upstreams speaks an API this endpoint can be translated to';
    throw new GatewayError('GW_ERR_API_NOT_SUPPORTED', { message: `The model \`${declared.name}\` is not served on ${api.path}: ${why}.`, param: 'model' });
  }
  return model;
}

/**
 * The strategy for this request: body `cluster_routing`, header `x-switchyard-strategy` (empty: absent), or the model's.
 * @throws GatewayError 400 for an unknown header value.
 */
export function pickStrategy(req: FastifyRequest, body: Record<string, unknown>, model: Model): Strategy {
  const inBody = body['cluster_routing'];
  if (typeof inBody === 'string' && (STRATEGY_NAMES as string[]).includes(inBody)) return inBody as Strategy;
  const header = req.headers['x-switchyard-strategy'];
  const value = header === undefined ? '' : String(header).trim().toLowerCase();
  // An empty header is no header (a proxy or a client template that sets it blank).
  if (value === '') return model.strategy;
  if (!(STRATEGY_NAMES as string[]).includes(value)) {
    throw new GatewayError('GW_ERR_INVALID_REQUEST', {
      message: `Invalid x-switchyard-strategy header: expected one of ${STRATEGY_NAMES.join(', ')}.`,
      param: 'x-switchyard-strategy',
    });
  }
  return value as Strategy;
}

/** The request body's declared size, bytes (`content-length`); undefined when not declared (chunked). */
export function promptBytes(req: FastifyRequest): number | undefined {
  const n = Number(req.headers['content-length']);
  return Number.isSafeInteger(n) && n >= 0 ? n : undefined;
}

/** Response headers saying where the call went and how it was routed, written into `h` (a new object by default) and returned. */
export function routeHeaders(
  requestId: string,
  route: RouteRun,
  strategy: Strategy,
  target: Target | null,
  h: Record<string, string> = {},
): Record<string, string> {
  h['x-request-id'] = requestId;
  h['x-switchyard-strategy'] = strategy;
  h['x-switchyard-attempts'] = String(route.attempts);
  if (target) {
    h['x-switchyard-upstream'] = target.upstream.id;
    h['x-switchyard-model'] = target.model;
  }
  if (route.sticky) h['x-switchyard-sticky'] = route.sticky;
  if (route.cache) h['x-switchyard-cache'] = route.cache;
  if (route.fallback) h['x-switchyard-fallback'] = route.fallback;
  if (route.shed) h['x-switchyard-shed'] = route.shed;
  return h;
}
