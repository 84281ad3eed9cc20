/**
 * The one schema for `config/switchyard.yaml`, written with TypeBox so the same
 * definition gives the static type and the JSON Schema that ajv validates at start-up.
 *
 * Units are in the field names: `_ms` milliseconds, `_bytes` bytes, prices in USD per
 * 1M tokens (the unit OpenAI and DeepSeek publish their price lists in).
 */
import { Type, type Static } from '@sinclair/typebox';

const Id = Type.String({ minLength: 1, maxLength: 128, pattern: '^[A-Za-z0-9][A-Za-z0-9._:/-]*$' });

export const TimeoutsSchema = Type.Object(
  {
    /** TCP + TLS connect timeout for one upstream connection. */
    connect_ms: Type.Integer({ minimum: 1, default: 5_000 }),
    /** From sending the request until the upstream's response headers arrive. */
    first_byte_ms: Type.Integer({ minimum: 1, default: 120_000 }),
    /** Longest silence allowed between two body chunks once the response started. */
    idle_ms: Type.Integer({ minimum: 1, default: 60_000 }),
  },
  { additionalProperties: false, default: {} },
);

export const SimulatorSchema = Type.Object(
  {
    /** Pause between two replayed SSE events, like a real provider's token pace. */
    chunk_delay_ms: Type.Integer({ minimum: 0, maximum: 10_000, default: 20 }),
    /** Pause before the response headers (queueing + prompt processing upstream). */
    first_byte_delay_ms: Type.Integer({ minimum: 0, maximum: 600_000, default: 150 }),
    /** Seed of the simulator's PRNG (which congested call is refused, which stalls), so runs repeat exactly. */
    seed: Type.Integer({ minimum: 0, maximum: 4_294_967_295, default: 1 }),
    /**
     * Makes the account throttle like a real provider under reasoning bursts (docs/simulator.md):
     * past `deep_threshold` deep calls in the window, a new deep call gets a 429 or stalls.
     */
    throttle: Type.Object(
      {
        enabled: Type.Boolean({ default: false }),
        /** A deep call counts while it is in flight and started less than this long ago. */
        window_ms: Type.Integer({ minimum: 1, maximum: 600_000, default: 4_000 }),
        /** Deep calls the account takes in its window; the one past it finds the account congested. */
        deep_threshold: Type.Integer({ minimum: 1, default: 6 }),
        /** `reasoning_effort` values that make a call to a `reasoner` model deep. */
        deep_efforts: Type.Array(Type.String({ minLength: 1 }), { default: ['high', 'xhigh'] }),
        /** Share of congested deep calls answered 429 (the rest stall). */
        reject_share: Type.Number({ minimum: 0, maximum: 1, default: 0.5 }),
        /** `Retry-After` of the 429, seconds. */
        retry_after_s: Type.Integer({ minimum: 0, maximum: 3_600, default: 2 }),
        /** A stalled call's extra wait before its first event. */
        stall_first_token_ms: Type.Integer({ minimum: 0, maximum: 600_000, default: 6_000 }),
        /** A stalled call's pause inside its reasoning burst … */
        stall_pause_ms: Type.Integer({ minimum: 0, maximum: 600_000, default: 500 }),
        /** … before every this-many-th reasoning event. */
        stall_pause_every: Type.Integer({ minimum: 1, default: 10 }),
      },
      { additionalProperties: false, default: {} },
    ),
  },
  { additionalProperties: false, default: {} },
);

export const WindowSchema = Type.Object(
  {
    /** W: a deep call counts while it is in flight and started less than this long ago. */
    seconds: Type.Number({ exclusiveMinimum: 0, maximum: 600, default: 4 }),
    /** Deep calls in the window at which this upstream account counts as hot. */
    threshold: Type.Integer({ minimum: 1, default: 6 }),
  },
  { additionalProperties: false, default: {} },
);

