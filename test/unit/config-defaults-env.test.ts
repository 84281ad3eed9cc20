/**
 * Config loading (parseConfig): schema defaults, ${VAR} / ${VAR:-default} references, and
 * models left with no live target.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { parseTestConfig } from '../helpers/config.js';
import { mini } from '../helpers/config-fixtures.js';

describe('parseConfig: defaults and env references', () => {
  test('schema defaults are filled in', () => {
    const c = parseTestConfig(mini(), { UP_KEY: 'k' });
    const up = c.upstreams.get('up')!;
    assert.equal(up.region, 'default');
    assert.deepEqual({ ...up.timeouts }, { connect_ms: 5000, first_byte_ms: 120000, idle_ms: 60000 });
    assert.deepEqual({ ...up.headers }, {});
    assert.equal(c.server.log_level, 'info');
    // cached_input defaults to input.
    assert.deepEqual({ ...c.models.get('m1')!.price }, { input: 1, cached_input: 1, cache_write: 1, cache_write_1h: 1, output: 2, reasoning: 2 });
    assert.deepEqual(c.keys[0]!.models, ['*']);
  });

  test('${VAR} and ${VAR:-default} are resolved in any string', () => {
    const yaml = mini({
      upstream: `  - id: up
    provider: openai-compatible
    base_url: \${SY_BASE:-http://127.0.0.1:9}/v1
    api_key: \${UP_KEY}
    region: \${SY_REGION:-eu}
    headers: { OpenAI-Organization: "\${SY_ORG}" }`,
      models: `  - name: m1
    price: { input: 1, output: 2 }
    targets: [{ upstream: up, model: x }]`,
    });
    const c = parseTestConfig(yaml, { UP_KEY: 'sk-up', SY_ORG: 'org-123' });
    const up = c.upstreams.get('up')!;
    assert.equal(up.base_url, 'http://127.0.0.1:9/v1');
    assert.equal(up.region, 'eu');
    assert.equal(up.headers['OpenAI-Organization'], 'org-123');
    assert.equal(up.apiKey, 'sk-up');
    const c2 = parseTestConfig(yaml, { UP_KEY: 'sk-up', SY_ORG: 'org-123', SY_REGION: 'ap', SY_BASE: 'https://example.test' });
    assert.equal(c2.upstreams.get('up')!.region, 'ap');
    assert.equal(c2.upstreams.get('up')!.base_url, 'https://example.test/v1');
  });

  test('a model with no live target is not served and gives a warning', () => {
    const yaml = mini({
      models: `  - name: m1
    price: { input: 1, output: 2 }
    targets: [{ upstream: up, model: x }]
  - name: m2
    price: { input: 1, output: 2 }
    targets: [{ upstream: sim, model: y }]`,
    });
    const c = parseTestConfig(yaml, {});
    assert.deepEqual([...c.models.keys()], ['m2']);
    assert.equal(c.warnings.length, 1);
    assert.match(c.warnings[0]!, /m1/);
  });
});
