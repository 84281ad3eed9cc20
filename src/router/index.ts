/**
 * Orders a model's targets for one request. The foundation keeps config order (the first
 * live target is primary, the rest are failover); strategies come with the routing issue.
 */
import type { Model, Target } from '../config/load.js';

/** The targets to try, in order. */
export function planTargets(model: Model): readonly Target[] {
  return model.targets;
}
