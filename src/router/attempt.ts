/**
 * One attempt of a routed request (which target, for which model, holding which slot) and
 * the result the pipeline reports back for it.
 */
import type { Model, Target } from '../config/types.js';
import type { Classified } from '../errors/classify.js';
import type { GatewayError } from '../errors/codes.js';
import type { CapacityFeedback } from '../store/capacity.js';
import type { Candidate, Lease, TargetRef } from '../store/types.js';
import type { SlotQueue } from './concurrency.js';
import type { RouterSlots } from '../store/roles.js';
import type { DeepTimes } from './deep.js';
import type { HoldTimes } from './latency.js';

export interface Attempt {
  readonly target: Target;
  /** The public model this attempt serves (the primary, a fallback, or a shed fallback). */
  readonly model: Model;
  /** 1-based attempt number within the request. */
  readonly number: number;
  readonly startedAt: number;
  /** Time spent queued for a slot, ms. */
  readonly queuedMs: number;
  /** Whether this attempt counts against its account's learned capacity for deep calls. */
  readonly deep: boolean;
  /** Deep calls in flight on the account when this one took its place, itself included. */
  readonly deepInFlight: number;
  /** The slot it holds (a probe's lease is reported to the store when it answers on time). */
  readonly lease: Lease;
  /** Set on the first attempt of a fallback model: the primary model's name. */
  readonly fallbackFrom?: string;
  /** The effort the shed ladder lowered this call to (sent instead of the client's); absent when not lowered. */
  readonly effort?: string;
  /**
   * What the attempt says about its account's capacity, sent with the release: `ok` once
   * served, `throttled` when refused with a rate limit or stalled.
   */
  signal: CapacityFeedback['signal'] | null;
  /** Its first event is late past the account's stall threshold (router/feedback.ts). */
  stalled: boolean;
  /**
   * A probe's report of its on-time success (router/feedback.ts `answered`): true when the
   * probe was lucky (store/probe-gate.ts), and its release then counts one deep call fewer.
   */
  answering?: Promise<boolean>;
  /**
   * Returns the slot (with the capacity signal, if any), after `lingerMs` when given; safe to
   * call more than once. Resolves once the slot is back and the upstream's queue woken (at
   * once when lingering or already released); never needs awaiting.
   */
  release(lingerMs?: number): Promise<void>;
  /**
   * Pins `session` to this attempt's target for `ttlMs`, written with the slot's release (on
   * Redis one script call with it: store/batch.ts), or at once when the slot is already back.
   */
  pinOnRelease(session: string, ttlMs: number): void;
  /** Forgets a pin `pinOnRelease` asked for (the answer broke after its first byte). */
  dropPin(): void;
}

export type AttemptResult =
  /** `firstEventMs`: time to the first event of a stream (null for a JSON answer). */
  | { readonly ok: true; readonly latencyMs: number; readonly firstEventMs?: number | null }
  | {
      readonly ok: false;
      readonly classified: Classified;
      readonly error: GatewayError;
      readonly retryAfterMs?: number;
      /** The upstream named a wait longer than routing.retry_after_cap_ms: no later round comes back to it. */
      readonly beyondCap?: boolean;
      readonly latencyMs: number;
      /** The upstream's own message, scrubbed of key material, when `error` does not carry it (credential / permission). */
      readonly reason?: string;
      /** An account out of quota comes back then, epoch ms, as its provider said (errors/quota-reset.ts). */
      readonly resetAt?: number;
    }
  | { readonly ok: 'aborted' };

export type Next = { readonly attempt: Attempt } | { readonly stop: GatewayError };

/** A slot taken for a target: at once, or after `queuedMs` in the queue. */
export interface Taken {
  readonly target: Target;
  readonly lease: Lease;
  readonly queuedMs: number;
}

