/**
 * Building a generation's providers on start-up and reload, and summing up what a reload
 * changed. An upstream whose entry is unchanged keeps its provider (and its connections);
 * the others get a new one from their kind's factory.
 */
import type { GatewayConfig } from '../../config/types.js';
import type { Provider, ProviderKind } from '../../providers/types.js';
import type { ReloadSummary } from '../gateway.js';
import type { Generation } from './live.js';

/** A generation's providers by upstream id, and which upstreams are new, changed or kept. */
export interface ProviderSet {
  readonly providers: Map<string, Provider>;
  readonly added: string[];
  readonly changed: string[];
  readonly unchanged: string[];
}

/**
 * The providers for `config`: an upstream whose entry is unchanged from `prev` keeps its
 * provider; others get a new one from `kinds`.
 * @throws Error when a provider cannot be created (the new ones made so far are closed).
 */
export function createProviders(config: GatewayConfig, kinds: Readonly<Record<string, ProviderKind>>, prev?: Generation): ProviderSet {
  const providers = new Map<string, Provider>();
  const made: Provider[] = [];
  const added: string[] = [];
  const changed: string[] = [];
  const unchanged: string[] = [];
  try {
    for (const upstream of config.upstreams.values()) {
      const before = prev?.config.upstreams.get(upstream.id);
      const reuse = before && JSON.stringify(before) === JSON.stringify(upstream) ? prev?.providers.get(upstream.id) : undefined;
      if (reuse) {
        providers.set(upstream.id, reuse);
        unchanged.push(upstream.id);
        continue;
      }
      const kind = kinds[upstream.provider];
      if (!kind) throw new Error(`no provider for kind ${upstream.provider}`);
      const p = kind.create(upstream);
      made.push(p);
      providers.set(upstream.id, p);
      (before ? changed : added).push(upstream.id);
    }
  } catch (err) {
    for (const p of made) void p.close().catch(() => {});
    throw err;
  }
  return { providers, added, changed, unchanged };
}

/** What a reload from `prev` to `next` (read from `path`, providers `made`) changed. */
export function reloadSummary(path: string, prev: GatewayConfig, next: GatewayConfig, made: ProviderSet): ReloadSummary {
  const changedBlock = (k: 'server' | 'store' | 'admin') => JSON.stringify(prev[k]) !== JSON.stringify(next[k]);
  return {
    status: 'reloaded',
    config: path,
    models: [...next.models.keys()],
    keys: next.keys.length,
    upstreams: {
      added: made.added,
      changed: made.changed,
      removed: [...prev.upstreams.keys()].filter((id) => !next.upstreams.has(id)),
      unchanged: made.unchanged,
    },
    restart_required: (['server', 'store', 'admin'] as const).filter(changedBlock),
    warnings: next.warnings,
  };
}
