/**
 * Config schema, `models[]`: a public model name, its price, what it accepts, how it sheds
 * deep calls and the targets that serve it. Prices are USD per 1M tokens.
 */
import { Type } from '@sinclair/typebox';
import { Id, MODEL_ID_MAX_CHARS } from './schema-id.js';

export const PriceSchema = Type.Object(
  {
    /** USD per 1M uncached input tokens. */
    input: Type.Number({ minimum: 0 }),
    /**
     * USD per 1M prompt tokens read from the provider's prompt cache (cache hits). Default by
     * the target's provider (config/models.ts `fullPrice`): `anthropic` 0.1 × `input` (Anthropic
     * pricing, "Prompt caching": cache hits and refreshes 0.1× base input), any other `input`
     * (OpenAI's cached-input discount differs per model: set it from the model's pricing row).
     */
    cached_input: Type.Optional(Type.Number({ minimum: 0 })),
    /**
     * USD per 1M prompt tokens written to the provider's 5-minute prompt cache (and writes whose
     * lifetime the provider does not report). Default: `anthropic` 1.25 × `input` (Anthropic
     * pricing, "Prompt caching": 5m cache writes 1.25× base input), any other `input` (OpenAI
     * bills no write premium: "no additional fees", OpenAI "Prompt caching" guide).
     */
    cache_write: Type.Optional(Type.Number({ minimum: 0 })),
    /**
     * USD per 1M prompt tokens written to the provider's 1-hour prompt cache (Anthropic's
     * `cache_control.ttl: "1h"`, reported as `usage.cache_creation.ephemeral_1h_input_tokens`).
     * Default: `anthropic` 2 × `input` (Anthropic pricing: 1h cache writes 2× base input), any
     * other `cache_write`.
     */
    cache_write_1h: Type.Optional(Type.Number({ minimum: 0 })),
    /** USD per 1M output tokens other than reasoning tokens. */
    output: Type.Number({ minimum: 0 }),
    /** USD per 1M reasoning tokens (a part of the output tokens); defaults to `output`. */
    reasoning: Type.Optional(Type.Number({ minimum: 0 })),
  },
  { additionalProperties: false },
);

export const TargetSchema = Type.Object(
  {
    upstream: Id,
    /** The model id sent to the upstream. */
    model: Type.String({ minLength: 1 }),
    /** Used only when no non-standby target of the model is live (e.g. the simulator). */
    standby: Type.Boolean({ default: false }),
    /** Relative share of concurrent load under `balanced` (2 takes twice the load of 1). */
    weight: Type.Number({ exclusiveMinimum: 0, maximum: 1000, default: 1 }),
    /** Overrides the model's price for this target (e.g. a discounted account). */
    price: Type.Optional(PriceSchema),
  },
  { additionalProperties: false },
);

/** A model's `cache_breakpoints` (see ModelSchema). */
export const CacheBreakpointsSchema = Type.Union([Type.Literal('auto'), Type.Literal('off')], { default: 'auto' });

export const StrategySchema = Type.Union([Type.Literal('fast'), Type.Literal('balanced'), Type.Literal('cheap'), Type.Literal('sticky')]);

/** Reasoning effort levels, lowest first (OpenAI API reference, `reasoning_effort`; xhigh for the Codex models). */
export const EFFORT_LEVELS: readonly string[] = ['minimal', 'low', 'medium', 'high', 'xhigh'];

export const EffortSchema = Type.Union(EFFORT_LEVELS.map((e) => Type.Literal(e)));

/**
 * Levels clients send above `xhigh`, deepest last: `max` (Anthropic's `output_config.effort`,
 * platform.claude.com "Effort"; Claude Code 2.1.332's `--effort`), `ultra` (Codex 0.171.0's
 * model catalog, `codex debug models`: `supported_reasoning_levels` up to `max` and `ultra`).
 * A request at one of them is deep on any reasoning model; a config never names them (a
 * bridge sends them on as the deepest level the other API documents).
 */
export const DEEPER_EFFORTS: readonly string[] = ['max', 'ultra'];

/**
 * A request's `reasoning_effort` (chat) or `reasoning.effort` (Responses): a level word, or
 * null. Any lower-case word up to 32 characters is taken: the levels above, `none` (no
 * reasoning), the deeper ones, and levels an agent's catalog adds later (an unknown level
 * counts as the model's `default_effort` for routing, is relayed as sent to an upstream of the
 * client's own API, and is left out by a bridge: router/deep.ts, apis/effort.ts). Not a
 * word (a number, a long or free-form string) is refused with 400.
 */
export const RequestEffortSchema = Type.Union([Type.String({ pattern: '^[a-z][a-z0-9_-]{0,31}$' }), Type.Null()]);

/** A level word as RequestEffortSchema takes it (for effort fields no route schema checks: Messages' `output_config.effort`). */
export const EFFORT_WORD = /^[a-z][a-z0-9_-]{0,31}$/;

/**
 * What happens to a deep call when every account of its model is hot (deep calls in flight
 * at the account's learned capacity). `ladder` (the default) walks the rungs in order: wait
 * for a place (up to `wait_ms`, first come first served; background keys skip it), the
 * lower effort, the model's reasoning fallbacks, the non-reasoning `fallback`, then 503 with
 * `Retry-After` (router/shed.ts).
 * `downgrade`, `queue` and `reject` are single rungs (kept from earlier configs).
 */
