/**
 * `POST /v1/messages` (Anthropic Messages API) for Anthropic-SDK clients (`x-api-key`
 * carries the gateway key): passed to upstreams that speak it (the `anthropic` kind), with
 * the same auth, routing, limits, usage and cost as chat; errors in Anthropic's shape.
 */
import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { MIN_THINKING_BUDGET } from '../apis/effort.js';
import { messagesApi } from '../apis/messages.js';
import { checkNesting } from '../apis/nesting.js';
import { withoutGatewayFields } from '../apis/normalise.js';
import { StrategySchema } from '../config/schema.js';
import { allowedModel } from '../pipeline/select.js';
import type { Model } from '../config/types.js';
import type { HeldGeneration } from '../pipeline/call.js';
import { readCapped } from '../upstream/send.js';
import { countPromptTokens } from '../usage/estimate.js';
import { requestedId } from '../pipeline/finish.js';
import { handleModelCall, type PipelineDeps } from '../pipeline/handle.js';

export const MessagesRequestSchema = Type.Object(
  {
    model: Type.String({ minLength: 1 }),
    messages: Type.Array(Type.Object({ role: Type.String({ minLength: 1 }) }, { additionalProperties: true }), { minItems: 1 }),
    max_tokens: Type.Optional(Type.Integer({ minimum: 1 })),
    stream: Type.Optional(Type.Boolean()),
    /** A string or text blocks (Anthropic API reference, Messages: `system`). */
    system: Type.Optional(Type.Union([Type.String(), Type.Array(Type.Object({ type: Type.String({ minLength: 1 }) }, { additionalProperties: true }))])),
    /**
     * `enabled` with `budget_tokens` >= 1024 (the API reference's minimum), `adaptive`, or
     * `disabled`; other fields (Claude Code's `display`) pass.
     */
    thinking: Type.Optional(
      Type.Object(
        { type: Type.String({ minLength: 1 }), budget_tokens: Type.Optional(Type.Integer({ minimum: MIN_THINKING_BUDGET })) },
        { additionalProperties: true },
      ),
    ),
    /** Gateway-only: per-request routing strategy. */
    cluster_routing: Type.Optional(StrategySchema),
  },
  { additionalProperties: true },
);

export const CountTokensSchema = Type.Object(
  {
    model: Type.String({ minLength: 1 }),
    messages: Type.Array(Type.Object({ role: Type.String({ minLength: 1 }) }, { additionalProperties: true }), { minItems: 1 }),
  },
  { additionalProperties: true },
);

/**
 * The count from the first target of `model` whose vendor counts tokens (an Anthropic
 * account), sent with that target's model id; null when none does or its answer is not a count
 * (the caller estimates instead).
 */
async function vendorCount(
  gen: HeldGeneration,
  model: Model,
  body: Record<string, unknown>,
  requestId: string,
  beta: string | string[] | undefined,
): Promise<{ input_tokens: number; upstream: string } | null> {
  for (const t of model.targets) {
    const provider = gen.providers.get(t.upstream.id);
    if (!provider?.countTokens) continue;
    try {
      const res = await provider.countTokens(
        { ...withoutGatewayFields(body), model: t.model },
        typeof beta === 'string' ? { 'anthropic-beta': beta } : {},
        requestId,
        AbortSignal.timeout(t.upstream.timeouts.first_byte_ms),
      );
      const { buf } = await readCapped(res.body, 64 * 1024);
      const parsed = res.statusCode === 200 ? (JSON.parse(buf.toString('utf8')) as { input_tokens?: unknown }) : null;
      if (parsed && typeof parsed.input_tokens === 'number') return { input_tokens: parsed.input_tokens, upstream: t.upstream.id };
    } catch {
      // unreachable or unreadable: the next target, else the estimate
    }
  }
  return null;
}

/**
 * Registers `POST /v1/messages` and `POST /v1/messages/count_tokens`; their errors
 * (validation included) are Anthropic-shaped. count_tokens answers Anthropic's shape
 * (`{"input_tokens": n}`; Anthropic API reference, "Count tokens in a message"): from an
 * Anthropic account of the model when it has one, else from the gateway's estimate
 * (usage/estimate.ts: text, tool calls and results, tool definitions, `system`, images and
 * documents), marked `x-switchyard-estimated: true` (the model's own tokenizer may differ).
 *
 * Counting is not a model call: it needs a valid key and a model the key may use, and is
 * recorded (log line, metrics, ledger row at zero cost; `api` `messages/count_tokens`, the
 * model, the model as sent and the account that counted, if one did), but takes nothing from the key's
 * rpm, tpm, concurrency or budget. That is what a user of another gateway expects (Anthropic
 * does not bill token counting, and rate-limits it apart from message creation: its
 * "Token counting" docs), and Claude Code counts often: a key held to 2 rpm must not lose its
 * model calls to counts. The vendor is only ever sent a count request (the Messages body,
 * schema-checked, with the target's model id), so the route is no way to reach anything else.
 */
export function registerMessages(app: FastifyInstance, deps: PipelineDeps): void {
  const config = { api: 'messages', decodesBody: true, errorBody: messagesApi.errorBody };
  app.post('/v1/messages', { schema: { body: MessagesRequestSchema }, config }, async (req, reply) => {
    await handleModelCall(messagesApi, deps, req, reply);
  });
  app.post<{ Body: Record<string, unknown> & { model: string } }>(
    '/v1/messages/count_tokens',
    { schema: { body: CountTokensSchema }, config },
    async (req, reply) => {
      // Its record (request-hooks.ts) names what a model call's names: the API, the model, the model as sent, the account.
      const described = { api: 'messages/count_tokens', model: null, requestedModel: requestedId(req.body), upstream: null };
      req.described = described;
      // The same nesting cap as a model call: the vendor's request is serialised, the estimate walks it.
      await checkNesting(req.body);
      const gen = deps.hold();
      try {
        const model = allowedModel(gen.config, req, req.body.model);
        req.described = { ...described, model: model.name };
        const counted = await vendorCount(gen, model, req.body, req.id, req.headers['anthropic-beta']);
        if (counted) {
          req.described = { ...described, model: model.name, upstream: counted.upstream };
          return { input_tokens: counted.input_tokens };
        }
        const input = await countPromptTokens(messagesApi.prompt(req.body));
        void reply.header('x-switchyard-estimated', 'true');
        return { input_tokens: input };
      } finally {
        gen.release();
      }
    },
  );
}
