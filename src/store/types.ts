/**
 * The state replicas share: per-upstream in-flight slots (so `max_concurrency` is global),
 * the reasoning-burst window, target cooldowns and sticky-session pins. One interface,
 * two implementations: in-memory (one replica) and Redis (several), where each multi-step
 * operation is one atomic Lua script.
 */

/** What the router needs to know about one target before choosing. */
export interface TargetView {
  /** Requests in flight on the target's upstream account, across replicas. */
  readonly inFlight: number;
  /** Deep calls in flight that started within the upstream's window. */
  readonly window: number;
  /** Epoch ms until which some replica put the target in cooldown (0 = none). */
  readonly coolingUntil: number;
}

export interface TargetRef {
  /** Target key (`upstream/model`), for the cooldown. */
  readonly key: string;
  readonly upstream: string;
  /** The upstream's window length, ms. */
  readonly windowMs: number;
}

export interface SlotRequest {
  readonly upstream: string;
  /** `max_concurrency` of the upstream. */
  readonly limit: number;
  /** Whether this call is deep (enters the window). */
  readonly deep: boolean;
  readonly windowMs: number;
  /** Window occupancy at which the upstream is hot. */
  readonly threshold: number;
}

/** A held slot; give it back with `release`. */
export interface Lease {
  readonly id: string;
  readonly upstream: string;
  readonly deep: boolean;
  /** Which store issued it (a lease taken while degraded is returned to the local store). */
  readonly from: 'memory' | 'redis';
}

export type SlotResult = { readonly ok: true; readonly lease: Lease } | { readonly ok: false; readonly reason: 'full' | 'hot' };

export interface SharedStore {
  readonly kind: 'memory' | 'redis';
  /** One view per target, in order, read in one round trip. */
  view(targets: readonly TargetRef[]): Promise<TargetView[]>;
  /** Atomically checks the upstream's concurrency limit (and window, for deep calls) and takes a slot. */
  acquire(req: SlotRequest): Promise<SlotResult>;
  /** Returns a slot (and its window entry). Idempotent. */
  release(lease: Lease): Promise<void>;
  /** Records that a target cools until `untilMs` (epoch ms); replicas see it in `view`. */
  setCooldown(targetKey: string, untilMs: number): Promise<void>;
  getPin(session: string): Promise<string | undefined>;
  setPin(session: string, target: string, ttlMs: number): Promise<void>;
  close(): Promise<void>;
}
