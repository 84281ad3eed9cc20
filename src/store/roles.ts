/**
 * The store as each of its clients sees it: one interface per consumer, each with a memory
 * and a Redis implementation (MemoryStore, RedisStore and its neighbours) and served, with the
 * degraded mode between them, by StateStore (store/index.ts), which composes them:
 *
 * - RouterSlots: the router's in-flight slots, views, learned capacity, cooldowns and session
 *   pins (router/).
 * - KeyWindows (store/types.ts): a client key's slot and `rpm` / `tpm` windows (limits/key-take.ts).
 * - SpendStore: budget and daily spend counters, and once-claims (limits/budgets.ts, budget-alerts.ts).
 * - ResponseJournal (store/types.ts): relayed Responses conversations (pipeline/continuation.ts).
 */
import type { CapacityBounds, CapacityFeedback } from './capacity.js';
import type { Claim } from './claims.js';
import type { SpendAdd } from './spend.js';
import type { AdmitResult, Candidate, FirstCall, FirstResult, Lease, TargetRef, TargetView } from './types.js';

export type { KeyWindows, ResponseJournal } from './types.js';

/** What the router asks of the store (the rules of each call: store/types.ts SharedStore). */
export interface RouterSlots {
  /**
   * The processes that share the store's places: `store.replicas` × `server.workers` while on
   * Redis, else 1. Waiters are seen only by their own process: a wait is weighed as if each
   * process had as many (router/take.ts expectedPlaceWaitMs).
   */
  readonly peers: number;
  /** One view per target, read now. */
  view(targets: readonly TargetRef[]): Promise<TargetView[]>;
  /** The views last read from Redis when at most `maxAgeMs` old, else null (store/view-cache.ts). */
  cachedView(targets: readonly TargetRef[], maxAgeMs: number): TargetView[] | null;
  /** A request's first call: its gate, its session pin and its first admission (store/types.ts FirstCall); one op on Redis. Never rejects. */
  first(call: FirstCall): Promise<FirstResult>;
  /** Takes a slot on the first candidate that admits, and reads the views, in one step. */
  admit(candidates: readonly Candidate[], extra?: readonly TargetRef[]): Promise<AdmitResult>;
  /** Returns a slot, with its call's capacity feedback; `endedMs`: how long ago the call ended at the provider (a stalled call's cancel lingers). Idempotent. */
  release(lease: Lease, feedback?: CapacityFeedback, bounds?: CapacityBounds, endedMs?: number): Promise<void>;
  /** A probe's first event came on time (store/probe-gate.ts). */
  answered(lease: Lease): Promise<boolean>;
  /** An account's capacity feedback while its call still runs. */
  feedback(upstream: string, feedback: CapacityFeedback, bounds: CapacityBounds): Promise<void>;
  /** A target cools until `untilMs` (epoch ms), for every replica. */
  setCooldown(targetKey: string, untilMs: number): Promise<void>;
  getPin(session: string): Promise<string | undefined>;
  setPin(session: string, target: string, ttlMs: number): Promise<void>;
  /** The fleet's learned call timings, name -> ms (router/fleet-timings.ts). */
  readTimings(): Promise<Record<string, number>>;
  /** Writes this replica's learned timings. */
  writeTimings(timings: Readonly<Record<string, number>>): Promise<void>;
}

/** Spend counters (USD) and once-claims, shared across replicas and kept through Redis outages (store/spend.ts, store/claims.ts). */
export interface SpendStore {
  /** Reads counters, USD each (0 when absent), in one round trip. */
  getSpend(keys: readonly string[]): Promise<number[]>;
  /** Adds to counters in one round trip (each expires at its `expireAtMs`, epoch ms); returns each new total. */
  addSpend(adds: readonly SpendAdd[]): Promise<number[]>;
  /** The claim `name` until `untilMs` (epoch ms) if this caller is the one across replicas that gets it, else null. */
  claimOnce(name: string, untilMs: number): Promise<Claim | null>;
}
