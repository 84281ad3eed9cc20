/**
 * Config loading (parseConfig / loadConfig) errors: each names the bad path and value,
 * and every problem is listed.
 */
import assert from 'node:assert/strict';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { loadTestConfig, parseTestConfig } from '../helpers/config.js';
import { DEMO_HASH, configError, mini, targetsOf } from '../helpers/config-fixtures.js';

describe('parseConfig: errors name the bad path and value', () => {
  test('wrong type for max_concurrency', () => {
    const yaml = mini().replace('max_concurrency: 8', 'max_concurrency: lots-please');
    const msg = configError(() => parseTestConfig(yaml, { UP_KEY: 'k' }, 'my.yaml'));
    assert.ok(msg.includes('my.yaml'), msg);
    assert.ok(msg.includes('/upstreams/0/max_concurrency'), msg);
    assert.ok(msg.includes('lots-please'), msg);
  });

  test('one key_sha256 under two names is refused, naming the second and the first', () => {
    const yaml = mini({ keys: `  - name: k\n    key_sha256: ${DEMO_HASH}\n  - name: k-again\n    key_sha256: ${DEMO_HASH}` });
    const msg = configError(() => parseTestConfig(yaml, { UP_KEY: 'k' }));
    assert.match(msg, /\/keys\/1\/key_sha256: the same key as "k"/);
    assert.ok(!msg.includes(DEMO_HASH), 'the hash is not printed');
  });

  test('out-of-range max_concurrency', () => {
    const yaml = mini().replace('max_concurrency: 8', 'max_concurrency: 123456789');
    const msg = configError(() => parseTestConfig(yaml, { UP_KEY: 'k' }));
    assert.ok(msg.includes('/upstreams/0/max_concurrency'), msg);
    assert.ok(msg.includes('123456789'), msg);
  });

  test('an unknown field', () => {
    const yaml = mini().replace('max_concurrency: 8', 'max_concurency: 8');
    const msg = configError(() => parseTestConfig(yaml, { UP_KEY: 'k' }));
    assert.ok(msg.includes('/upstreams/0'), msg);
    assert.ok(msg.includes('max_concurency'), msg);
  });

  test('a missing required field', () => {
    const yaml = mini({ models: `  - name: m1\n    targets: [{ upstream: sim, model: y }]` });
    const msg = configError(() => parseTestConfig(yaml, {}));
    assert.ok(msg.includes('/models/0'), msg);
    assert.ok(msg.includes('price'), msg);
  });

  test('a model cache_breakpoints other than auto or off names the path and both values; the default is auto', () => {
    const bad = mini().replace('    price: { input: 1, output: 2 }', '    price: { input: 1, output: 2 }\n    cache_breakpoints: always');
    const msg = configError(() => parseTestConfig(bad, { UP_KEY: 'k' }));
    assert.ok(msg.includes('/models/0/cache_breakpoints'), msg);
    assert.ok(msg.includes('always'), msg);
    assert.ok(msg.includes('auto') && msg.includes('off'), msg);
    assert.equal(parseTestConfig(mini(), { UP_KEY: 'k' }).models.get('m1')!.cacheBreakpoints, 'auto');
    const off = mini().replace('    price: { input: 1, output: 2 }', '    price: { input: 1, output: 2 }\n    cache_breakpoints: off');
    assert.equal(parseTestConfig(off, { UP_KEY: 'k' }).models.get('m1')!.cacheBreakpoints, 'off');
  });

  test('an unknown provider kind', () => {
    const yaml = mini({ upstream: `  - id: sim\n    provider: anthropic-native` });
    const msg = configError(() => parseTestConfig(yaml, {}));
    assert.ok(msg.includes('/upstreams/0/provider'), msg);
    assert.ok(msg.includes('anthropic-native'), msg);
  });

  test('an unknown upstream in a target', () => {
    const yaml = mini({
      models: `  - name: m1
    price: { input: 1, output: 2 }
    targets:
      - { upstream: sim, model: y }
      - { upstream: nowhere-upstream, model: z }`,
    });
    const msg = configError(() => parseTestConfig(yaml, { UP_KEY: 'k' }));
    assert.ok(msg.includes('/models/0/targets/1/upstream'), msg);
    assert.ok(msg.includes('nowhere-upstream'), msg);
  });

  test('a duplicate model', () => {
    const yaml = mini({
      models: `  - name: m1
    price: { input: 1, output: 2 }
    targets: [{ upstream: sim, model: y }]
  - name: twin-model
    price: { input: 1, output: 2 }
    targets: [{ upstream: sim, model: y }]
  - name: twin-model
    price: { input: 1, output: 2 }
    targets: [{ upstream: sim, model: z }]`,
    });
    const msg = configError(() => parseTestConfig(yaml, { UP_KEY: 'k' }));
    assert.ok(msg.includes('/models/2/name'), msg);
    assert.ok(msg.includes('twin-model'), msg);
  });

  test('a duplicate model is an error even when its upstream is off', () => {
    // Whether the provider key is set must not decide whether the file is valid.
    const yaml = mini({
      models: `  - name: twin-model
    price: { input: 1, output: 2 }
    targets: [{ upstream: up, model: y }]
  - name: twin-model
    price: { input: 1, output: 2 }
    targets: [{ upstream: up, model: z }]`,
    });
    assert.doesNotThrow(() => parseTestConfig(mini(), {}), 'the base config is valid without UP_KEY');
    const withKey = configError(() => parseTestConfig(yaml, { UP_KEY: 'k' }));
    assert.ok(withKey.includes('/models/1/name'), withKey);
    const msg = configError(() => parseTestConfig(yaml, {}));
    assert.ok(msg.includes('/models/1/name'), msg);
    assert.ok(msg.includes('twin-model'), msg);
  });

  test('a duplicate upstream id', () => {
    const yaml = mini({ upstream: `  - id: sim\n    provider: simulator\n  - id: sim\n    provider: simulator` });
    const msg = configError(() => parseTestConfig(yaml, {}));
    assert.ok(msg.includes('/upstreams/1/id'), msg);
    assert.ok(msg.includes('"sim"'), msg);
  });

  test('openai-compatible without base_url', () => {
    const yaml = mini({
      upstream: `  - id: up\n    provider: openai-compatible\n    api_key: x\n  - id: sim\n    provider: simulator`,
    });
    const msg = configError(() => parseTestConfig(yaml, {}));
    assert.ok(msg.includes('/upstreams/0/base_url'), msg);
  });

  test('invalid YAML', () => {
    const msg = configError(() => parseTestConfig('upstreams:\n  - id: a\n   provider: [unclosed\n', {}, 'broken.yaml'));
    assert.ok(msg.includes('broken.yaml'), msg);
    assert.match(msg, /not valid YAML/);
  });

  test('a document that is not a mapping', () => {
    const msg = configError(() => parseTestConfig('- just\n- a list\n', {}, 'list.yaml'));
    assert.ok(msg.includes('list.yaml'), msg);
  });

  test('every problem is listed, not only the first', () => {
    const yaml = mini().replace('max_concurrency: 8', 'max_concurrency: lots-please').replace('provider: simulator', 'provider: simulator\n    colour: blue');
    const msg = configError(() => parseTestConfig(yaml, { UP_KEY: 'k' }));
    assert.ok(msg.includes('/upstreams/0/max_concurrency'), msg);
    assert.ok(msg.includes('colour'), msg);
  });

  test('${VAR} unset outside api_key is an error naming the path and the variable', () => {
    const yaml = mini().replace('max_concurrency: 8', 'max_concurrency: 8\n    region: ${SY_UNSET_REGION}');
    const msg = configError(() => parseTestConfig(yaml, { UP_KEY: 'k' }));
    assert.ok(msg.includes('/upstreams/0/region'), msg);
    assert.ok(msg.includes('SY_UNSET_REGION'), msg);

    const hdr = mini().replace('max_concurrency: 8', 'max_concurrency: 8\n    headers: { X-Org: "${SY_UNSET_ORG}" }');
    const msg2 = configError(() => parseTestConfig(hdr, { UP_KEY: 'k' }));
    assert.ok(msg2.includes('/upstreams/0/headers/X-Org'), msg2);
    assert.ok(msg2.includes('SY_UNSET_ORG'), msg2);
  });

  test('${VAR} unset in base_url names the variable', () => {
    const yaml = mini().replace('base_url: http://127.0.0.1:9/v1', 'base_url: ${SY_UNSET_BASE_URL}');
    const msg = configError(() => parseTestConfig(yaml, { UP_KEY: 'k' }));
    assert.ok(msg.includes('/upstreams/0/base_url'), msg);
    assert.ok(msg.includes('SY_UNSET_BASE_URL'), `the unset variable is named: ${msg}`);
  });

  test('${VAR} unset in api_key only switches that upstream off', () => {
    const c = parseTestConfig(mini(), {});
    assert.equal(c.upstreamStatus.find((u) => u.id === 'up')!.mode, 'off');
    assert.match(c.upstreamStatus.find((u) => u.id === 'up')!.reason!, /UP_KEY/);
    assert.deepEqual(targetsOf(c, 'm1'), [{ upstream: 'sim', model: 'sim-m1' }]);
  });

  test('context_window is a positive integer; context_fallback names a declared model with a larger window', () => {
    const models = (m1: string, m2 = '') =>
      mini({
        models: `  - name: m1\n    price: { input: 1, output: 2 }\n${m1}    targets: [{ upstream: up, model: real-m1 }]\n  - name: m2\n    price: { input: 1, output: 2 }\n${m2}    targets: [{ upstream: up, model: real-m2 }]`,
      });
    for (const bad of ['0', '-5', '1.5', 'lots']) {
      const msg = configError(() => parseTestConfig(models(`    context_window: ${bad}\n`), { UP_KEY: 'k' }));
      assert.ok(msg.includes('/models/0/context_window'), msg);
    }
    const unknown = configError(() => parseTestConfig(models('    context_window: 1000\n    context_fallback: m9\n'), { UP_KEY: 'k' }));
    assert.match(unknown, /\/models\/0\/context_fallback: unknown model "m9"/);
    const noWindow = configError(() => parseTestConfig(models('    context_fallback: m2\n', '    context_window: 2000\n'), { UP_KEY: 'k' }));
    assert.match(noWindow, /\/models\/0\/context_fallback: model "m1" names a context fallback but declares no context_window/);
    const smaller = configError(() =>
      parseTestConfig(models('    context_window: 1000\n    context_fallback: m2\n', '    context_window: 1000\n'), { UP_KEY: 'k' }),
    );
    assert.match(smaller, /\/models\/0\/context_fallback: model "m2" must declare a context_window larger than this model's 1000 tokens \(it declares 1000\)/);
    const none = configError(() => parseTestConfig(models('    context_window: 1000\n    context_fallback: m2\n'), { UP_KEY: 'k' }));
    assert.match(none, /\(it declares none\)/);
    const c = parseTestConfig(models('    context_window: 1000\n    context_fallback: m2\n', '    context_window: 200000\n'), { UP_KEY: 'k' });
    assert.equal(c.models.get('m1')!.contextWindow, 1000);
    assert.equal(c.models.get('m1')!.contextFallback, 'm2');
    assert.equal(c.models.get('m2')!.contextWindow, 200000);
    assert.equal(c.models.get('m2')!.contextFallback, undefined);
  });

  test('loadConfig on a missing file throws ConfigError naming the file', () => {
    const missing = join(tmpdir(), `switchyard-missing-${process.pid}-${Date.now()}.yaml`);
    const msg = configError(() => loadTestConfig(missing, {}));
    assert.ok(msg.includes(missing), msg);
  });
});