export const UpstreamSchema = Type.Object(
  {
    id: Id,
    /** The provider kind: a key of `providers/registry.ts` (checked at load). */
    provider: Type.String({ minLength: 1, maxLength: 64 }),
    /** e.g. `https://api.openai.com/v1`; the kind appends its API path. Not used by `simulator`. */
    base_url: Type.Optional(Type.String({ pattern: '^https?://' })),
    /** Provider-kind options, validated by the kind's own schema (README, "Providers"). */
    options: Type.Record(Type.String(), Type.Unknown(), { default: {} }),
    /** Usually a `${ENV_VAR}` reference. An unset variable switches the upstream off. */
    api_key: Type.Optional(Type.String()),
    region: Type.String({ default: 'default' }),
    max_concurrency: Type.Integer({ minimum: 1, maximum: 100_000, default: 64 }),
    timeouts: TimeoutsSchema,
    /** Extra headers sent to this upstream (e.g. `OpenAI-Organization`). */
    headers: Type.Record(Type.String(), Type.String(), { default: {} }),
    simulator: SimulatorSchema,
    /** The reasoning-burst window of this account (see README, "Reasoning bursts"). */
    window: WindowSchema,
  },
  { additionalProperties: false },
);

export const PriceSchema = Type.Object(
  {
    /** USD per 1M uncached input tokens. */
    input: Type.Number({ minimum: 0 }),
    /** USD per 1M cached input tokens; defaults to `input`. */
    cached_input: Type.Optional(Type.Number({ minimum: 0 })),
    /**
     * USD per 1M prompt tokens written to the provider's prompt cache (Anthropic bills cache
     * writes at 1.25× input for the 5-minute cache; Anthropic pricing page); defaults to `input`.
     */
    cache_write: Type.Optional(Type.Number({ minimum: 0 })),
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

export const StrategySchema = Type.Union([Type.Literal('fast'), Type.Literal('balanced'), Type.Literal('cheap'), Type.Literal('sticky')]);

export const EffortSchema = Type.Union(['minimal', 'low', 'medium', 'high', 'xhigh'].map((e) => Type.Literal(e)));

export const ShedSchema = Type.Object(
  {
    /** What happens to a deep call when every target's window is hot. */
    policy: Type.Union([Type.Literal('downgrade'), Type.Literal('queue'), Type.Literal('reject')], { default: 'downgrade' }),
    /** `downgrade`: the model that takes the call instead (usually a cheap non-reasoning one). */
    fallback: Type.Optional(Id),
    /** `queue`: longest wait for a cool window before the call is rejected. */
    queue_timeout_ms: Type.Integer({ minimum: 1, default: 5_000 }),
  },
  { additionalProperties: false, default: {} },
);

/**
 * What a model accepts, so one OpenAI-style request can be reshaped for each model a call
 * may land on (primary, fallback, shed). See README, "Parameter normalisation".
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
    targets: Type.Array(TargetSchema, { minItems: 1 }),
  },
  { additionalProperties: false },
);

export const RoutingSchema = Type.Object(
  {
    strategy: Type.Union([StrategySchema], { default: 'balanced' }),
    /** Upstream attempts per client request, fallbacks included. */
    max_attempts: Type.Integer({ minimum: 1, maximum: 20, default: 4 }),
    /** Time budget for attempts before the first byte reaches the client. */
    deadline_ms: Type.Integer({ minimum: 100, default: 120_000 }),
    /** Full-jitter exponential backoff between retry rounds: random(0, min(cap, base * 2^round)). */
    backoff_base_ms: Type.Integer({ minimum: 0, default: 100 }),
    backoff_cap_ms: Type.Integer({ minimum: 0, default: 2_000 }),
    /** Longest `Retry-After` / `retry-after-ms` honoured. */
    retry_after_cap_ms: Type.Integer({ minimum: 0, default: 10_000 }),
    retry_budget: Type.Object(
      {
        /** Retries allowed as a share of requests over the window. */
        ratio: Type.Number({ minimum: 0, maximum: 10, default: 0.2 }),
        /** Retries always allowed per window, however few requests. */
        min_retries: Type.Integer({ minimum: 0, default: 3 }),
        window_ms: Type.Integer({ minimum: 1000, default: 10_000 }),
      },
      { additionalProperties: false, default: {} },
    ),
    cooldown: Type.Object(
      {
        /** Consecutive retryable failures that open the circuit. */
        failures: Type.Integer({ minimum: 1, default: 3 }),
        /** First cooldown; doubles on every failed probe, up to max_ms. */
        base_ms: Type.Integer({ minimum: 1, default: 5_000 }),
        max_ms: Type.Integer({ minimum: 1, default: 60_000 }),
        /** Cooldown after a 401/403 from the upstream (a bad provider key). */
        credential_ms: Type.Integer({ minimum: 1, default: 300_000 }),
      },
      { additionalProperties: false, default: {} },
    ),
    queue: Type.Object(
      {
        /** Requests that may wait for a slot on one upstream at its concurrency cap. */
        max: Type.Integer({ minimum: 0, default: 64 }),
        timeout_ms: Type.Integer({ minimum: 1, default: 5_000 }),
      },
      { additionalProperties: false, default: {} },
    ),
    /** Streams: time from sending to the first upstream event before failing over. */
    first_token_timeout_ms: Type.Integer({ minimum: 1, default: 60_000 }),
    /** How long a sticky session stays pinned to its target after its last request. */
    sticky_ttl_ms: Type.Integer({ minimum: 1, default: 3_600_000 }),
    /** Time constant of the latency estimate used by `fast`. */
    latency_decay_ms: Type.Integer({ minimum: 1, default: 10_000 }),
  },
  { additionalProperties: false, default: {} },
);

