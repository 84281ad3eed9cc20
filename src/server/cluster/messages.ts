/**
 * The messages between the primary and its workers (`server.workers`) over node:cluster's
 * IPC channel. Each carries a `switchyard` field naming it, so other users of the channel
 * (node's own cluster messages) pass by.
 */

/** Primary → worker. */
export type ToWorker =
  /** Re-read the config file (the primary got SIGHUP, or another worker's admin API reloaded). */
  | { readonly switchyard: 'reload' }
  /** Drain and exit 0, as on SIGTERM (`signal` is what the primary got, for the log line). */
  | { readonly switchyard: 'shutdown'; readonly signal: string }
  /** A second shutdown signal: exit 1 at once. */
  | { readonly switchyard: 'force' }
  /** Send this worker's metrics (its registry as JSON) for scrape `id`. */
  | { readonly switchyard: 'collect'; readonly id: number }
  /** The answer to the worker's `metrics` request `id`: the group's exposition text, or why not. */
  | { readonly switchyard: 'metrics'; readonly id: number; readonly text?: string; readonly error?: string };

/** Worker → primary. */
export type ToPrimary =
  /** Listening (and the admin API too, when configured): the worker takes traffic. */
  | { readonly switchyard: 'ready' }
  /** This worker's admin API reloaded the config: reload the other workers too. */
  | { readonly switchyard: 'reload-others' }
  /** This worker's metrics for scrape `id` (prom-client `getMetricsAsJSON()`). */
  | { readonly switchyard: 'collected'; readonly id: number; readonly metrics: readonly object[] }
  /** A scrape landed on this worker: the primary sums every worker's metrics and answers `id`. */
  | { readonly switchyard: 'metrics'; readonly id: number };

/** Environment the primary forks each worker with. */
export const WORKER_SLOT_ENV = 'SWITCHYARD_WORKER_SLOT';
export const WORKER_COUNT_ENV = 'SWITCHYARD_WORKER_COUNT';

/** `m` as one of our messages, or null for anything else on the channel. */
export function ours<T extends { switchyard: string }>(m: unknown): T | null {
  return typeof m === 'object' && m !== null && typeof (m as { switchyard?: unknown }).switchyard === 'string' ? (m as T) : null;
}
