/**
 * Deep-reasoning detection: a request is deep when its model is marked `reasoning: true`
 * and its `reasoning_effort` (or the model's `default_effort` when the request has none)
 * is at or above the model's `deep_effort`. Effort levels in OpenAI's order
 * (API reference, `reasoning_effort`: minimal, low, medium, high; xhigh for the Codex models).
 */
import type { Model } from '../config/types.js';

const ORDER = ['minimal', 'low', 'medium', 'high', 'xhigh'];

function rank(effort: string): number {
  const i = ORDER.indexOf(effort.toLowerCase());
  return i === -1 ? ORDER.indexOf('medium') : i;
}

/** Whether a call to `model` with this `reasoning_effort` enters the burst window. */
export function isDeep(model: Model, effort: string | null | undefined): boolean {
  if (!model.reasoning) return false;
  return rank(effort ?? model.defaultEffort) >= rank(model.deepEffort);
}
