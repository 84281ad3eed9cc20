/**
 * Parameter normalisation: reshapes one client body for the model a call lands on, from
 * the model's declared `capabilities` (config) — so a client can switch models, or be
 * failed over or shed to another, without changing a line.
 *
 * - The output cap goes in the field the model takes (`max_tokens` <-> `max_completion_tokens`;
 *   OpenAI's reasoning models reject `max_tokens` with 400 `unsupported_parameter`, recording
 *   `openai-chat-error-400-unsupported-parameter.json`).
 * - Reasoning controls go only to reasoning models; tool fields only to models with tools.
 * - Fields in `unsupported_params`, or outside `accepted_params`, are dropped (and listed)
 *   or, by `on_unsupported: reject` on the requested model, answered with 400.
 */
import type { Model } from '../config/types.js';
import { GatewayError } from '../errors/codes.js';
import type { PreparedBody } from './types.js';

/** Body fields meant for the gateway only; never sent upstream. */
export const GATEWAY_FIELDS = ['cluster_routing', 'switchyard'] as const;

/** A copy of `body` without the gateway-only fields, for a body relayed to an upstream as it is. */
export function withoutGatewayFields(body: Readonly<Record<string, unknown>>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...body };
  for (const f of GATEWAY_FIELDS) delete out[f];
  return out;
}

export interface ApiFields {
  /** Fields every model takes (`model`, the prompt, `stream` …). */
  readonly always: readonly string[];
  /** The API's reasoning controls, sent only to reasoning models. */
  readonly reasoning: readonly string[];
  /** The API's tool fields, sent only to models with `tools`. */
  readonly tools: readonly string[];
  /** Whether the API has both output-cap spellings (chat completions). */
  readonly maxTokensField: boolean;
}

function renameMaxTokens(out: Record<string, unknown>, field: 'max_tokens' | 'max_completion_tokens'): void {
  const other = field === 'max_tokens' ? 'max_completion_tokens' : 'max_tokens';
  if (out[other] === undefined) return;
  if (out[field] === undefined || out[field] === null) out[field] = out[other];
  delete out[other];
}

/**
 * @param body the client's body (not modified).
 * @throws GatewayError `GW_ERR_UNSUPPORTED_PARAMETER` (400, `param` set) when `primary` and
 *         the model's `on_unsupported` is `reject`.
 */
export function normalise(body: Record<string, unknown>, upstreamModel: string, model: Model, primary: boolean, fields: ApiFields): PreparedBody {
  const caps = model.capabilities;
  const out: Record<string, unknown> = { ...withoutGatewayFields(body), model: upstreamModel };
  if (fields.maxTokensField && caps.max_tokens_field) renameMaxTokens(out, caps.max_tokens_field);

  const unsupported = new Set<string>(caps.unsupported_params);
  if (!model.reasoning) for (const f of fields.reasoning) unsupported.add(f);
  if (!caps.tools) for (const f of fields.tools) unsupported.add(f);
  const accepted = caps.accepted_params ? new Set([...caps.accepted_params, ...fields.always]) : null;

  const dropped: string[] = [];
  for (const key of Object.keys(out)) {
    if (fields.always.includes(key) || out[key] === undefined) continue;
    if (!unsupported.has(key) && (!accepted || accepted.has(key))) continue;
    if (out[key] === null) {
      // null means "not set": removed quietly, never a reason to refuse.
      delete out[key];
      continue;
    }
    // The gateway itself routes calls to non-reasoning models (shed, fallback): a reasoning
    // control there is always dropped, never a client error.
    const reject = primary && caps.on_unsupported === 'reject' && !fields.reasoning.includes(key);
    if (reject) {
      throw new GatewayError('GW_ERR_UNSUPPORTED_PARAMETER', {
        message: `Unsupported parameter: '${key}' is not supported with the model \`${model.name}\`.`,
        param: key,
      });
    }
    delete out[key];
    dropped.push(key);
  }
  return { body: out, dropped };
}

/** True when any message holds an image part (`image_url`, `input_image`, Anthropic `image`). */
export function hasImages(messages: unknown): boolean {
  if (!Array.isArray(messages)) return false;
  for (const m of messages) {
    const content = (m as { content?: unknown } | null)?.content;
    if (!Array.isArray(content)) continue;
    for (const part of content) {
      const t = (part as { type?: unknown } | null)?.type;
      if (t === 'image_url' || t === 'input_image' || t === 'image') return true;
    }
  }
  return false;
}

/**
 * @throws GatewayError 400 when the prompt holds images and the model has no vision.
 */
export function checkVision(messages: unknown, model: Model, param: string): void {
  if (!model.capabilities.vision && hasImages(messages)) {
    throw new GatewayError('GW_ERR_UNSUPPORTED_PARAMETER', {
      message: `The model \`${model.name}\` does not take image input.`,
      param,
    });
  }
}

/**
 * Unwraps a literal `extra_body` object into the body, as the SDKs that have the option do
 * client-side (the `openai` Python SDK merges `extra_body` over the JSON body), so a client
 * that sent it verbatim gets the same call; the `extra_body` key itself never reaches an
 * upstream. Returns `body` itself when it has no `extra_body`.
 * @throws GatewayError 400 (`param: extra_body`) when it is neither an object nor null, or
 *   sets `model`, `stream` or `extra_body` (the route and the protocol are decided by the
 *   top-level fields, which the route's schema checked).
 */
export function unwrapExtraBody<T extends Record<string, unknown>>(body: T): T {
  if (!Object.hasOwn(body, 'extra_body')) return body;
  const extra = body['extra_body'];
  if (extra !== null && (typeof extra !== 'object' || Array.isArray(extra))) {
    throw new GatewayError('GW_ERR_INVALID_REQUEST', {
      message: 'extra_body must be an object whose fields are added to the request body.',
      param: 'extra_body',
    });
  }
  if (extra !== null) {
    // What decides the route and the protocol stays at the top level, where it was checked.
    const reserved = ['model', 'stream', 'extra_body'].filter((k) => Object.hasOwn(extra as object, k));
    if (reserved.length > 0) {
      throw new GatewayError('GW_ERR_INVALID_REQUEST', {
        message: `extra_body may not set ${reserved.map((k) => `'${k}'`).join(', ')}: send it at the top level of the body.`,
        param: `extra_body.${reserved[0]}`,
      });
    }
  }
  const { extra_body: _dropped, ...rest } = body;
  return { ...rest, ...(extra as Record<string, unknown> | null) } as T;
}
