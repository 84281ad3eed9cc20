/**
 * Schema validation of the config (ajv, defaults applied in place) and of each provider
 * kind's `options` block, with error lines that name the bad path and value (secrets
 * redacted).
 */
import type { TSchema } from '@sinclair/typebox';
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import { foldLiteralUnions } from '../util/ajv-issues.js';
import { ConfigError } from './error.js';
import { ConfigSchema, type RawConfig } from './schema.js';

const ajv = new Ajv({ allErrors: true, useDefaults: true, strict: false });
const validate = ajv.compile<RawConfig>(ConfigSchema);
/** Compiled option schemas, by schema: each kind's is compiled once, on first use. */
const optionValidators = new WeakMap<TSchema, ValidateFunction>();

/**
 * The validator of a provider kind's `options` schema (it applies the schema's defaults to
 * what it checks); undefined for a kind that takes no options.
 */
export function optionValidator(schema: TSchema | undefined): ValidateFunction | undefined {
  if (!schema) return undefined;
  let check = optionValidators.get(schema);
  if (!check) {
    check = ajv.compile(schema);
    optionValidators.set(schema, check);
  }
  return check;
}

function valueAt(root: unknown, pointer: string): unknown {
  let cur: unknown = root;
  for (const part of pointer.split('/').slice(1)) {
    if (cur === null || typeof cur !== 'object') return undefined;
    cur = (cur as Record<string, unknown>)[part];
  }
  return cur;
}

/**
 * One error line: the path, what is wrong and the value found there in `root`, unless the
 * path may hold a secret.
 */
export function describe(err: ErrorObject, root: unknown): string {
  const path = err.instancePath || '/';
  if (err.keyword === 'additionalProperties') {
    return `${path}: unknown field "${String(err.params['additionalProperty'])}"`;
  }
  if (err.keyword === 'required') return `${path}: missing field "${String(err.params['missingProperty'])}"`;
  const shown = SECRET_PATH.test(path) ? '[redacted]' : shownValue(valueAt(root, path));
  return `${path}: ${err.message ?? 'invalid'} (got ${shown})`;
}

/** Paths whose values may be secrets, printed as `[redacted]`; the same names as keys inside a value. */
const SECRET_PATH = /api_key|key_sha256|password|secret|token|\/headers\/|redis_url|redis_options|cluster_nodes|postgres_url|budget_alerts\/url/i;
const SECRET_KEY = /api_key|key_sha256|password|passwd|secret|token|auth/i;

/**
 * A value found in the config as an error line shows it: any field named like a secret
 * inside it (`{host, port, password}`) is `[redacted]`, and a URL's user and password are.
 */
export function shownValue(v: unknown): string {
  const text = JSON.stringify(v, (k, x: unknown) => (k !== '' && SECRET_KEY.test(k) ? '[redacted]' : x)) ?? String(v);
  return text.replace(/(\/\/)[^/@\s"]*@/g, '$1[redacted]@');
}

/**
 * The numbers YAML can write but no amount, price or limit can be (`.inf`, `-.inf`, `.nan`;
 * YAML 1.2 core schema): JSON Schema's bounds let infinity through and show NaN as null.
 */
function nonFinite(v: unknown, path: string): string[] {
  if (typeof v === 'number')
    return Number.isFinite(v) ? [] : [`${path || '/'}: must be a finite number (got ${Number.isNaN(v) ? '.nan' : v > 0 ? '.inf' : '-.inf'})`];
  if (v === null || typeof v !== 'object') return [];
  return Object.entries(v).flatMap(([k, x]) => nonFinite(x, `${path}/${k}`));
}

/**
 * Checks a resolved document against the config schema, filling in its defaults.
 * @param path the config's path, for the error.
 * @throws ConfigError listing every schema error, and every infinite or NaN number.
 */
export function validateDocument(doc: unknown, path: string): RawConfig {
  const infinite = nonFinite(doc, '');
  if (!validate(doc) || infinite.length > 0) {
    const lines = [...infinite, ...foldLiteralUnions(validate.errors ?? []).map((e) => describe(e, doc))];
    throw new ConfigError(`${path} is invalid:\n  - ${[...new Set(lines)].join('\n  - ')}`);
  }
  return doc;
}
