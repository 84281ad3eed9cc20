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
  },
  { additionalProperties: false, default: {} },
);

export const UpstreamSchema = Type.Object(
  {
    id: Id,
    provider: Type.Union([Type.Literal('openai-compatible'), Type.Literal('simulator')]),
    /** e.g. `https://api.openai.com/v1`; `/chat/completions` is appended. Not used by `simulator`. */
    base_url: Type.Optional(Type.String({ pattern: '^https?://' })),
    /** Usually a `${ENV_VAR}` reference. An unset variable switches the upstream off. */
    api_key: Type.Optional(Type.String()),
    region: Type.String({ default: 'default' }),
    max_concurrency: Type.Integer({ minimum: 1, maximum: 100_000, default: 64 }),
    timeouts: TimeoutsSchema,
    /** Extra headers sent to this upstream (e.g. `OpenAI-Organization`). */
    headers: Type.Record(Type.String(), Type.String(), { default: {} }),
    simulator: SimulatorSchema,
  },
  { additionalProperties: false },
);

export const PriceSchema = Type.Object(
  {
    /** USD per 1M uncached input tokens. */
    input: Type.Number({ minimum: 0 }),
    /** USD per 1M cached input tokens; defaults to `input`. */
    cached_input: Type.Optional(Type.Number({ minimum: 0 })),
    /** USD per 1M output tokens (reasoning tokens are billed as output). */
    output: Type.Number({ minimum: 0 }),
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

export const ModelSchema = Type.Object(
  {
    name: Id,
    reasoning: Type.Boolean({ default: false }),
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
    /** Public model names this key may call; `*` allows all. */
    models: Type.Array(Type.String({ minLength: 1 }), { default: ['*'] }),
  },
  { additionalProperties: false },
);

export const ServerSchema = Type.Object(
  {
    /** Largest accepted request body; OpenAI's own limit is in this range. */
    body_limit_bytes: Type.Integer({ minimum: 1024, default: 32 * 1024 * 1024 }),
    /** pino level. */
    log_level: Type.Union(
      ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'].map((l) => Type.Literal(l)),
      { default: 'info' },
    ),
  },
  { additionalProperties: false, default: {} },
);

export const ConfigSchema = Type.Object(
  {
    server: ServerSchema,
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
