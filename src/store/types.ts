/**
 * The state replicas share: per-upstream in-flight slots (so `max_concurrency` is global),
 * the deep calls in flight on each account and the account's learned capacity for them
 * (store/capacity.ts), target cooldowns, sticky-session pins and the journal of relayed
 * Responses conversations. One interface, two
 * implementations: in-memory (one replica) and Redis (several), where each multi-step
 * operation is one atomic Lua script. Slots are leases that lapse unless renewed, so a
 * replica that dies frees its places within the lease time.
 */
import type { CapacityBounds, CapacityFeedback } from './capacity.js';

/** What the router needs to know about one target before choosing. */
export interface TargetView {
  /** Requests in flight on the target's upstream account, across replicas. */
  readonly inFlight: number;
  /** Deep calls in flight on the target's upstream account, across replicas. */
  readonly deep: number;
  /** The account's learned capacity for deep calls (hot when `deep >= limit`). */
  readonly limit: number;
  /** The account's learned capacity for calls of every kind (at most `max_concurrency`; no call above it). */
  readonly callLimit: number;
  /** Epoch ms until which some replica put the target in cooldown (0 = none). */
  readonly coolingUntil: number;
}

export interface TargetRef {
  /** Target key (`upstream/model`), for the cooldown. */
  readonly key: string;
  readonly upstream: string;
  /** The account's capacity bounds (for an account nothing was learned about yet). */
  readonly capacity: CapacityBounds;
  /** The bounds of its learned capacity for calls of every kind (the ceiling is `max_concurrency`). */
  readonly calls: CapacityBounds;
}

export interface SlotRequest {
  readonly upstream: string;
  /** `max_concurrency` of the upstream. */
  readonly limit: number;
  /** Whether this call is deep (counts against the account's learned capacity). */
  readonly deep: boolean;
  /** The account's capacity bounds. */
  readonly capacity: CapacityBounds;
  /** The bounds of the account's learned capacity for calls of every kind. */
  readonly calls: CapacityBounds;
}

/** A held slot; give it back with `release`. */
export interface Lease {
  readonly id: string;
  readonly upstream: string;
  readonly deep: boolean;
  /** Which store issued it (a lease taken while degraded is returned to the local store). */
  readonly from: 'memory' | 'redis';
  /** Calls of every kind in flight on the account when this one took its place, itself included. */
  readonly inFlight: number;
  /** Deep calls in flight on the account when this one took its place, itself included (0 for other calls). */
  readonly deepInFlight: number;
  /** This deep call is its account's probe of a raised limit (store/probe-gate.ts): report its on-time success with `answered`. */
  readonly probe: boolean;
}

export type SlotResult = { readonly ok: true; readonly lease: Lease } | { readonly ok: false; readonly reason: 'full' | 'hot' };

/** One target an admission may take a slot on (`admit`): its slot request and its cooldown. */
export interface Candidate extends SlotRequest {
  /** Target key (`upstream/model`), for its cooldown. */
  readonly key: string;
  /**
   * The router chose it knowing it cools (the cooling target whose cooldown ends first, when
   * every target cools): its cooldown does not refuse it. Otherwise a target some replica put
   * in cooldown since the router's view is refused `cooling`.
   */
  readonly coolingOk: boolean;
  /**
   * Its weight when the admission spreads (router `balanced`): the candidates with one are
   * tried least loaded first among themselves, on the calls every replica holds when the
   * admission runs (store/spread.ts); absent or 0: tried in its place.
   */
  readonly spread?: number;
  /**
   * Which deep place it may take (store/probe-gate.ts): `trusted`, only one within the
   * account's trusted count (a request that already waited in line is never the probe: a
   * stalled probe costs its caller the stall threshold on top of the wait); `probe`, only the
   * place of the account's probe (a new request on an account this replica's waiters are in
   * line for: the trusted places are theirs). Absent: either. A place it may not take is
   * refused `hot`.
   */
  readonly only?: 'trusted' | 'probe';
}

/** Why a candidate took no slot: `full` and `hot` as for `acquire`, or `cooling`. */
export type Refusal = 'full' | 'hot' | 'cooling';

/** What one admission (`admit`) did. */
export interface AdmitResult {
  /** The slot taken and the index of its candidate, or null when every candidate refused. */
  readonly taken: { readonly index: number; readonly lease: Lease } | null;
  /** Per candidate, in order: why it refused, or null (it took the slot, or came after the one that did). */
  readonly refused: readonly (Refusal | null)[];
  /** The view of every candidate, then of every `extra` target, as the admission left them (the slot taken included). */
  readonly views: readonly TargetView[];
}

