/**
 * What `buildApp` (app.ts) takes and gives: its options, the running gateway's handle and a
 * reload's summary. Types only, here in server/ so the admin app and the console, which
 * work on a built gateway, need no import of app.ts above them.
 */
import type { Ledger } from '../ledger/index.js';
import type { FastifyInstance } from 'fastify';
import type { DestinationStream, Logger } from 'pino';
import type { KeyLimits } from '../limits/index.js';
import type { Metrics } from '../metrics/registry.js';
import type { StateStore } from '../store/index.js';
import type { Drain } from './lifecycle/drain.js';
import type { Generation } from './reload/live.js';

/** Options of `buildApp`. */
export interface BuildOptions {
  /** Where log lines go (tests capture them); defaults to async stdout. */
  readonly logStream?: DestinationStream;
  /** A ready logger; overrides `logStream`. */
  readonly logger?: Logger;
  /**
   * Environment for `${VAR}` references when the config is reloaded, for `DATABASE_URL` and
   * for the `OTEL_*` tracing variables (defaults to `process.env`).
   */
  readonly env?: NodeJS.ProcessEnv;
  /** Set when this process is one of `server.workers` (server/cluster/worker.ts). */
  readonly worker?: WorkerRole;
}

/** What a worker process of `server.workers` changes in the gateway it builds. */
export interface WorkerRole {
  /** This worker's place, 1…`workers`; kept by its replacement (its ledger spool file). */
  readonly slot: number;
  /** Processes sharing the port: the store's degraded share is limit / (`store.replicas` × this). */
  readonly workers: number;
  /** The body of `GET /metrics`: the metrics of every worker, summed by the primary. */
  metricsText(): Promise<string>;
}

/** What a reload changed (returned by `reload`, logged, and sent by `POST /admin/reload`). */
export interface ReloadSummary {
  readonly status: 'reloaded';
  readonly config: string;
  readonly models: readonly string[];
  readonly keys: number;
  readonly upstreams: {
    readonly added: readonly string[];
    readonly changed: readonly string[];
    readonly removed: readonly string[];
    readonly unchanged: readonly string[];
  };
  /** Config blocks that changed but only take effect on restart (`server`, `store`, `admin`). */
  readonly restart_required: readonly string[];
  readonly warnings: readonly string[];
}

/** A built gateway: the client app, its stateful parts, and reload. */
export interface Gateway {
  readonly app: FastifyInstance;
  readonly metrics: Metrics;
  readonly logger: Logger;
  readonly store: StateStore;
  /** Per-key limits and budgets. */
  readonly limits: KeyLimits;
  /** The usage ledger (PostgreSQL), null when none is configured. */
  readonly ledger: Ledger | null;
  /** Graceful shutdown: `drain.shutdown(server.drain_ms)` drains and closes the app. */
  readonly drain: Drain;
  /** The config, keys, router and providers new requests use. */
  current(): Generation;
  /**
   * Re-reads and validates the config file (default: the current config's path) and swaps
   * it in atomically for new requests; requests in flight finish on what they started with.
   * Upstreams whose entry is unchanged keep their provider (and its connections).
   * @throws ConfigError when the file is unreadable or invalid; the running config stays.
   */
  reload(path?: string): ReloadSummary;
}

/** The options of the admin app's plugins (server/admin/, server/console/): the gateway they serve. */
export type AdminPluginOptions = { readonly gw: Gateway };
