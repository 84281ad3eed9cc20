/**
 * Deep-reasoning detection: a request is deep when its model is marked `reasoning: true`
 * and its `reasoning_effort` (or the model's `default_effort` when the request has none)
 * is at or above the model's `deep_effort`. Effort levels in OpenAI's order
 * (API reference, `reasoning_effort`: minimal, low, medium, high; xhigh for the Codex models).
 */
import { EFFORT_LEVELS } from '../config/schema-model.js';
import type { Model } from '../config/types.js';

/** An effort level's place in EFFORT_LEVELS (`none` below them all, an unknown level counts as `medium`). */
export function effortRank(effort: string): number {
  const e = effort.toLowerCase();
  if (e === 'none') return -1;
  const i = EFFORT_LEVELS.indexOf(e);
  return i === -1 ? EFFORT_LEVELS.indexOf('medium') : i;
}

/** Whether a call to `model` with this `reasoning_effort` enters the burst window. */
export function isDeep(model: Model, effort: string | null | undefined): boolean {
  if (!model.reasoning) return false;
  return effortRank(effort ?? model.defaultEffort) >= effortRank(model.deepEffort);
}

/** Weight of a new sample in a model's typical deep call time. */
const ALPHA = 0.1;
/** Served deep calls before a model's typical time is trusted. */
const MIN_SAMPLES = 5;

/**
 * How long a served deep call of each model typically takes, send to last byte (an EWMA per
 * model, per replica), for the shed ladder's wait rung: a place is waited for at most half a
 * typical call, so a wait never costs more than the call it saves.
 */
export class DeepTimes {
  private readonly est = new Map<string, { ms: number; n: number }>();

  /** One served deep call of `model` took `ms`. */
  observe(model: string, ms: number): void {
    const e = this.est.get(model);
    if (!e) this.est.set(model, { ms, n: 1 });
    else {
      e.ms += (ms - e.ms) * ALPHA;
      e.n++;
    }
  }

  /** The typical time, ms; null until MIN_SAMPLES calls were served. */
  typicalMs(model: string): number | null {
    const e = this.est.get(model);
    return e && e.n >= MIN_SAMPLES ? e.ms : null;
  }
}
