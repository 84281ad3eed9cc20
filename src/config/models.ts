/**
 * The `models:` entries turned into the models the gateway serves: each with its live
 * targets (standby ones only when nothing else is live), full prices, and fallbacks that
 * never lead a model on a real provider to simulated answers; plus the checks that span
 * models (duplicates, unknown upstreams and models, fallback cycles).
 */
import type { ModelConfig, PriceConfig, RawConfig } from './schema.js';
import { EFFORT_LEVELS } from './schema-model.js';
import type { LiveUpstream, Model } from './types.js';

/** Where the checks put what they find: errors stop the load, warnings are logged. */
export interface Findings {
  readonly problems: string[];
  readonly warnings: string[];
}

/**
 * Cache prices relative to `input` by provider kind when the config leaves them out (USD per
 * 1M tokens, like every price). Anthropic: cache reads 0.1×, 5-minute writes 1.25×, 1-hour
 * writes 2× base input (Anthropic pricing page and "Prompt caching" docs, "Pricing"). Any
 * other kind: reads and writes at `input`, 1-hour writes at `cache_write` (OpenAI bills cache
 * writes as plain input, "Prompt caching" guide; its cached-input discount is per model, so a
 * config sets `cached_input` from the model's pricing row).
 */
const CACHE_MULTIPLIERS: Readonly<Record<string, { read: number; write: number; write1h: number }>> = {
  anthropic: { read: 0.1, write: 1.25, write1h: 2 },
};

/** A price with every optional part filled in: the config's, else the default for `provider` (CACHE_MULTIPLIERS). */
export function fullPrice(p: PriceConfig, provider: string | undefined): Required<PriceConfig> {
  const m = provider !== undefined ? CACHE_MULTIPLIERS[provider] : undefined;
  const cacheWrite = p.cache_write ?? (m ? p.input * m.write : p.input);
  return Object.freeze({
    input: p.input,
    output: p.output,
    cached_input: p.cached_input ?? (m ? p.input * m.read : p.input),
    cache_write: cacheWrite,
    cache_write_1h: p.cache_write_1h ?? (m ? p.input * m.write1h : cacheWrite),
    reasoning: p.reasoning ?? p.output,
  });
}

/** The first path from `start` that comes back to a model already on it, or null. */
function findCycle(start: string, next: (name: string) => readonly string[]): string[] | null {
  const path: string[] = [];
  const visit = (name: string): string[] | null => {
    const at = path.indexOf(name);
    if (at !== -1) return [...path.slice(at), name];
    path.push(name);
    for (const n of next(name)) {
      const c = visit(n);
      if (c) return c;
    }
    path.pop();
    return null;
  };
  return visit(start);
}

/** The targets that serve `m`: its live non-standby ones, else its live standby ones. */
function chosenTargets(m: ModelConfig, upstreams: ReadonlyMap<string, LiveUpstream>): ModelConfig['targets'] {
  const live = m.targets.filter((t) => upstreams.has(t.upstream));
  const primary = live.filter((t) => !t.standby);
  return primary.length > 0 ? primary : live;
}

/**
 * A `context_fallback` names another declared model with a larger `context_window`, and the
 * model naming it declares its own window (else nothing would ever be sent there). Each step
 * of such a chain is larger than the last, so it cannot loop.
 */
function contextProblems(m: ModelConfig, i: number, declared: ReadonlyMap<string, { m: ModelConfig }>, found: Findings): void {
  const name = m.context_fallback;
  if (name === undefined) return;
  const at = `/models/${i}/context_fallback`;
  const to = declared.get(name)?.m;
  if (!to) return void found.problems.push(`${at}: unknown model "${name}"`);
  if (m.context_window === undefined) return void found.problems.push(`${at}: model "${m.name}" names a context fallback but declares no context_window`);
  if (to.context_window === undefined || to.context_window <= m.context_window) {
    const has = to.context_window === undefined ? 'declares none' : `declares ${to.context_window}`;
    found.problems.push(`${at}: model "${name}" must declare a context_window larger than this model's ${m.context_window} tokens (it ${has})`);
  }
}

