/**
 * One attempt of a routed request (which target, for which model, holding which slot) and
 * the result the pipeline reports back for it.
 */
import type { Model, Target } from '../config/types.js';
import type { Classified } from '../errors/classify.js';
import type { GatewayError } from '../errors/codes.js';
import type { Lease, SlotRequest } from '../store/types.js';
import type { SlotQueue } from './concurrency.js';
import type { StateStore } from '../store/index.js';

export interface Attempt {
  readonly target: Target;
  /** The public model this attempt serves (the primary, a fallback, or a shed fallback). */
  readonly model: Model;
  /** 1-based attempt number within the request. */
  readonly number: number;
  readonly startedAt: number;
  /** Time spent queued for a slot, ms. */
  readonly queuedMs: number;
  /** Whether this attempt holds a place in its upstream's burst window. */
  readonly deep: boolean;
  /** Set on the first attempt of a fallback model: the primary model's name. */
  readonly fallbackFrom?: string;
  /** Returns the slot (and window place); safe to call more than once. */
  release(): void;
}

export type AttemptResult =
  | { readonly ok: true; readonly latencyMs: number }
  | {
      readonly ok: false;
      readonly classified: Classified;
      readonly error: GatewayError;
      readonly retryAfterMs?: number;
      readonly latencyMs: number;
      /** The upstream's own message, scrubbed of key material, when `error` does not carry it (credential / permission). */
      readonly reason?: string;
    }
  | { readonly ok: 'aborted' };

export type Next = { readonly attempt: Attempt } | { readonly stop: GatewayError };

/** A slot taken for a target: at once, or after `queuedMs` in the queue. */
export interface Taken {
  readonly target: Target;
  readonly lease: Lease;
  readonly queuedMs: number;
}

/** Builds the attempt whose `release()` returns the slot once and wakes the upstream's queue. */
export function makeAttempt(
  taken: Taken,
  fields: { model: Model; number: number; deep: boolean; fallbackFrom?: string },
  state: { store: StateStore; queue: SlotQueue },
): Attempt {
  const { target, lease, queuedMs } = taken;
  let released = false;
  return {
    target,
    model: fields.model,
    number: fields.number,
    startedAt: Date.now(),
    queuedMs,
    deep: fields.deep,
    ...(fields.fallbackFrom !== undefined ? { fallbackFrom: fields.fallbackFrom } : {}),
    release: () => {
      if (released) return;
      released = true;
      void state.store.release(lease).then(() => state.queue.notify(target.upstream.id));
    },
  };
}

/** The store's slot request for `t`: its concurrency cap and, for a deep call, its burst window. */
export function slotRequest(t: Target, deep: boolean): SlotRequest {
  return { upstream: t.upstream.id, limit: t.upstream.max_concurrency, deep, windowMs: t.upstream.window.seconds * 1000, threshold: t.upstream.window.threshold };
}
