/**
 * The metrics of routing and upstream capacity: each target's circuit state, the slot queues,
 * burst sheds, spent rate windows, deep calls in flight, the learned capacities and the
 * shared store's mode. The gauges among them are read at scrape time from `CapacitySources`,
 * which the app fills once the router and store exist (plugins/metrics.ts). In a file of its
 * own because registry.ts is at its size cap; registry.ts creates them on its registry, in
 * this order, between its queue-wait histogram and the key-limit metrics.
 */
import { Counter, Gauge, type Registry } from 'prom-client';

export interface CapacityMetrics {
  readonly targetState: Gauge<'target' | 'upstream' | 'state'>;
  readonly queueDepth: Gauge<'upstream'>;
  readonly sheds: Counter<'model' | 'policy'>;
  /** Answers whose rate-limit headers said the account's window is spent (the target cools until it refills). */
  readonly windowsSpent: Counter<'upstream'>;
  /** Deep calls in flight per upstream account, across replicas. */
  readonly deepInFlight: Gauge<'upstream'>;
  /** The learned capacity for deep calls per upstream account (shared by the replicas). */
  readonly capacityLimit: Gauge<'upstream'>;
  /** The learned capacity for calls of every kind per upstream account (shared by the replicas). */
  readonly callCapacityLimit: Gauge<'upstream'>;
  readonly storeMode: Gauge<'mode'>;
}

/** Where the capacity gauges read at scrape time; each stays unset (the gauge empty) until the app sets it. */
export interface CapacitySources {
  targets?: () => { target: string; upstream: string; state: 'healthy' | 'cooling' | 'probing' }[];
  queues?: () => { upstream: string; depth: number }[];
  capacities?: () => Promise<{ upstream: string; deep: number; limit: number; callLimit: number }[]>;
  storeMode?: () => string;
}

/** Creates the capacity metrics on `registers`, reading `sources` at scrape time. */
export function createCapacityMetrics(registers: Registry[], sources: CapacitySources): CapacityMetrics {
  // With server.workers the primary sums the workers' metrics (server/cluster/metrics.ts); a
  // gauge every worker reads from the shared store, or a 0/1 state, takes the max instead.
  const shared = { registers, aggregator: 'max' as const };
  return {
    targetState: new Gauge({
      name: 'switchyard_target_state',
      help: 'Circuit state per target: 1 for the current state (healthy, cooling, probing).',
      labelNames: ['target', 'upstream', 'state'],
      ...shared,
      collect() {
        if (!sources.targets) return;
        this.reset();
        for (const t of sources.targets()) {
          for (const state of ['healthy', 'cooling', 'probing'] as const) {
            this.set({ target: t.target, upstream: t.upstream, state }, t.state === state ? 1 : 0);
          }
        }
      },
    }),
    queueDepth: new Gauge({
      name: 'switchyard_queue_depth',
      help: 'Requests waiting for a concurrency slot, per upstream.',
      labelNames: ['upstream'],
      registers,
      collect() {
        if (!sources.queues) return;
        for (const q of sources.queues()) this.set({ upstream: q.upstream }, q.depth);
      },
    }),
    sheds: new Counter({
      name: 'switchyard_sheds_total',
      help: 'Deep-reasoning calls shed because every account was hot, by policy (downgrade, queue, reject).',
      labelNames: ['model', 'policy'],
      registers,
    }),
    windowsSpent: new Counter({
      name: 'switchyard_rate_window_spent_total',
      help: "Answers whose rate-limit headers said the account's request or token window is spent; the target cools until it refills.",
      labelNames: ['upstream'],
      registers,
    }),
    deepInFlight: new Gauge({
      name: 'switchyard_deep_in_flight',
      help: 'Deep-reasoning calls in flight per upstream account (across replicas).',
      labelNames: ['upstream'],
      ...shared,
      async collect() {
        if (!sources.capacities) return;
        for (const c of await sources.capacities()) this.set({ upstream: c.upstream }, c.deep);
      },
    }),
    capacityLimit: new Gauge({
      name: 'switchyard_capacity_limit',
      help: 'Learned capacity for deep calls in flight per upstream account (shared by the replicas; hot at deep_in_flight >= this).',
      labelNames: ['upstream'],
      ...shared,
      async collect() {
        if (!sources.capacities) return;
        for (const c of await sources.capacities()) this.set({ upstream: c.upstream }, c.limit);
      },
    }),
    callCapacityLimit: new Gauge({
      name: 'switchyard_call_capacity_limit',
      help: 'Learned capacity for calls of every kind in flight per upstream account (shared by the replicas; max_concurrency until the account throttles).',
      labelNames: ['upstream'],
      ...shared,
      async collect() {
        if (!sources.capacities) return;
        for (const c of await sources.capacities()) this.set({ upstream: c.upstream }, c.callLimit);
      },
    }),
    storeMode: new Gauge({
      name: 'switchyard_store_mode',
      help: 'Shared-state mode: 1 for the current one (memory, redis, degraded).',
      labelNames: ['mode'],
      ...shared,
      collect() {
        if (!sources.storeMode) return;
        const cur = sources.storeMode();
        for (const mode of ['memory', 'redis', 'degraded']) this.set({ mode }, cur === mode ? 1 : 0);
      },
    }),
  };
}
