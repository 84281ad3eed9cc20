/**
 * Reads `switchyard.yaml`, resolves `${ENV_VAR}` secret references, validates the result
 * against the one schema, checks cross-references and returns a frozen runtime config.
 * Runs at start-up and on every hot reload; every error names the bad path and value.
 *
 * The loader is handed the provider kinds (`LoadOptions.kinds`) instead of importing the
 * provider registry, so `config/` imports nothing outside itself. The steps live in
 * `interpolate.ts`, `validate.ts`, `upstreams.ts` and `models.ts`; the runtime types in
 * `types.ts` (re-exported here).
 */
import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import { ConfigError } from './error.js';
import { interpolate, type Unresolved } from './interpolate.js';
import { buildAliases } from './aliases.js';
import { budgetProblems, literalSecretWarnings, postgresUrlProblems, redisUrlProblems, workersStoreProblem } from './checks.js';
import { buildModels } from './models.js';
import { headerProblems, httpUrlProblem, nonDecimalNumbers, spoolPathProblem } from './runtime-checks.js';
import type { RawConfig } from './schema.js';
import type { GatewayConfig, ProviderKinds } from './types.js';
import { API_KEY_PATH, buildUpstreams } from './upstreams.js';
import { validateDocument } from './validate.js';

export { ConfigError } from './error.js';
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

/** The loader itself. */
function parse(text: string, kinds: ProviderKinds, env: NodeJS.ProcessEnv, path: string): GatewayConfig {
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
  // they cause ("must match pattern, got """) would not name the variable. One in an
  // api_key switches that upstream off instead (upstreams.ts).
  const unset = unresolved.filter((u) => !API_KEY_PATH.test(u.path)).map((u) => `${u.path}: environment variable ${u.variable} is not set`);
  if (unset.length > 0) throw new ConfigError(`${path} is invalid:\n  - ${unset.join('\n  - ')}`);
  const raw = validateDocument(resolved, path);
  const problems: string[] = [
    ...nonDecimalNumbers(text),
    ...redisUrlProblems(raw.store, env, doc),
    ...postgresUrlProblems(raw.ledger, env),
    ...runtimeProblems(raw),
  ];
  const warnings: string[] = literalSecretWarnings(doc);
  // A warning here (check-config may run where REDIS_URL is not set); `serve` refuses to start.
  const noSharedStore = workersStoreProblem(raw.server.workers, raw.store, env);
  if (noSharedStore) warnings.push(`${noSharedStore} (switchyard serve refuses to start without one)`);

  const { upstreams, status, declared } = buildUpstreams(raw.upstreams, kinds, unresolved, resolved, problems);
  const models = buildModels(raw, upstreams, declared, (u) => kinds[u.provider]?.simulated === true, { problems, warnings });
  const aliases = buildAliases(raw.models, { problems });
  raw.upstreams.forEach((u, i) => {
    if (u.window !== undefined) {
      warnings.push(
        `/upstreams/${i}/window is replaced by the learned capacity (capacity: { start, min, ceiling }); window.seconds is ignored, window.threshold is the starting guess`,
      );
    }
  });

  if (raw.passthrough.upstream !== undefined && !declared.has(raw.passthrough.upstream)) {
    problems.push(`/passthrough/upstream: unknown upstream "${raw.passthrough.upstream}"`);
  }

  const keyNames = new Set<string>();
  // One hash under two names would make which name a request is booked under depend on the order.
  const keyHashes = new Map<string, string>();
  raw.keys.forEach((k, i) => {
    if (keyNames.has(k.name)) problems.push(`/keys/${i}/name: duplicate key name "${k.name}"`);
    keyNames.add(k.name);
    const first = keyHashes.get(k.key_sha256);
    if (first !== undefined) problems.push(`/keys/${i}/key_sha256: the same key as "${first}" (each key_sha256 names one key)`);
    else keyHashes.set(k.key_sha256, k.name);
  });

  problems.push(...budgetProblems(raw.budgets, declared));

  if (problems.length > 0) throw new ConfigError(`${path} is invalid:\n  - ${problems.join('\n  - ')}`);

  return Object.freeze({
    path,
    server: Object.freeze(raw.server),
    admin: Object.freeze(raw.admin),
    routing: Object.freeze(raw.routing),
    store: Object.freeze(raw.store),
    ledger: Object.freeze(raw.ledger),
    tags: Object.freeze(raw.tags),
    upstreams,
    upstreamStatus: Object.freeze(status),
    models,
    aliases,
    keys: Object.freeze(raw.keys.map((k) => Object.freeze(k))),
    passthrough: Object.freeze({ ...raw.passthrough }),
    budgets: Object.freeze(raw.budgets.map((b) => Object.freeze({ ...b, ...(b.tag ? { tag: Object.freeze({ ...b.tag }) } : {}) }))),
    budgetAlerts: raw.budget_alerts
      ? Object.freeze({
          ...raw.budget_alerts,
          thresholds: Object.freeze([...raw.budget_alerts.thresholds].sort((x, y) => x - y)),
          headers: Object.freeze({ ...raw.budget_alerts.headers }),
        })
      : null,
    warnings: Object.freeze(warnings),
  });
}

/** The runtime-checks.ts errors of the upstreams' URLs and headers, the alert webhook's, and the spool path. */
function runtimeProblems(raw: RawConfig): string[] {
  const out: string[] = [];
  raw.upstreams.forEach((u, i) => {
    const why = u.base_url === undefined ? null : httpUrlProblem(u.base_url);
    if (why) out.push(`/upstreams/${i}/base_url: ${why}`);
    out.push(...headerProblems(u.headers, `/upstreams/${i}/headers`));
  });
  if (raw.budget_alerts) {
    const why = httpUrlProblem(raw.budget_alerts.url);
    if (why) out.push(`/budget_alerts/url: ${why}`);
    out.push(...headerProblems(raw.budget_alerts.headers, '/budget_alerts/headers'));
  }
  const spool = raw.ledger.spool_path === undefined ? null : spoolPathProblem(raw.ledger.spool_path);
  if (spool) out.push(`/ledger/spool_path: ${spool}`);
  return out;
}

/**
 * Loads the config file at `path`.
 * @param opts the provider kinds upstreams may name and the environment for `${VAR}` references.
 * @throws ConfigError when the file cannot be read or is invalid.
 */
export function loadConfig(path: string, opts: LoadOptions): GatewayConfig {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new ConfigError(`cannot read config ${path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  return parse(text, opts.kinds, opts.env ?? process.env, path);
}
