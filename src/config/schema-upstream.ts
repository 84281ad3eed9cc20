/**
 * Config schema, `upstreams[]`: one provider account, its timeouts, its simulator settings
 * and its capacity for deep calls. Units are in the field names (see `schema.ts`).
 */
import { Type } from '@sinclair/typebox';
import { Id } from './schema-id.js';

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

/**
 * Deprecated (before learned capacity): a window of deep calls started in the last
 * `seconds`. Still accepted; `threshold` is taken as the capacity's starting guess when
 * `capacity.start` is not set, and `seconds` is ignored (check-config warns).
 */
export const WindowSchema = Type.Optional(
  Type.Object(
    {
      seconds: Type.Optional(Type.Number({ exclusiveMinimum: 0, maximum: 600 })),
      threshold: Type.Optional(Type.Integer({ minimum: 1 })),
    },
    { additionalProperties: false },
  ),
);

/**
 * The account's capacity for deep calls in flight, learned from what the provider does
 * (429s, stalled first tokens; docs/burst-control.md). Every field is optional: the
 * gateway needs no provider limit typed in.
 */
export const CapacitySchema = Type.Object(
  {
    /** Starting guess of deep calls in flight; probed upward (doubling until the first throttle). */
    start: Type.Optional(Type.Integer({ minimum: 1, maximum: 100_000 })),
    /** Never learned below this. */
    min: Type.Integer({ minimum: 1, maximum: 100_000, default: 1 }),
    /** Never learned above this (default: `max_concurrency`). Set start = ceiling to fix the limit by hand. */
    ceiling: Type.Optional(Type.Integer({ minimum: 1, maximum: 100_000 })),
  },
  { additionalProperties: false, default: {} },
);

/** The starting guess when neither `capacity.start` nor the old `window.threshold` is set. */
export const DEFAULT_CAPACITY_START = 4;

export const UpstreamSchema = Type.Object(
  {
    id: Id,
    /** The provider kind: a key of `providers/registry.ts` (checked at load). */
    provider: Type.String({ minLength: 1, maxLength: 64 }),
    /** e.g. `https://api.openai.com/v1`; the kind appends its API path. Not used by `simulator`. */
    base_url: Type.Optional(Type.String({ pattern: '^https?://' })),
    /** Provider-kind options, validated by the kind's own schema (docs/api.md, "Providers and endpoints"). */
    options: Type.Record(Type.String(), Type.Unknown(), { default: {} }),
    /** Usually a `${ENV_VAR}` reference. An unset variable switches the upstream off. */
    api_key: Type.Optional(Type.String()),
    region: Type.String({ default: 'default' }),
    max_concurrency: Type.Integer({ minimum: 1, maximum: 100_000, default: 64 }),
    timeouts: TimeoutsSchema,
    /** Extra headers sent to this upstream (e.g. `OpenAI-Organization`). */
    headers: Type.Record(Type.String(), Type.String(), { default: {} }),
    simulator: SimulatorSchema,
    /** The learned capacity of this account for deep calls (see docs/burst-control.md). */
    capacity: CapacitySchema,
    window: WindowSchema,
  },
  { additionalProperties: false },
);
