/**
 * `server.workers` in the config: default 1, at least 1; above 1 without a shared store the
 * loader warns (check-config prints it; `serve` refuses, see test/redis/workers.test.ts);
 * with `store.redis_url`, `REDIS_URL` or `store.cluster_nodes` it does not.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { ConfigError } from '../../src/config/load.js';
import { parseTestConfig } from '../helpers/config.js';

const here = dirname(fileURLToPath(import.meta.url));
const DEFAULT_YAML = readFileSync(join(here, '..', '..', '..', 'config', 'switchyard.yaml'), 'utf8');

/** The default config with `workers: n` and the `store:` block's redis_url line replaced by `store`. */
function withWorkers(n: number | string, store = '  redis_url: ${REDIS_URL:-}'): string {
  const yaml = DEFAULT_YAML.replace(/^ {2}workers: 1 .*$/m, `  workers: ${n}`).replace(/^ {2}redis_url: .*$/m, store);
  assert.notEqual(yaml, DEFAULT_YAML);
  return yaml;
}

const shared = (warnings: readonly string[]) => warnings.filter((w) => w.includes('/server/workers'));

describe('server.workers', () => {
  test('defaults to 1; the default config says 1', () => {
    assert.equal(parseTestConfig(DEFAULT_YAML, {}).server.workers, 1);
    assert.equal(parseTestConfig(DEFAULT_YAML.replace(/^ {2}workers: 1 .*\n/m, ''), {}).server.workers, 1);
  });

  test('0, a fraction or a string is refused, naming the field', () => {
    for (const bad of ['0', '1.5', 'two']) {
      assert.throws(
        () => parseTestConfig(withWorkers(bad, '  redis_url: redis://127.0.0.1:6379'), {}),
        (err: unknown) => err instanceof ConfigError && /\/server\/workers/.test(err.message),
      );
    }
  });

  test('more than 1 without Redis: a warning naming what to set', () => {
    const c = parseTestConfig(withWorkers(3), {});
    assert.equal(c.server.workers, 3);
    const w = shared(c.warnings);
    assert.equal(w.length, 1);
    assert.match(w[0]!, /^\/server\/workers: 3 needs a shared store: set store\.redis_url \(or REDIS_URL, or store\.cluster_nodes\).*refuses to start/);
  });

  test('more than 1 with store.redis_url, REDIS_URL or store.cluster_nodes: no warning', () => {
    assert.deepEqual(shared(parseTestConfig(withWorkers(2, '  redis_url: redis://127.0.0.1:6379'), {}).warnings), []);
    assert.deepEqual(shared(parseTestConfig(withWorkers(2), { REDIS_URL: 'redis://127.0.0.1:6379' }).warnings), []);
    assert.deepEqual(shared(parseTestConfig(withWorkers(2, '  cluster_nodes: ["redis://127.0.0.1:7000"]'), {}).warnings), []);
  });
});
