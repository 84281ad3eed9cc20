/**
 * The generations of one gateway: the first from the start-up config, then one per reload
 * (SIGHUP, `POST /admin/reload`), swapped in for new requests (live.ts). Each generation
 * gets its own KeyStore and Router; its providers come from generations.ts (an unchanged
 * upstream keeps its own).
 */
import type { FastifyBaseLogger } from 'fastify';
import { KeyStore } from '../../auth/keys.js';
import { ConfigError, loadConfig } from '../../config/load.js';
import type { GatewayConfig } from '../../config/types.js';
import type { AuthThrottle } from '../../limits/index.js';
import { recordBudgetExhausted, recordShed, recordWindowSpent } from '../../metrics/record.js';
import type { Metrics } from '../../metrics/registry.js';
import { PROVIDERS } from '../../providers/registry.js';
import { Router } from '../../router/index.js';
import type { StateStore } from '../../store/index.js';
import type { ReloadSummary } from '../gateway.js';
import { createProviders, reloadSummary } from './generations.js';
import { LiveState } from './live.js';

/** What the generations are built with. */
export interface ReloaderDeps {
  readonly store: StateStore;
  readonly metrics: Metrics;
  readonly logger: FastifyBaseLogger;
  /** Learns the keys of every config loaded (see {@link Reloader.keys}). */
  readonly authThrottle: AuthThrottle;
  /** For `${VAR}` references of a reloaded config; undefined: `process.env`. */
  readonly env?: NodeJS.ProcessEnv | undefined;
}

/** Makes the gateway's generations and swaps a new one in on reload. */
export class Reloader {
  /** The generation new requests use, and the ones requests in flight still hold. */
  readonly live: LiveState;

  /**
   * Builds the first generation from `config`.
   * @throws Error when a provider cannot be created (unknown kind, unreadable recordings).
   */
  constructor(
    config: GatewayConfig,
    private readonly deps: ReloaderDeps,
  ) {
    this.live = new LiveState(
      { config, keys: this.keys(config), router: this.router(config), providers: createProviders(config, PROVIDERS).providers },
      (err) => deps.logger.warn({ err }, 'closing a replaced upstream provider failed'),
    );
  }

  /**
   * Re-reads and validates the config file (default: the current config's path) and swaps
   * it in for new requests; logs the outcome either way.
   * @throws ConfigError when the file is unreadable or invalid; the running config stays.
   */
  reload(path: string = this.live.current.config.path): ReloadSummary {
    const { live, deps } = this;
    const prev = live.current;
    let summary: ReloadSummary;
    try {
      const next = loadConfig(path, { kinds: PROVIDERS, env: deps.env });
      let made;
      try {
        made = createProviders(next, PROVIDERS, prev);
      } catch (err) {
        throw new ConfigError(`${path}: ${(err as Error).message}`);
      }
      live.swap({ config: next, keys: this.keys(next), router: this.router(next), providers: made.providers });
      summary = reloadSummary(path, prev.config, next, made);
    } catch (err) {
      // ConfigError messages name paths and redact secret values; never log the file itself.
      const message = err instanceof ConfigError ? err.message : (err as Error).message;
      deps.logger.warn({ config: path, error: message }, 'config reload rejected; the running config stays');
      throw err instanceof ConfigError ? err : new ConfigError(message);
    }
    deps.logger.info({ reload: summary }, 'config reloaded');
    return summary;
  }

  /**
   * The KeyStore of `c`. Keys of every config this process loaded count as once valid: a key
   * rotated out is a stale key, throttled on its own, never against its client's address.
   */
  private keys(c: GatewayConfig): KeyStore {
    const keys = new KeyStore(c.keys);
    for (const d of keys.digests()) this.deps.authThrottle.remember(d);
    return keys;
  }

  /** The Router of `c`, its events counted and its long cooldowns logged. */
  private router(c: GatewayConfig): Router {
    const { store, metrics, logger } = this.deps;
    const router = new Router(c.routing, store);
    router.onBudgetExhausted = () => recordBudgetExhausted(metrics);
    router.onShed = (model, policy) => recordShed(metrics, model, policy);
    router.onWindowSpent = (upstream) => recordWindowSpent(metrics, upstream);
    // One line per long cooldown (bad key, empty account, refused or unknown model). The
    // reason is the upstream's message, scrubbed of key material; the key is never logged.
    router.health.onCooldown = (ev) =>
      logger.warn(
        { upstream: ev.upstream, target: ev.target, error_class: ev.class, reason: ev.reason, probe_at: new Date(ev.untilMs).toISOString() },
        'upstream cooling down',
      );
    return router;
  }
}