export const ClientKeySchema = Type.Object(
  {
    name: Id,
    /** Hex SHA-256 of the key (`switchyard hash-key <key>`); the plaintext is never stored. */
    key_sha256: Type.String({ pattern: '^[0-9a-f]{64}$' }),
    /**
     * Public model names this key may call: exact names or globs where `*` matches any run
     * of characters (`gpt-*`, `*-reasoner`); `*` allows all.
     */
    models: Type.Array(Type.String({ minLength: 1 }), { default: ['*'] }),
    /** Per-key limits, enforced across replicas through the shared store. */
    limits: Type.Optional(
      Type.Object(
        {
          /** Requests per minute. */
          rpm: Type.Optional(Type.Integer({ minimum: 1 })),
          /** Tokens (prompt estimate + max completion, settled to real usage) per minute. */
          tpm: Type.Optional(Type.Integer({ minimum: 1 })),
          /** Requests in flight at once, across replicas. */
          max_concurrency: Type.Optional(Type.Integer({ minimum: 1 })),
          /** Spend limit in USD per UTC day or calendar month (UTC). */
          budget_usd: Type.Optional(
            Type.Object(
              { amount: Type.Number({ exclusiveMinimum: 0 }), period: Type.Union([Type.Literal('day'), Type.Literal('month')]) },
              { additionalProperties: false },
            ),
          ),
        },
        { additionalProperties: false },
      ),
    ),
    /** Free-form labels (team, owner), shown by `/admin/keys`. */
    metadata: Type.Record(Type.String(), Type.String(), { default: {} }),
  },
  { additionalProperties: false },
);

export const ServerSchema = Type.Object(
  {
    /** Largest accepted request body; OpenAI's own limit is in this range. */
    body_limit_bytes: Type.Integer({ minimum: 1024, default: 32 * 1024 * 1024 }),
    /** Longest time a client may take to send its whole request (headers and body); 0 = none. */
    request_timeout_ms: Type.Integer({ minimum: 0, default: 60_000 }),
    /**
     * On SIGTERM / SIGINT: how long requests in flight (streams included) may take to finish
     * while new ones get 503 `shutting_down`; past it they are cut (a stream ends with a final
     * error event). Keep it under the orchestrator's grace period (Kubernetes: 30 s).
     */
    drain_ms: Type.Integer({ minimum: 0, maximum: 600_000, default: 25_000 }),
    /** pino level. */
    log_level: Type.Union(
      ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'].map((l) => Type.Literal(l)),
      { default: 'info' },
    ),
  },
  { additionalProperties: false, default: {} },
);