/** Builds the attempt whose `release()` returns the slot once (with its capacity signal) and wakes the upstream's queue. */
export function makeAttempt(
  taken: Taken,
  fields: { model: Model; number: number; deep: boolean; fallbackFrom?: string; effort?: string },
  state: { store: RouterSlots; queue: SlotQueue; deepTimes?: DeepTimes; holds?: HoldTimes },
): Attempt {
  const { target, lease, queuedMs } = taken;
  let released = false;
  let pin: { session: string; ttlMs: number } | null = null;
  const attempt: Attempt = {
    target,
    model: fields.model,
    number: fields.number,
    startedAt: Date.now(),
    queuedMs,
    deep: fields.deep,
    deepInFlight: lease.deepInFlight,
    lease,
    ...(fields.fallbackFrom !== undefined ? { fallbackFrom: fields.fallbackFrom } : {}),
    ...(fields.effort !== undefined ? { effort: fields.effort } : {}),
    signal: null,
    stalled: false,
    release: (lingerMs = 0) => {
      if (released) return Promise.resolve();
      released = true;
      // A deep call's outcome feeds its account's capacity for deep calls, another's the capacity for every call.
      const signal = attempt.signal;
      const inFlight = attempt.deep ? lease.deepInFlight : lease.inFlight;
      if (attempt.signal === 'ok') {
        const held = Date.now() - attempt.startedAt;
        if (attempt.deep) state.deepTimes?.observe(attempt.model.name, held);
        state.holds?.observe(target.upstream.id, held);
      }
      const bounds = attempt.deep ? target.upstream.bounds : target.upstream.callBounds;
      const send = (lucky: boolean): Promise<void> => {
        if (pin) void state.store.setPin(pin.session, target.key, pin.ttlMs);
        const feedback = signal ? { signal, inFlight: lucky ? inFlight - 1 : inFlight } : undefined;
        return state.store.release(lease, feedback, bounds, lingerMs).then(() => state.queue.notify(target.upstream.id));
      };
      // A probe's release waits for its report (one store call, made just before): a lucky one proves one call fewer.
      const give = (): Promise<void> => (attempt.answering ? attempt.answering.then(send) : send(false));
      if (lingerMs === 0) return give();
      setTimeout(() => void give(), lingerMs);
      return Promise.resolve();
    },
    pinOnRelease: (session, ttlMs) => {
      if (released) void state.store.setPin(session, target.key, ttlMs);
      else pin = { session, ttlMs };
    },
    dropPin: () => {
      pin = null;
    },
  };
  return attempt;
}

/**
 * The store's admission candidate for `t` (store/types.ts Candidate): its upstream's
 * concurrency cap and learned capacities (for deep calls, for every call); `coolingOk`: its
 * cooldown does not refuse it; `spread`: its weight when the admission spreads; `only`: the
 * deep places it may take. One literal of one shape, absent options undefined (every reader
 * takes them as absent): building it from a spread object cost a clone per candidate.
 */
export function candidate(t: Target, deep: boolean, coolingOk: boolean, spread?: number, only?: Candidate['only']): Candidate {
  const u = t.upstream;
  return { upstream: u.id, limit: u.max_concurrency, deep, capacity: u.bounds, calls: u.callBounds, key: t.key, coolingOk, spread, only };
}

/** A waiter's candidate for `t`: a request that already waited is never a deep probe (store/types.ts Candidate `only`). */
export function waiterCandidate(t: Target, deep: boolean): Candidate {
  return candidate(t, deep, true, undefined, deep ? 'trusted' : undefined);
}

/** The store's view reference of `t` (router/run.ts, the admin API). */
export function targetRef(t: Target): TargetRef {
  return { key: t.key, upstream: t.upstream.id, capacity: t.upstream.bounds, calls: t.upstream.callBounds };
}

/**
 * Whether a failed attempt is its account throttling a call it could not take: for a deep
 * call a rate limit or a stall, from a call that found other calls (deep or not) in flight there; for
 * another a rate limit, from a call that found other calls in flight (a concurrency limit
 * cannot refuse the first call; a 429 to a lone call is a rate or quota window, which the
 * health board handles with the upstream's Retry-After).
 */
export function isThrottle(attempt: Attempt, c: Classified): boolean {
  // A deep call refused while only plain calls ran there was throttled all the same.
  if (attempt.deep) return (attempt.deepInFlight > 1 || attempt.lease.inFlight > 1) && (c.class === 'rate_limited' || c.class === 'stall');
  return attempt.lease.inFlight > 1 && c.class === 'rate_limited';
}
