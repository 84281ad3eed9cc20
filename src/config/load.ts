/**
 * Reads `switchyard.yaml`, resolves `${ENV_VAR}` secret references, validates the result
 * against the one schema, checks cross-references and returns a frozen runtime config.
 * Runs at start-up and on every hot reload; every error names the bad path and value.
 */
import { readFileSync } from 'node:fs';
import type { TSchema } from '@sinclair/typebox';
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import { parse as parseYaml } from 'yaml';
import { ConfigSchema, type RawConfig, type UpstreamConfig, type ModelConfig, type ClientKeyConfig, type PriceConfig } from './schema.js';
import type { GatewayConfig, LiveUpstream, Model, ProviderKinds, UpstreamStatus } from './types.js';

export type { GatewayConfig, LiveUpstream, Model, ProviderKindInfo, ProviderKinds, Target, UpstreamStatus } from './types.js';

/** What loading a config needs besides the file itself. */
export interface LoadOptions {
  /**
   * The provider kinds an upstream may name, with their option schemas (the gateway passes
   * `PROVIDERS` from `providers/registry.ts`).
   */
  readonly kinds: ProviderKinds;
  /** Environment for `${VAR}` references; defaults to `process.env`. */
  readonly env?: NodeJS.ProcessEnv;
}

/** {@link LoadOptions} for a document that is not read from a file. */
export interface ParseOptions extends LoadOptions {
  /** Shown in errors and kept on the result; defaults to `<inline>`. */
  readonly path?: string;
}

/** Thrown for any problem with the config file; `message` lists every problem found. */
export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

const ajv = new Ajv({ allErrors: true, useDefaults: true, strict: false });
const validate = ajv.compile<RawConfig>(ConfigSchema);
/** Compiled option schemas, by schema: each kind's is compiled once, on first use. */
const optionValidators = new WeakMap<TSchema, ValidateFunction>();

function optionValidator(schema: TSchema | undefined): ValidateFunction | undefined {
  if (!schema) return undefined;
  let check = optionValidators.get(schema);
  if (!check) {
    check = ajv.compile(schema);
    optionValidators.set(schema, check);
  }
  return check;
}

const REF = /\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g;

interface Unresolved {
  path: string;
  variable: string;
}

/** Replaces `${VAR}` / `${VAR:-default}` in every string of the tree; records unset ones. */
function interpolate(node: unknown, path: string, env: NodeJS.ProcessEnv, unresolved: Unresolved[]): unknown {
  if (typeof node === 'string') {
    return node.replace(REF, (_m, name: string, fallback: string | undefined) => {
      const value = env[name];
      if (value !== undefined && value !== '') return value;
      if (fallback !== undefined) return fallback;
      unresolved.push({ path, variable: name });
      return '';
    });
  }
  if (Array.isArray(node)) return node.map((v, i) => interpolate(v, `${path}/${i}`, env, unresolved));
  if (node && typeof node === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(node)) out[k] = interpolate(v, `${path}/${k}`, env, unresolved);
    return out;
  }
  return node;
}

function valueAt(root: unknown, pointer: string): unknown {
  let cur: unknown = root;
  for (const part of pointer.split('/').slice(1)) {
    if (cur === null || typeof cur !== 'object') return undefined;
    cur = (cur as Record<string, unknown>)[part];
  }
  return cur;
}

function describe(err: ErrorObject, root: unknown): string {
  const path = err.instancePath || '/';
  if (err.keyword === 'additionalProperties') {
    return `${path}: unknown field "${String(err.params['additionalProperty'])}"`;
  }
  if (err.keyword === 'required') return `${path}: missing field "${String(err.params['missingProperty'])}"`;
  const shown = /api_key|key_sha256|password|secret|token|\/headers\/|redis_url|redis_options/i.test(path) ? '[redacted]' : JSON.stringify(valueAt(root, path));
  return `${path}: ${err.message ?? 'invalid'} (got ${shown})`;
}