/** One fixed window a key admission takes points from (a key's `rpm` or `tpm`, limits/rate.ts). */
export interface KeyWindow {
  /**
   * The window's id (`<kind>:<key name>:<key name>`, limits/rate.ts). On Redis its counter is
   * `{prefix}:rl:<id>` (store/redis-windows.ts), the key rate-limiter-flexible's
   * RateLimiterRedis gave it, so replicas of every version count in one window.
   */
  readonly key: string;
  /** Points the window holds. */
  readonly limit: number;
  /** Points this request takes (1 for `rpm`, the token reservation for `tpm`). */
  readonly points: number;
  /** Window length, s. */
  readonly windowS: number;
}

/** A window named for a settlement or a read: its id and its length (s). */
export type WindowRef = Pick<KeyWindow, 'key' | 'windowS'>;

/** A key's admission (`KeyWindows.admitKey`): its concurrency slot (`limit` 0: none) and its windows, all or nothing. */
export interface KeyAdmission {
  /** The slot's pseudo-upstream (`key:<name>`) and the key's `max_concurrency` (0: the key takes no slot). */
  readonly slot: { readonly upstream: string; readonly limit: number };
  readonly windows: readonly KeyWindow[];
}

/** What a window holds: points counted and ms until it ends (its whole length when none runs). */
export interface WindowCount {
  readonly consumedPoints: number;
  readonly msBeforeNext: number;
}

/** What a key admission did: nothing is taken unless `refused` is null. */
export interface KeyAdmitted {
  /** null: every part admitted; 'concurrency': the slot was full; a number: the index of the window that was full. */
  readonly refused: null | 'concurrency' | number;
  /** The slot taken (null when refused or when the key takes none). */
  readonly lease: Lease | null;
  /** Per window: points counted (this request's included when admitted) and ms until it resets. */
  readonly windows: readonly WindowCount[];
  /** Which store counted it (settle its windows with this: `KeyWindows.settleWindow`). */
  readonly from: Lease['from'];
}

/**
 * A client key's limits in the store (limits/key-take.ts): its concurrency slot and its fixed
 * `rpm` / `tpm` windows. One contract (test/redis/store-contract-key-windows.test.ts), three
 * implementations: MemoryStore, RedisKeyWindows (store/redis-windows.ts) and StateStore's
 * `keyWindows` (store/key-windows.ts: Redis while it answers, else the local store).
 *
 * A window starts at the first point counted in it and ends `windowS` later; a take is
 * counted only when it fits (a refusal counts nothing); a settlement starts a window when
 * none runs and never takes one below 0.
 */
export interface KeyWindows {
  /** Takes the slot and every window's points, all or nothing. @throws (RedisKeyWindows only) when Redis does not answer. */
  admitKey(req: KeyAdmission): Promise<KeyAdmitted>;
  /** Returns a key's slot (its lease from `admitKey`). Idempotent. */
  release(lease: Lease): Promise<void>;
  /**
   * Adds `points` to window `w` (negative: gives back), after a take that `from` counted (a
   * single store ignores `from`). @throws (RedisKeyWindows only) when Redis is not the store.
   */
  settleWindow(from: Lease['from'], w: WindowRef, points: number): Promise<void>;
  /** Points counted in window `w` now (0 when none runs). */
  readWindow(w: WindowRef): Promise<number>;
}

/**
 * The journal of relayed Responses conversations (pipeline/continuation.ts): each answered
 * response's entry and its owner's pin (`resp:<id>`, kept among the session pins), both
 * expiring. StateStore serves it (Redis, else this replica's memory); the pipeline and the
 * `/v1/responses/{id}` routes get it as a dependency of their own (pipeline/call.ts PipelineDeps).
 */
export interface ResponseJournal {
  getPin(session: string): Promise<string | undefined>;
  setPin(session: string, target: string, ttlMs: number): Promise<void>;
  /** A journal entry (the JSON text of one relayed response and its conversation), or undefined. */
  getJournal(id: string): Promise<string | undefined>;
  /** Keeps a journal entry for `ttlMs`. */
  putJournal(id: string, value: string, ttlMs: number): Promise<void>;
}

