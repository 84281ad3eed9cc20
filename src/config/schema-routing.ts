/** Config schema, `routing`: attempts, deadlines, backoff, retry budget, cooldowns and queues. */
import { Type } from '@sinclair/typebox';
import { StrategySchema } from './schema-model.js';

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
    /**
     * Once a stream reached the client, a comment line (`: keep-alive`) is sent after this long
     * without an event (long reasoning), below the 60 s idle timeout common to proxies and load
     * balancers (nginx proxy_read_timeout, AWS ALB); 0 turns it off.
     */
    sse_keepalive_ms: Type.Integer({ minimum: 0, default: 15_000 }),
    /**
     * Largest upstream SSE event taken (one event's bytes); a larger one ends the attempt: 502
     * `upstream_bad_response` before the first byte, the client API's error event after it.
     * Bounds the memory one upstream can take (sse/parse.ts).
     */
    max_event_bytes: Type.Integer({ minimum: 65_536, maximum: 512 * 1024 * 1024, default: 32 * 1024 * 1024 }),
    /** Largest non-streamed upstream answer taken; a larger one is 502 `upstream_bad_response`. */
    max_answer_bytes: Type.Integer({ minimum: 65_536, maximum: 512 * 1024 * 1024, default: 64 * 1024 * 1024 }),
    /**
     * Cache affinity for session traffic under every strategy but `sticky` (router/affinity.ts,
     * docs/routing.md): a session's turns stay on the account that holds its prompt cache while
     * it has room; when it is full, a turn waits for it up to `max_wait_ms` when the wait it can
     * expect is within that, else moves; pins last `ttl_ms` after a session's last turn (the
     * providers' default cache lifetime: 5 minutes, refreshed on use).
     */
    cache_affinity: Type.Object(
      {
        enabled: Type.Boolean({ default: true }),
        ttl_ms: Type.Integer({ minimum: 1_000, default: 300_000 }),
        max_wait_ms: Type.Integer({ minimum: 0, maximum: 60_000, default: 2_000 }),
      },
      { additionalProperties: false, default: {} },
    ),
    /** How long a sticky session stays pinned to its target after its last request. */
    sticky_ttl_ms: Type.Integer({ minimum: 1, default: 3_600_000 }),
    /** Time constant of the latency estimate used by `fast`. */
    latency_decay_ms: Type.Integer({ minimum: 1, default: 10_000 }),
  },
  { additionalProperties: false, default: {} },
);