export const AdminSchema = Type.Object(
  {
    /** The admin API listens here, apart from the client port; keep it on loopback or a private network. */
    host: Type.String({ minLength: 1, default: '127.0.0.1' }),
    port: Type.Integer({ minimum: 0, maximum: 65535, default: 9901 }),
    /** Hex SHA-256 of the admin key (`switchyard hash-key`). Without it the admin API is not started. */
    key_sha256: Type.Optional(Type.String({ pattern: '^[0-9a-f]{64}$' })),
  },
  { additionalProperties: false, default: {} },
);

export const StoreSchema = Type.Object(
  {
    /** `redis://[:password@]host:port/db` or `rediss://` for TLS; empty = in-memory (one replica). `REDIS_URL` is used when unset. */
    redis_url: Type.Optional(Type.String()),
    /** Extra ioredis options (tls, sentinels, name, username, password, db …). */
    redis_options: Type.Record(Type.String(), Type.Unknown(), { default: {} }),
    /** Cluster mode: node URLs; all keys share one hash tag, so scripts stay atomic. */
    cluster_nodes: Type.Array(Type.String(), { default: [] }),
    key_prefix: Type.String({ minLength: 1, default: 'switchyard' }),
    /** Timeout of every Redis call; past it the call fails over to the local store. */
    command_timeout_ms: Type.Integer({ minimum: 10, maximum: 5_000, default: 250 }),
    /** Replicas sharing the limits: in degraded mode each enforces limit / replicas locally. */
    replicas: Type.Integer({ minimum: 1, default: 1 }),
    /** Longest time an in-flight slot survives without release (a replica that died mid-request). */
    lease_ms: Type.Integer({ minimum: 1_000, default: 600_000 }),
  },
  { additionalProperties: false, default: {} },
);

export const PassthroughSchema = Type.Object(
  {
    /**
     * The upstream that other `/v1/*` routes (embeddings, moderations, audio, files …) are
     * proxied to, with the client's key swapped for the upstream's. Absent: those routes 404.
     */
    upstream: Type.Optional(Id),
  },
  { additionalProperties: false, default: {} },
);

export const ConfigSchema = Type.Object(
  {
    passthrough: PassthroughSchema,
    server: ServerSchema,
    admin: AdminSchema,
    store: StoreSchema,
    routing: RoutingSchema,
    upstreams: Type.Array(UpstreamSchema, { minItems: 1 }),
    models: Type.Array(ModelSchema, { minItems: 1 }),
    keys: Type.Array(ClientKeySchema, { minItems: 1 }),
  },
  { additionalProperties: false },
);

export type RawConfig = Static<typeof ConfigSchema>;
export type UpstreamConfig = Static<typeof UpstreamSchema>;
export type ModelConfig = Static<typeof ModelSchema>;
export type PriceConfig = Static<typeof PriceSchema>;
export type ClientKeyConfig = Static<typeof ClientKeySchema>;
export type TimeoutsConfig = Static<typeof TimeoutsSchema>;
export type SimulatorConfig = Static<typeof SimulatorSchema>;
export type RoutingConfig = Static<typeof RoutingSchema>;
export type Strategy = Static<typeof StrategySchema>;
export type StoreConfig = Static<typeof StoreSchema>;
export type AdminConfig = Static<typeof AdminSchema>;
export type Effort = Static<typeof EffortSchema>;
export type ShedConfig = Static<typeof ShedSchema>;
export type CapabilitiesConfig = Static<typeof CapabilitiesSchema>;
export type PassthroughConfig = Static<typeof PassthroughSchema>;