export const ShedSchema = Type.Object(
  {
    policy: Type.Union([Type.Literal('ladder'), Type.Literal('downgrade'), Type.Literal('queue'), Type.Literal('reject')], { default: 'ladder' }),
    /** The non-reasoning model that takes a hot call (`ladder`, `downgrade`); default: the model's first fallback for `downgrade`. */
    fallback: Type.Optional(Id),
    /**
     * `ladder`: longest wait for a place on the model's own accounts before the lower rungs,
     * ms, from the request's start. A few seconds: long enough for a burst's queue to drain as
     * running calls end, short against the agents' own patience.
     */
    wait_ms: Type.Integer({ minimum: 0, maximum: 60_000, default: 5_000 }),
    /** `queue`: longest wait for a place before the call is rejected, ms. */
    queue_timeout_ms: Type.Integer({ minimum: 1, default: 5_000 }),
    /** `ladder`, opt-in: the effort a hot call is lowered to on the same model (below `deep_effort`), before the fallbacks. */
    lower_effort: Type.Optional(Type.Union(['minimal', 'low', 'medium', 'high'].map((e) => Type.Literal(e)))),
  },
  { additionalProperties: false, default: {} },
);

/**
 * What a model accepts, so one OpenAI-style request can be reshaped for each model a call
 * may land on (primary, fallback, shed). See docs/api.md, "Parameter normalisation".
 */
export const CapabilitiesSchema = Type.Object(
  {
    /** Takes `tools` / `tool_choice` / `parallel_tool_calls`. */
    tools: Type.Boolean({ default: true }),
    /** Takes image content parts. */
    vision: Type.Boolean({ default: true }),
    /**
     * The output-limit field the model takes: OpenAI's reasoning models reject `max_tokens`
     * and want `max_completion_tokens` (OpenAI API reference, "Create chat completion").
     * Absent: the client's spelling passes unchanged.
     */
    max_tokens_field: Type.Optional(Type.Union([Type.Literal('max_tokens'), Type.Literal('max_completion_tokens')])),
    /** Top-level body fields the model accepts; absent = any. `model`, `messages`, `stream` and `stream_options` always pass. */
    accepted_params: Type.Optional(Type.Array(Type.String({ minLength: 1 }))),
    /** Top-level body fields the model rejects (e.g. `temperature` on OpenAI reasoning models). */
    unsupported_params: Type.Array(Type.String({ minLength: 1 }), { default: [] }),
    /** What happens to a parameter the model does not take: dropped (listed in `x-switchyard-dropped-params`) or a 400. */
    on_unsupported: Type.Union([Type.Literal('drop'), Type.Literal('reject')], { default: 'drop' }),
  },
  { additionalProperties: false, default: {} },
);

export const ModelSchema = Type.Object(
  {
    name: Id,
    /** Other names clients may send for this model: exact names or globs with `*` (config/aliases.ts). */
    aliases: Type.Array(Type.String({ minLength: 1, maxLength: MODEL_ID_MAX_CHARS, pattern: '^[A-Za-z0-9*][A-Za-z0-9._:/*@-]*$' }), { default: [] }),
    /** A reasoning model: takes `reasoning_effort` (or its provider maps it) and can be deep. */
    reasoning: Type.Boolean({ default: false }),
    capabilities: CapabilitiesSchema,
    /** A request is deep when `reasoning` and its reasoning_effort >= this level. */
    deep_effort: Type.Union([EffortSchema], { default: 'high' }),
    /** The effort assumed when a request sends no reasoning_effort. */
    default_effort: Type.Union([EffortSchema], { default: 'medium' }),
    shed: ShedSchema,
    price: PriceSchema,
    /** Routing strategy; defaults to `routing.strategy`. */
    strategy: Type.Optional(StrategySchema),
    /** Models tried, in order, once this model's targets are exhausted. */
    fallbacks: Type.Array(Id, { default: [] }),
    /**
     * The model's context window, tokens: the most its prompt and its output together may
     * take (OpenAI and Anthropic both count `max_tokens` into it: pipeline/context-window.ts).
     * A request whose estimate passes it goes to `context_fallback`, or gets a 400 naming both
     * numbers, before any upstream is called. Absent: unknown, nothing is counted or checked.
     */
    context_window: Type.Optional(Type.Integer({ minimum: 1, maximum: 100_000_000 })),
    /**
     * The model a request too long for `context_window` goes to instead (marked as a fallback,
     * `x-switchyard-fallback`); it must be declared with a larger `context_window` (checked at
     * load). Absent: such a request gets a 400.
     */
    context_fallback: Type.Optional(Id),
    /**
     * Prompt-cache breakpoints on requests sent to this model's Anthropic Messages accounts:
     * `auto` marks the tools, the system prompt and the last stable turn of a request that
     * carries no `cache_control` of its own (translate/messages-cache.ts); `off` sends
     * requests as translated.
     */
    cache_breakpoints: CacheBreakpointsSchema,
    targets: Type.Array(TargetSchema, { minItems: 1 }),
  },
  { additionalProperties: false },
);
