/**
 * The shed ladder for deep calls when every account's burst window is hot, by the model's
 * `shed.policy`: `downgrade` to the shed fallback model (else its first fallback), `queue`
 * for a cool window up to `queue_timeout_ms` (polling every 50 ms), or `reject` with 429 and
 * a Retry-After of the longest window. A downgrade with no usable fallback rejects.
 */
import type { Model } from '../config/types.js';
import { GatewayError } from '../errors/codes.js';

const SHED_POLL_MS = 50;

export type ShedDecision =
  /** Route again on `to`. */
  | { readonly kind: 'downgrade'; readonly to: Model; readonly notify: 'downgrade' }
  /** Wait `ms`, then route again (the shed queue). */
  | { readonly kind: 'wait'; readonly ms: number; readonly notify: 'queue' | null }
  | { readonly kind: 'reject'; readonly stop: GatewayError; readonly notify: 'queue' | 'reject' | null };

/**
 * What to do with a deep call that found every window hot.
 * @param queuedSince epoch ms when this request entered the shed queue (0: not yet).
 * @param now epoch ms.
 * @returns the decision; `notify` names the policy to count (once per request and policy).
 */
export function shedDecision(model: Model, lookup: (name: string) => Model | undefined, queuedSince: number, now: number): ShedDecision {
  const policy = model.shed.policy;
  if (policy === 'downgrade') {
    const name = model.shed.fallback ?? model.fallbacks[0];
    const to = name === undefined ? undefined : lookup(name);
    if (to && to !== model) return { kind: 'downgrade', to, notify: 'downgrade' };
  }
  const firstQueued = policy === 'queue' && queuedSince === 0;
  if (policy === 'queue' && (firstQueued ? 0 : now - queuedSince) < model.shed.queue_timeout_ms) {
    return { kind: 'wait', ms: SHED_POLL_MS, notify: firstQueued ? 'queue' : null };
  }
  const windowS = Math.max(...model.targets.map((t) => t.upstream.window.seconds));
  const stop = new GatewayError('GW_ERR_SHED_REJECTED', {
    message: `Too many deep-reasoning calls to ${model.name} right now; retry later.`,
    headers: { 'retry-after': String(Math.max(1, Math.ceil(windowS))) },
  });
  return { kind: 'reject', stop, notify: policy !== 'queue' ? 'reject' : firstQueued ? 'queue' : null };
}
