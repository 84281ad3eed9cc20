/**
 * Deep-reasoning detection: a request is deep when its model is marked `reasoning: true`
 * and its `reasoning_effort` (or the model's `default_effort` when the request has none, or
 * one the gateway does not know) is at or above the model's `deep_effort`. Effort levels in
 * OpenAI's order (API reference, `reasoning_effort`: minimal, low, medium, high; xhigh for
 * the Codex models), then the deeper ones clients send (`max`, `ultra`: config/schema-model.ts
 * `DEEPER_EFFORTS`), which rank above every configurable `deep_effort`.
 */
import { DEEPER_EFFORTS, EFFORT_LEVELS } from '../config/schema-model.js';
import type { Model } from '../config/types.js';

/** Every known level, lowest first. */
const ORDER: readonly string[] = [...EFFORT_LEVELS, ...DEEPER_EFFORTS];

/** An effort level's place in the known levels (`none` below them all); undefined for a level the gateway does not know. */
export function effortRank(effort: string): number | undefined {
  const e = effort.toLowerCase();
  if (e === 'none') return -1;
  const i = ORDER.indexOf(e);
  return i === -1 ? undefined : i;
}

/** The rank a request's effort counts as on `model`: its own when known, else the model's `default_effort`. */
export function requestRank(model: Model, effort: string | null | undefined): number {
  return (effort == null ? undefined : effortRank(effort)) ?? effortRank(model.defaultEffort) ?? ORDER.indexOf('medium');
}

/** Whether a call to `model` with this `reasoning_effort` enters the burst window. */
export function isDeep(model: Model, effort: string | null | undefined): boolean {
  if (!model.reasoning) return false;
  return requestRank(model, effort) >= (effortRank(model.deepEffort) ?? ORDER.length);
}

/** Weight of a new sample in a model's typical deep call time. */
const ALPHA = 0.1;
/** Served deep calls before a model's typical time is trusted. */
const MIN_SAMPLES = 5;

/**
 * How long a served deep call of each model typically takes, send to last byte (an EWMA per
 * model, per replica; until a replica has its own, the fleet's, router/fleet-timings.ts), for
 * the shed ladder's wait rung: with a model left to move to, a place
 * is waited for at most 3/4 of a typical call (router/shed.ts), so a wait never costs more
 * than most of the call it saves.
 */
export class DeepTimes {
  private readonly est = new Map<string, { ms: number; n: number }>();
  /** model -> the fleet's typical time (router/fleet-timings.ts), used until this replica's own is known. */
  private readonly fleet = new Map<string, number>();
  /** model -> callbacks waiting for its typical time to become known. */
  private readonly waiting = new Map<string, Set<() => void>>();
  /** Told when this replica's own typical time of a model first becomes known (router/fleet-timings.ts shares it at once). */
  onLearned: (() => void) | null = null;
  /** Told when a wait for a model's typical time opens (router/fleet-timings.ts asks the fleet while it is open). */
  onWanted: (() => void) | null = null;

  /** One served deep call of `model` took `ms`. */
  observe(model: string, ms: number): void {
    const e = this.est.get(model);
    if (!e) this.est.set(model, { ms, n: 1 });
    else {
      e.ms += (ms - e.ms) * ALPHA;
      e.n++;
    }
    if ((e?.n ?? 1) === MIN_SAMPLES) this.onLearned?.();
    this.known(model);
  }

  /** Whether a wait for some model's typical time is open. */
  get wanted(): boolean {
    for (const set of this.waiting.values()) if (set.size > 0) return true;
    return false;
  }

  /** The fleet's typical time for `model`, ms (another replica's, from the store): used while this replica's own is unknown. */
  seed(model: string, ms: number): void {
    this.fleet.set(model, ms);
    this.known(model);
  }

  /** The typical times this replica learned itself, model -> ms (for the fleet). */
  own(): [string, number][] {
    return [...this.est].filter(([, e]) => e.n >= MIN_SAMPLES).map(([m, e]) => [m, Math.round(e.ms)]);
  }

  /** Runs the callbacks waiting for `model`'s wait bound (boundMs) once there is one. */
  private known(model: string): void {
    if (this.boundMs(model) === null) return;
    const calls = this.waiting.get(model);
    this.waiting.delete(model);
    for (const f of calls ?? []) f();
  }

  /**
   * Calls `f` once, when `model`'s wait bound (boundMs) becomes known (never when it is known already).
   * @returns a function that cancels the call.
   */
  onKnown(model: string, f: () => void): () => void {
    let set = this.waiting.get(model);
    if (!set) this.waiting.set(model, (set = new Set()));
    set.add(f);
    this.onWanted?.();
    return () => this.waiting.get(model)?.delete(f);
  }

  /** The typical time, ms: this replica's own after MIN_SAMPLES served calls, before that the fleet's; null when neither is known. */
  typicalMs(model: string): number | null {
    const e = this.est.get(model);
    return e && e.n >= MIN_SAMPLES ? e.ms : (this.fleet.get(model) ?? null);
  }

  /**
   * The time the shed ladder bounds a wait for a place with, ms: the typical time, or until
   * it is trusted, what this replica's first served calls took (the first one's time, moved a tenth toward each later one); null
   * before any deep call of `model` was served. The first answers are enough for a bound: at
   * a cold start every waiter's place frees as the first calls end, and waiting for five
   * answers handed those places to requests that had already waited a whole call (measured:
   * four 2.2 s steps at stall/16 against 1.1 s uncongested, up to twelve at 32 agents).
   */
  boundMs(model: string): number | null {
    const t = this.typicalMs(model);
    if (t !== null) return t;
    const e = this.est.get(model);
    return e ? e.ms : null;
  }
}
