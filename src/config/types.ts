/**
 * The runtime config: what `config/load.ts` returns once a config file is parsed, validated
 * and resolved. Types only, so every layer may import it (providers, router, pipeline,
 * routes) without pulling in the loader; it depends on nothing but the schema's types
 * (and TypeBox's `TSchema`).
 */
import type { CapacityBounds } from '../store/capacity.js';
import type { TSchema } from '@sinclair/typebox';
import type {
  AdminConfig,
  BudgetAlertsConfig,
  BudgetConfig,
  CapabilitiesConfig,
  ClientKeyConfig,
  Effort,
  PassthroughConfig,
  PriceConfig,
  RawConfig,
  RoutingConfig,
  ShedConfig,
  StoreConfig,
  LedgerConfig,
  TagsConfig,
  Strategy,
  UpstreamConfig,
} from './schema.js';

/** An upstream whose credentials resolved: it takes traffic. */
export interface LiveUpstream extends Readonly<UpstreamConfig> {
  readonly apiKey: string | undefined;
  /** The kind's options with its schema's defaults applied. */
  readonly options: Readonly<Record<string, unknown>>;
  /** The capacity's bounds with defaults applied (start guess, min, ceiling <= max_concurrency). */
  readonly bounds: CapacityBounds;
  /** The bounds of the learned capacity for calls of every kind: start and ceiling `max_concurrency`, min 1. */
  readonly callBounds: CapacityBounds;
}

/** `budget_alerts:` as loaded: thresholds sorted, everything frozen. */
export interface BudgetAlertSettings extends Readonly<Omit<BudgetAlertsConfig, 'thresholds' | 'headers'>> {
  readonly thresholds: readonly number[];
  readonly headers: Readonly<Record<string, string>>;
}

/** One way to serve a public model: an upstream plus the model id sent to it. */
export interface Target {
  /** `<upstream id>/<upstream model>`: the identity health, latency and pins are kept under. */
  readonly key: string;
  readonly upstream: LiveUpstream;
  readonly model: string;
  readonly weight: number;
  /** USD per 1M tokens: the target's override, else the model's price. */
  readonly price: Required<PriceConfig>;
}

/** A public model name with everything needed to route a call to it. */
export interface Model {
  readonly name: string;
  readonly reasoning: boolean;
  /** What the model accepts (docs/api.md, "Parameter normalisation"). */
  readonly capabilities: Readonly<CapabilitiesConfig>;
  readonly price: Required<PriceConfig>;
  readonly strategy: Strategy;
  /** Fallback model names, in order (cycle-free, checked at load). */
  readonly fallbacks: readonly string[];
  /** Context window, tokens (prompt plus output); absent: unknown, not checked (pipeline/context-window.ts). */
  readonly contextWindow?: number;
  /** The model a request over `contextWindow` goes to (its window is larger, checked at load). */
  readonly contextFallback?: string;
  /** reasoning_effort at or above which a call is deep (see router/deep.ts). */
  readonly deepEffort: Effort;
  /** reasoning_effort assumed when a request sends none. */
  readonly defaultEffort: Effort;
  /** What happens to a deep call when every target's window is hot. */
  readonly shed: ShedConfig;
  /** Prompt-cache breakpoints added on its Anthropic Messages accounts (`auto`) or not (`off`). */
  readonly cacheBreakpoints: 'auto' | 'off';
  /** Live targets, in config order (standby ones only when nothing else is live). */
  readonly targets: readonly Target[];
}

/** How one configured upstream came out of loading (shown at start-up and by the admin API). */
export interface UpstreamStatus {
  readonly id: string;
  readonly provider: string;
  /** `live` talks to a real provider, `simulated` is the built-in simulator, `off` lacks its key. */
  readonly mode: 'live' | 'simulated' | 'off';
  readonly reason?: string;
}

/** Model aliases (config/aliases.ts). */
export interface ModelAliases {
  /** The configured model name `name` stands for, or undefined when it is none. */
  resolve(name: string): string | undefined;
}

/** The validated, frozen config one generation of the gateway runs on. */
export interface GatewayConfig {
  readonly path: string;
  readonly server: RawConfig['server'];
  readonly admin: AdminConfig;
  readonly routing: RoutingConfig;
  readonly store: StoreConfig;
  readonly ledger: LedgerConfig;
  /** Tag headers and which tags are metric labels (record/tags.ts). */
  readonly tags: TagsConfig;
  readonly upstreams: ReadonlyMap<string, LiveUpstream>;
  readonly upstreamStatus: readonly UpstreamStatus[];
  readonly models: ReadonlyMap<string, Model>;
  /** Other names of the models (config/aliases.ts; `modelNamed` there reads both). */
  readonly aliases: ModelAliases;
  readonly keys: readonly ClientKeyConfig[];
  /** Where other `/v1/*` routes are proxied. */
  readonly passthrough: Readonly<PassthroughConfig>;
  /** Spend limits per tag or upstream account (config/schema-budgets.ts), in config order. */
  readonly budgets: readonly BudgetConfig[];
  /** The budget webhook (thresholds sorted), or null when none is configured. */
  readonly budgetAlerts: BudgetAlertSettings | null;
  /** Problems that do not stop start-up (a model with no live target), for the start-up log. */
  readonly warnings: readonly string[];
}

/**
 * The loader's view of a provider kind: what it checks an upstream entry against. The
 * provider registry's entries (`ProviderKind` in `providers/types.ts`) have these fields,
 * so the registry is handed to the loader as it is, and config never imports providers.
 */
export interface ProviderKindInfo {
  /**
   * TypeBox schema of an upstream's `options:` block for this kind (defaults applied at
   * load, errors reported with the config path). Absent: the kind takes no options.
   */
  readonly options?: TSchema;
  /** Whether an upstream of this kind needs `base_url`. */
  readonly needsBaseUrl: boolean;
  /** Answers in-process with recorded responses (never mixed into a live model's fallbacks). */
  readonly simulated?: boolean;
}

/** Provider kinds by the name an upstream's `provider:` field uses. */
export type ProviderKinds = Readonly<Record<string, ProviderKindInfo>>;
