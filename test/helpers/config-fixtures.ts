/**
 * Shared parts of the config tests (test/unit/config-*.test.ts, usage-cost.test.ts): the
 * shipped config/switchyard.yaml, a small valid config whose parts can be replaced to break
 * one thing at a time, and checks of a ConfigError and of a model's targets.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { hashKey } from '../../src/auth/keys.js';
import { ConfigError, type GatewayConfig } from '../../src/config/load.js';

const here = dirname(fileURLToPath(import.meta.url));
/** The repository root, from the compiled `.test-build/test/helpers`. */
const ROOT = join(here, '..', '..', '..');
export const DEFAULT_PATH = join(ROOT, 'config', 'switchyard.yaml');
export const DEFAULT_YAML = readFileSync(DEFAULT_PATH, 'utf8');
export const DEMO_HASH = hashKey('sk-switchyard-demo');

/** Runs `fn`, asserts it throws a ConfigError, returns the message. */
export function configError(fn: () => unknown): string {
  let thrown: unknown;
  try {
    fn();
  } catch (err) {
    thrown = err;
  }
  assert.ok(thrown !== undefined, 'expected a ConfigError, nothing was thrown');
  assert.ok(thrown instanceof ConfigError, `expected a ConfigError, got ${String(thrown)}`);
  assert.equal(thrown.name, 'ConfigError');
  return thrown.message;
}

export function targetsOf(config: GatewayConfig, model: string): { upstream: string; model: string }[] {
  const m = config.models.get(model);
  assert.ok(m, `model ${model} is served`);
  return m.targets.map((t) => ({ upstream: t.upstream.id, model: t.model }));
}

export interface MiniOptions {
  upstream?: string;
  models?: string;
  keys?: string;
}

/** A small valid config; parts can be replaced to break one thing at a time. */
export function mini(o: MiniOptions = {}): string {
  return `
upstreams:
${
  o.upstream ??
  `  - id: up
    provider: openai-compatible
    base_url: http://127.0.0.1:9/v1
    api_key: \${UP_KEY}
    max_concurrency: 8
  - id: sim
    provider: simulator`
}
models:
${
  o.models ??
  `  - name: m1
    price: { input: 1, output: 2 }
    targets:
      - { upstream: up, model: real-m1 }
      - { upstream: sim, model: sim-m1, standby: true }`
}
keys:
${o.keys ?? `  - name: k\n    key_sha256: ${DEMO_HASH}`}
`;
}
