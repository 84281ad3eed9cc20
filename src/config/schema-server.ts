/** Config schema, the process-wide blocks: `server`, `admin`, `store` and `passthrough`. */
import { Type } from '@sinclair/typebox';
import { Id } from './schema-id.js';

export const ServerSchema = Type.Object(
  {
    /** Largest accepted request body; OpenAI's own limit is in this range. */
    body_limit_bytes: Type.Integer({ minimum: 1024, default: 32 * 1024 * 1024 }),
    /**
     * Bytes of large (≥ 1 MiB) request bodies processed at once; past it such a request gets
     * 503 server_overloaded before its body is read (server/http/body-guard.ts). 0 = no guard.
     */
    max_body_bytes_in_flight: Type.Integer({ minimum: 0, default: 128 * 1024 * 1024 }),
    /** Longest time a client may take to send its whole request (headers and body); 0 = none. */
    request_timeout_ms: Type.Integer({ minimum: 0, default: 60_000 }),
    /**
     * Longest time from a connection's opening (or a kept-alive request's first byte) to the
     * end of its request headers, whatever its key; past it the connection gets 408 and is
     * closed (Node's `headersTimeout`, checked every second). A real client sends its headers
     * (at most 16 KiB) in one write, so seconds are ample; Node's own 60 s lets a client
     * trickling headers (slowloris) hold a socket for up to 90 s.
     */
    headers_timeout_ms: Type.Integer({ minimum: 1_000, maximum: 120_000, default: 10_000 }),
    /**
     * An idle kept-alive connection (between two requests) is closed after this long. Keep it
     * above the idle timeout of any proxy in front (ingress-nginx and AWS ALB: 60 s), so the
     * proxy closes first and never sends a request on a connection being closed (a 502);
     * with clients connecting directly, 5000 (Node's default) frees sockets sooner. Clients
     * are told it (`Keep-Alive: timeout=`); Node closes the socket 1 s after that.
     */
    keep_alive_timeout_ms: Type.Integer({ minimum: 1_000, maximum: 600_000, default: 65_000 }),
    /**
     * Connections open at once, per gateway process (each of `server.workers` counts its own,
     * as each has its own open-file limit; keep it under `ulimit -n` less the upstream pools).
     * A connection past it gets a 503 `too_many_connections` and is closed. 0 = no limit.
     */
    max_connections: Type.Integer({ minimum: 0, default: 10_000 }),
    /**
     * Connections open at once from one client address, per process; past it as above. Off
     * (0) by default: behind an ingress, a load balancer or as a sidecar every client shares
     * one address and the proxy is the place to bound them; set it when clients connect directly.
     */
    max_connections_per_address: Type.Integer({ minimum: 0, default: 0 }),
    /**
     * On SIGTERM / SIGINT: how long requests in flight (streams included) may take to finish
     * while new ones get 503 `shutting_down`; past it they are cut (a stream ends with a final
     * error event). Keep it under the orchestrator's grace period (Kubernetes: 30 s).
     */
    drain_ms: Type.Integer({ minimum: 0, maximum: 600_000, default: 25_000 }),
    /**
     * Gateway processes serving the one port (node:cluster; src/server/cluster/primary.ts).
     * Above 1 needs Redis (`store.redis_url`, `REDIS_URL` or `store.cluster_nodes`): each
     * process is a replica of the shared store. Changing it takes a restart.
     */
    workers: Type.Integer({ minimum: 1, maximum: 256, default: 1 }),
    /**
     * The Responses API's WebSocket mode on `GET /v1/responses` (routes/responses-ws.ts),
     * which Codex uses with `supports_websockets = true`. Off: the upgrade is answered 426
     * and clients stay on HTTP. A `response.create` frame may be as large as
     * `body_limit_bytes`.
     */
    websocket: Type.Object(
      {
        enabled: Type.Boolean({ default: true }),
        /** A socket with no turn running or queued and no frame from the client for this long is closed (1000), ms. */
        idle_timeout_ms: Type.Integer({ minimum: 1_000, maximum: 3_600_000, default: 600_000 }),
      },
      { additionalProperties: false, default: {} },
    ),
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
    /**
     * Gateway instances sharing the limits (each `switchyard serve`, whatever its
     * `server.workers`): while Redis is away each process enforces limit / (replicas × workers).
     */
    replicas: Type.Integer({ minimum: 1, default: 1 }),
    /** Lease of an in-flight slot, renewed every third of it while its call runs: a replica that dies frees its places within this time. */
    lease_ms: Type.Integer({ minimum: 1_000, default: 15_000 }),
    /** How long an answered Responses call is kept for follow-ups (its owner pin and journal entry; pipeline/continuation.ts). */
    journal_ttl_ms: Type.Integer({ minimum: 1_000, default: 21_600_000 }),
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