/** Fallback chains: every name must be a declared model, and no chain may loop back. */
function checkChains(entries: readonly ModelConfig[], found: Findings): void {
  const declaredModels = new Map(entries.map((m, i) => [m.name, { m, i }]));
  for (const { m, i } of declaredModels.values()) {
    m.fallbacks.forEach((f, j) => {
      if (!declaredModels.has(f)) found.problems.push(`/models/${i}/fallbacks/${j}: unknown model "${f}"`);
    });
    if (m.shed.fallback !== undefined && !declaredModels.has(m.shed.fallback)) {
      found.problems.push(`/models/${i}/shed/fallback: unknown model "${m.shed.fallback}"`);
    }
    if (m.shed.policy === 'downgrade' && m.reasoning && m.shed.fallback === undefined && m.fallbacks.length === 0) {
      found.warnings.push(`model "${m.name}" sheds by downgrade but names no shed.fallback; its hot calls will be rejected`);
    }
    if (m.shed.lower_effort !== undefined && EFFORT_LEVELS.indexOf(m.shed.lower_effort) >= EFFORT_LEVELS.indexOf(m.deep_effort)) {
      found.problems.push(
        `/models/${i}/shed/lower_effort: "${m.shed.lower_effort}" is not below the model's deep_effort "${m.deep_effort}" (a lowered call must no longer be deep)`,
      );
    }
    contextProblems(m, i, declaredModels, found);
    const cycle = findCycle(m.name, (n) => declaredModels.get(n)?.m.fallbacks ?? []);
    if (cycle) found.problems.push(`/models/${i}/fallbacks: fallback cycle ${cycle.join(' -> ')}`);
  }
}

/**
 * Builds the served models, by name in config order; a model with no live target is left
 * out with a warning.
 * @param upstreams the live upstreams; `declared` every upstream id, live or not.
 * @param isSimulated whether an upstream answers with recorded responses (its kind's `simulated`).
 * @param found errors and warnings are appended here.
 */
export function buildModels(
  raw: Pick<RawConfig, 'models' | 'routing'>,
  upstreams: ReadonlyMap<string, LiveUpstream>,
  declared: ReadonlySet<string>,
  isSimulated: (upstream: LiveUpstream) => boolean,
  found: Findings,
): Map<string, Model> {
  const { problems, warnings } = found;
  const models = new Map<string, Model>();
  const modelNames = new Set<string>();
  // Models served only by the simulator (no provider key set for them).
  const simulatedOnly = new Set(
    raw.models
      .filter((m) => {
        const chosen = chosenTargets(m, upstreams);
        return chosen.length > 0 && chosen.every((t) => isSimulated(upstreams.get(t.upstream)!));
      })
      .map((m) => m.name),
  );
  raw.models.forEach((m, i) => {
    if (modelNames.has(m.name)) problems.push(`/models/${i}/name: duplicate model "${m.name}"`);
    modelNames.add(m.name);
    m.targets.forEach((t, j) => {
      if (!declared.has(t.upstream)) problems.push(`/models/${i}/targets/${j}/upstream: unknown upstream "${t.upstream}"`);
    });
    const chosen = chosenTargets(m, upstreams);
    if (chosen.length === 0) {
      warnings.push(`model "${m.name}" has no live target; it is not served`);
      return;
    }
    // The model's own price (used before a target is chosen) takes its first target's provider defaults.
    const price = fullPrice(m.price, upstreams.get(chosen[0]!.upstream)?.provider);
    // A model on a real provider never falls back (or sheds) to simulated answers.
    const real = !simulatedOnly.has(m.name);
    const fallbacks = m.fallbacks.filter((f) => {
      if (!real || !simulatedOnly.has(f)) return true;
      warnings.push(`model "${m.name}": fallback "${f}" is only simulated (its provider key is not set); it is not used`);
      return false;
    });
    let contextFallback = m.context_fallback;
    if (real && contextFallback !== undefined && simulatedOnly.has(contextFallback)) {
      warnings.push(`model "${m.name}": context fallback "${contextFallback}" is only simulated; prompts over its context window get a 400 instead`);
      contextFallback = undefined;
    }
    const shed = { ...m.shed };
    if (real && shed.fallback !== undefined && simulatedOnly.has(shed.fallback)) {
      // Its hot deep calls still wait for a place, then take the rungs left (router/shed.ts).
      warnings.push(`model "${m.name}": shed fallback "${shed.fallback}" is only simulated; hot deep calls wait for a place instead`);
      shed.policy = 'ladder';
      delete shed.fallback;
    }
    models.set(
      m.name,
      Object.freeze({
        name: m.name,
        reasoning: m.reasoning,
        capabilities: Object.freeze({ ...m.capabilities }),
        price,
        strategy: m.strategy ?? raw.routing.strategy,
        fallbacks: Object.freeze(fallbacks),
        ...(m.context_window !== undefined ? { contextWindow: m.context_window } : {}),
        ...(contextFallback !== undefined ? { contextFallback } : {}),
        deepEffort: m.deep_effort,
        defaultEffort: m.default_effort,
        shed: Object.freeze(shed),
        cacheBreakpoints: m.cache_breakpoints,
        targets: Object.freeze(
          chosen.map((t) =>
            Object.freeze({
              key: `${t.upstream}/${t.model}`,
              upstream: upstreams.get(t.upstream)!,
              model: t.model,
              weight: t.weight,
              price: fullPrice(t.price ?? m.price, upstreams.get(t.upstream)?.provider),
            }),
          ),
        ),
      }),
    );
  });
  checkChains(raw.models, found);
  return models;
}