export interface SharedStore extends ResponseJournal {
  readonly kind: 'memory' | 'redis';
  /** One view per target, in order, read in one round trip. */
  view(targets: readonly TargetRef[]): Promise<TargetView[]>;
  /**
   * Atomically takes a slot: a deep call is refused `hot` when the account's deep calls in
   * flight reached its learned limit (checked first: a hot account sheds rather than
   * queues) or when it would go above the account's trusted count while another call probes
   * it (store/probe-gate.ts), any call `full` at `max_concurrency`; at the account's learned
   * limit for calls of every kind, a deep call is refused `hot` and another `full`.
   */
  acquire(req: SlotRequest): Promise<SlotResult>;
  /**
   * Tries the candidates in order and takes a slot on the first that admits it (by the rules
   * of `acquire`, plus `cooling`: see Candidate.coolingOk), all in one atomic step (one round
   * trip on Redis); returns every candidate's view after it, and the views of `extra` (targets
   * not to try, read in the same step so the caller's picture of them stays fresh).
   */
  admit(candidates: readonly Candidate[], extra?: readonly TargetRef[]): Promise<AdmitResult>;
  /**
   * A probe was served on time: its account trusts one more place (store/probe-gate.ts).
   * @returns whether the probe was lucky (another call freed a place as it went): then it
   *   trusts nothing, and its success proves one call fewer than it was counted with.
   */
  answered(lease: Lease): Promise<boolean>;
  /** Keeps the given leases alive for another lease time (called while their calls run). */
  renew(leases: readonly Lease[]): Promise<void>;
  /**
   * Returns a slot. Idempotent. With `feedback`, the call's outcome updates its account's
   * learned capacity in the same round trip (`bounds`: a deep lease's capacity bounds, updating
   * the capacity for deep calls; another lease's call bounds, updating the capacity for calls
   * of every kind), read against the larger of `feedback.inFlight` and the calls of its kind
   * holding places as it arrives (a refusal answered at once: calls that took their places
   * after it may have reached the provider before it). `endedMs`: how long ago the call
   * ended at the provider, ms (0: now; a stalled call's cancel lingers), for the probe gate's
   * luck (store/probe-gate.ts).
   */
  release(lease: Lease, feedback?: CapacityFeedback, bounds?: CapacityBounds, endedMs?: number): Promise<void>;
  /**
   * Updates an account's learned capacity now, read against `feedback.inFlight` alone (a
   * stall seen while the call still runs: the calls that took places since say nothing of
   * what it found).
   */
  feedback(upstream: string, feedback: CapacityFeedback, bounds: CapacityBounds): Promise<void>;
  /** Records that a target cools until `untilMs` (epoch ms); replicas see it in `view`. */
  setCooldown(targetKey: string, untilMs: number): Promise<void>;
  /** The fleet's learned call timings (router/fleet-timings.ts): name -> ms, as any replica last wrote them. */
  readTimings(): Promise<Record<string, number>>;
  /** Writes this replica's learned timings (name -> ms); Redis keeps them a day after the last write. */
  writeTimings(timings: Readonly<Record<string, number>>): Promise<void>;
  close(): Promise<void>;
}

/** A budget line the first call reads (limits/budgets.ts): its counter, its amount (USD), and the account it bounds. */
export interface BudgetRead {
  readonly counter: string;
  readonly amountUsd: number;
  /** The upstream account whose budget it is (a spent one is passed over), or null: a spent line refuses the request. */
  readonly upstream: string | null;
}

/** What a request's limits ask of the first call: its budgets read (checked first), then its key's admission. */
export interface FirstGate {
  readonly budgets: readonly BudgetRead[];
  /** The key's slot and windows (null: the key takes none). */
  readonly key: KeyAdmission | null;
}

/** What the first call found for the gate: each budget line's spend (USD), and the key's admission (null: not made). */
export interface GateAnswer {
  readonly spent: readonly number[];
  readonly key: KeyAdmitted | null;
}

/**
 * A request's first store call (RouterSlots.first): its gate, the session pin it reads, and
 * the admission of its first attempt. On Redis all in one atomic op (store/redis-first.ts):
 * a spent budget line that refuses, or a refused key admission, ends it there (nothing taken);
 * else the pin is read, the candidate on the pinned target goes first (`affinity`: it alone is
 * tried, and none when the pin names one of `extra`), candidates on spent accounts are not tried.
 */
export interface FirstCall {
  readonly gate: FirstGate | null;
  readonly pin: { readonly session: string; readonly mode: 'sticky' | 'affinity' } | null;
  readonly candidates: readonly Candidate[];
  readonly extra: readonly TargetRef[];
}

/** What the first call did. */
export interface FirstResult {
  readonly gate: GateAnswer;
  /** The session's pin (undefined: none, or not read). */
  readonly pin: string | undefined;
  /** The admission, candidates and views in the call's order; null when it was not made (the gate refused, or not on Redis). */
  readonly admit: AdmitResult | null;
  /** Nothing taken for a reason the route must decide on again with what it now knows (the pin, spent accounts). */
  readonly redo: boolean;
}
