/**
 * The `upstreams:` entries checked against the provider kinds the loader was handed, and
 * the live upstreams built from them. An upstream whose `api_key` names an unset variable
 * is off (listed with the reason), not an error.
 */
import type { CapacityBounds } from '../store/capacity.js';
import type { Unresolved } from './interpolate.js';
import { DEFAULT_CAPACITY_START } from './schema-upstream.js';
import type { UpstreamConfig } from './schema.js';
import type { LiveUpstream, ProviderKinds, UpstreamStatus } from './types.js';
import { foldLiteralUnions } from '../util/ajv-issues.js';
import { describe, optionValidator } from './validate.js';

/** The pointer of an upstream's `api_key`; group 1 is the upstream's index. */
export const API_KEY_PATH = /^\/upstreams\/(\d+)\/api_key$/;

/** What the upstream entries came to. */
export interface BuiltUpstreams {
  /** The live upstreams (their credentials resolved) by id, in config order. */
  readonly upstreams: Map<string, LiveUpstream>;
  /** Every upstream entry whose kind is known: live, simulated or off. */
  readonly status: UpstreamStatus[];
  /** Every upstream id the config declares, live or not. */
  readonly declared: Set<string>;
}

/**
 * Checks each upstream entry (unique id, known kind, `base_url` when the kind needs it,
 * `options` against the kind's schema, defaults applied) and builds the live ones.
 * @param kinds the provider kinds an upstream may name (the registry, handed in by the caller).
 * @param unresolved the document's unset `${VAR}` references (those in an `api_key` switch
 *        their upstream off).
 * @param root the whole resolved document, for the values quoted in errors.
 * @param problems every error found is appended here.
 */
/**
 * An upstream's capacity bounds: `capacity.start` (else the deprecated `window.threshold`,
 * else DEFAULT_CAPACITY_START), `capacity.min`, `capacity.ceiling` (else `max_concurrency`),
 * each within [min, max_concurrency].
 */
export function capacityBounds(u: UpstreamConfig): CapacityBounds {
  const ceiling = Math.min(u.capacity.ceiling ?? u.max_concurrency, u.max_concurrency);
  const min = Math.min(u.capacity.min, ceiling);
  const start = Math.max(min, Math.min(ceiling, u.capacity.start ?? u.window?.threshold ?? DEFAULT_CAPACITY_START));
  return Object.freeze({ start, min, ceiling });
}

/**
 * The bounds of an upstream's learned capacity for calls of every kind: it starts at
 * `max_concurrency` (the ceiling) and only a throttle brings it lower (store/capacity.ts).
 */
export function callBounds(u: UpstreamConfig): CapacityBounds {
  return Object.freeze({ start: u.max_concurrency, min: 1, ceiling: u.max_concurrency });
}

export function buildUpstreams(
  entries: readonly UpstreamConfig[],
  kinds: ProviderKinds,
  unresolved: readonly Unresolved[],
  root: unknown,
  problems: string[],
): BuiltUpstreams {
  const offReason = new Map<number, string>();
  for (const u of unresolved) {
    const m = API_KEY_PATH.exec(u.path);
    if (m) offReason.set(Number(m[1]), `${u.variable} is not set`);
  }

  const upstreams = new Map<string, LiveUpstream>();
  const status: UpstreamStatus[] = [];
  const declared = new Set<string>();
  entries.forEach((u, i) => {
    if (declared.has(u.id)) problems.push(`/upstreams/${i}/id: duplicate upstream id "${u.id}"`);
    declared.add(u.id);
    const kind = kinds[u.provider];
    if (kind === undefined) {
      problems.push(`/upstreams/${i}/provider: unknown provider kind "${u.provider}" (known: ${Object.keys(kinds).join(', ')})`);
      return;
    }
    if (kind.needsBaseUrl && !u.base_url) problems.push(`/upstreams/${i}/base_url: required for provider "${u.provider}"`);
    const options = structuredClone(u.options);
    const check = optionValidator(kind.options);
    if (check && !check(options)) {
      for (const e of foldLiteralUnions(check.errors ?? [])) problems.push(describe({ ...e, instancePath: `/upstreams/${i}/options${e.instancePath}` }, root));
    } else if (!check && Object.keys(options).length > 0) {
      problems.push(`/upstreams/${i}/options: provider "${u.provider}" takes no options`);
    }
    const reason = offReason.get(i);
    if (reason) {
      status.push({ id: u.id, provider: u.provider, mode: 'off', reason });
      return;
    }
    const live: LiveUpstream = Object.freeze({
      ...u,
      apiKey: u.api_key || undefined,
      options: Object.freeze(options),
      bounds: capacityBounds(u),
      callBounds: callBounds(u),
    });
    upstreams.set(u.id, live);
    status.push({ id: u.id, provider: u.provider, mode: kind.simulated ? 'simulated' : 'live' });
  });
  return { upstreams, status, declared };
}