function fullPrice(p: PriceConfig): Required<PriceConfig> {
  return Object.freeze({
    input: p.input,
    output: p.output,
    cached_input: p.cached_input ?? p.input,
    cache_write: p.cache_write ?? p.input,
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

/**
 * Parses and validates a config document.
 * @param text YAML source.
 * @param opts the provider kinds upstreams may name, the environment for `${VAR}`
 *        references and the path shown in errors.
 * @throws ConfigError listing every problem (schema, duplicates, dangling references).
 */
export function parseConfig(text: string, opts: ParseOptions): GatewayConfig {
  return parse(text, opts.kinds, opts.env ?? process.env, opts.path ?? '<inline>');
}

/**
 * The loader itself. `kinds` undefined only for the transitional one-argument
 * {@link loadConfig}: provider kinds, `base_url` and `options` then go unchecked.
 */
function parse(text: string, kinds: ProviderKinds | undefined, env: NodeJS.ProcessEnv, path: string): GatewayConfig {
  let doc: unknown;
  try {
    doc = parseYaml(text);
  } catch (err) {
    // Only the position: the parser's message quotes the source line, which may hold a secret.
    const e = err as { code?: string; linePos?: { line: number; col: number }[] };
    const at = e.linePos?.[0] ? ` at line ${e.linePos[0].line}, column ${e.linePos[0].col}` : '';
    throw new ConfigError(`${path}: not valid YAML${at} (${e.code ?? 'syntax error'})`);
  }
  const unresolved: Unresolved[] = [];
  const resolved = interpolate(doc, '', env, unresolved);
  // Unset variables outside an upstream's api_key are reported first: the schema errors
  // they cause ("must match pattern, got """) would not name the variable.
  const unset = unresolved
    .filter((u) => !/^\/upstreams\/\d+\/api_key$/.test(u.path))
    .map((u) => `${u.path}: environment variable ${u.variable} is not set`);
  if (unset.length > 0) throw new ConfigError(`${path} is invalid:\n  - ${unset.join('\n  - ')}`);
  if (!validate(resolved)) {
    const lines = (validate.errors ?? []).map((e) => describe(e, resolved));
    throw new ConfigError(`${path} is invalid:\n  - ${[...new Set(lines)].join('\n  - ')}`);
  }
  const raw = resolved;
  const problems: string[] = [];
  const warnings: string[] = [];

  // An unset variable in an upstream's api_key switches that upstream off; anywhere else it is an error.
  const offReason = new Map<number, string>();
  for (const u of unresolved) {
    const m = /^\/upstreams\/(\d+)\/api_key$/.exec(u.path);
    if (m) offReason.set(Number(m[1]), `${u.variable} is not set`);
  }

  const upstreams = new Map<string, LiveUpstream>();
  const status: UpstreamStatus[] = [];
  const declared = new Set<string>();
  raw.upstreams.forEach((u: UpstreamConfig, i: number) => {
    if (declared.has(u.id)) problems.push(`/upstreams/${i}/id: duplicate upstream id "${u.id}"`);
    declared.add(u.id);
    // null: no kinds to check against (the transitional one-argument loadConfig).
    const kind = kinds ? kinds[u.provider] : null;
    if (kind === undefined) {
      problems.push(`/upstreams/${i}/provider: unknown provider kind "${u.provider}" (known: ${Object.keys(kinds ?? {}).join(', ')})`);
      return;
    }
    if (kind?.needsBaseUrl && !u.base_url) problems.push(`/upstreams/${i}/base_url: required for provider "${u.provider}"`);
    const options = structuredClone(u.options);
    const check = optionValidator(kind?.options);
    if (check && !check(options)) {
      for (const e of check.errors ?? []) problems.push(describe({ ...e, instancePath: `/upstreams/${i}/options${e.instancePath}` }, resolved));
    } else if (kind && !check && Object.keys(options).length > 0) {
      problems.push(`/upstreams/${i}/options: provider "${u.provider}" takes no options`);
    }
    const reason = offReason.get(i);
    if (reason) {
      status.push({ id: u.id, provider: u.provider, mode: 'off', reason });
      return;
    }
    const live: LiveUpstream = Object.freeze({ ...u, apiKey: u.api_key || undefined, options: Object.freeze(options) });
    upstreams.set(u.id, live);
    status.push({ id: u.id, provider: u.provider, mode: kind?.simulated ? 'simulated' : 'live' });
  });

  const models = new Map<string, Model>();
  const modelNames = new Set<string>();
  // Models served only by the simulator (no provider key set for them).
  const simulatedOnly = new Set(
    raw.models
      .filter((m) => {
        const live = m.targets.filter((t) => upstreams.has(t.upstream));
        const primary = live.filter((t) => !t.standby);
        const chosen = primary.length > 0 ? primary : live;
        return chosen.length > 0 && chosen.every((t) => kinds?.[upstreams.get(t.upstream)!.provider]?.simulated === true);
      })
      .map((m) => m.name),
  );
  raw.models.forEach((m: ModelConfig, i: number) => {
    if (modelNames.has(m.name)) problems.push(`/models/${i}/name: duplicate model "${m.name}"`);
    modelNames.add(m.name);
    m.targets.forEach((t, j) => {
      if (!declared.has(t.upstream)) problems.push(`/models/${i}/targets/${j}/upstream: unknown upstream "${t.upstream}"`);
    });
    const live = m.targets.filter((t) => upstreams.has(t.upstream));
    const primary = live.filter((t) => !t.standby);
    const chosen = primary.length > 0 ? primary : live;
    if (chosen.length === 0) {
      warnings.push(`model "${m.name}" has no live target; it is not served`);
      return;
    }
    const price = fullPrice(m.price);
    // A model on a real provider never falls back (or sheds) to simulated answers.
    const real = !simulatedOnly.has(m.name);
    const fallbacks = m.fallbacks.filter((f) => {
      if (!real || !simulatedOnly.has(f)) return true;
      warnings.push(`model "${m.name}": fallback "${f}" is only simulated (its provider key is not set); it is not used`);
      return false;
    });
    const shed = { ...m.shed };
    if (real && shed.fallback !== undefined && simulatedOnly.has(shed.fallback)) {
      warnings.push(`model "${m.name}": shed fallback "${shed.fallback}" is only simulated; hot deep calls are rejected instead`);
      shed.policy = 'reject';
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
        deepEffort: m.deep_effort,
        defaultEffort: m.default_effort,
        shed: Object.freeze(shed),
        targets: Object.freeze(
          chosen.map((t) =>
            Object.freeze({
              key: `${t.upstream}/${t.model}`,
              upstream: upstreams.get(t.upstream)!,
              model: t.model,
              weight: t.weight,
              price: t.price ? fullPrice(t.price) : price,
            }),
          ),
        ),
      }),
    );
  });

  // Fallback chains: every name must be a declared model, and no chain may loop back.
  const declaredModels = new Map(raw.models.map((m, i) => [m.name, { m, i }]));
  for (const { m, i } of declaredModels.values()) {
    m.fallbacks.forEach((f, j) => {
      if (!declaredModels.has(f)) problems.push(`/models/${i}/fallbacks/${j}: unknown model "${f}"`);
    });
    if (m.shed.fallback !== undefined && !declaredModels.has(m.shed.fallback)) {
      problems.push(`/models/${i}/shed/fallback: unknown model "${m.shed.fallback}"`);
    }
    if (m.shed.policy === 'downgrade' && m.reasoning && m.shed.fallback === undefined && m.fallbacks.length === 0) {
      warnings.push(`model "${m.name}" sheds by downgrade but names no shed.fallback; its hot calls will be rejected`);
    }
    const cycle = findCycle(m.name, (n) => declaredModels.get(n)?.m.fallbacks ?? []);
    if (cycle) problems.push(`/models/${i}/fallbacks: fallback cycle ${cycle.join(' -> ')}`);
  }

  if (raw.passthrough.upstream !== undefined && !declared.has(raw.passthrough.upstream)) {
    problems.push(`/passthrough/upstream: unknown upstream "${raw.passthrough.upstream}"`);
  }

  const keyNames = new Set<string>();
  raw.keys.forEach((k: ClientKeyConfig, i: number) => {
    if (keyNames.has(k.name)) problems.push(`/keys/${i}/name: duplicate key name "${k.name}"`);
    keyNames.add(k.name);
  });

  if (problems.length > 0) throw new ConfigError(`${path} is invalid:\n  - ${problems.join('\n  - ')}`);

  return Object.freeze({
    path,
    server: Object.freeze(raw.server),
    admin: Object.freeze(raw.admin),
    routing: Object.freeze(raw.routing),
    store: Object.freeze(raw.store),
    upstreams,
    upstreamStatus: Object.freeze(status),
    models,
    keys: Object.freeze(raw.keys.map((k) => Object.freeze(k))),
    passthrough: Object.freeze({ ...raw.passthrough }),
    warnings: Object.freeze(warnings),
  });
}

/**
 * Loads the config file at `path`.
 * @param opts the provider kinds upstreams may name and the environment for `${VAR}` references.
 * @throws ConfigError when the file cannot be read or is invalid.
 */
export function loadConfig(path: string, opts: LoadOptions): GatewayConfig;
/**
 * Loads the config file at `path` WITHOUT the provider kinds: kind names, `base_url` and
 * `options` go unchecked, and no upstream counts as simulated.
 * @deprecated Transitional, kept only for `providers/simulator/cli.ts` (it reads nothing but
 * a `simulator` upstream's settings) until it passes `{ kinds: PROVIDERS }`; use the
 * two-argument form.
 */
export function loadConfig(path: string): GatewayConfig;
export function loadConfig(path: string, opts?: LoadOptions): GatewayConfig {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new ConfigError(`cannot read config ${path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  return parse(text, opts?.kinds, opts?.env ?? process.env, path);
}
