/**
 * Config loading (parseConfig) with the provider kinds it is handed: unknown kinds, a
 * kind's option schema, and needsBaseUrl / simulated.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Type } from '@sinclair/typebox';
import { parseConfig, type ProviderKinds } from '../../src/config/load.js';
import { DEMO_HASH, configError, mini } from '../helpers/config-fixtures.js';

describe('parseConfig: the provider kinds it is handed', () => {
  /** One upstream of kind `k` (options as given) serving model `m`. */
  const oneKind = (options = '{}', baseUrl = '') => `
upstreams:
  - id: u
    provider: k
    options: ${options}${baseUrl ? `\n    base_url: ${baseUrl}` : ''}
models:
  - name: m
    price: { input: 1, output: 2 }
    targets: [{ upstream: u, model: x }]
keys:
  - name: k
    key_sha256: ${DEMO_HASH}
`;
  const withOptions: ProviderKinds = {
    k: { needsBaseUrl: false, options: Type.Object({ depth: Type.Integer({ minimum: 1, default: 3 }) }, { additionalProperties: false }) },
  };

  test('a kind it is not handed is unknown, and the error names the kinds it knows', () => {
    const msg = configError(() => parseConfig(mini(), { kinds: { simulator: { needsBaseUrl: false } }, env: { UP_KEY: 'k' } }));
    assert.match(msg, /\/upstreams\/0\/provider: unknown provider kind "openai-compatible" \(known: simulator\)/);
  });

  test("a kind's option schema applies its defaults and reports bad options at their path", () => {
    const c = parseConfig(oneKind(), { kinds: withOptions, env: {} });
    assert.deepEqual(c.upstreams.get('u')!.options, { depth: 3 });
    const msg = configError(() => parseConfig(oneKind('{ depth: 0 }'), { kinds: withOptions, env: {} }));
    assert.ok(msg.includes('/upstreams/0/options/depth'), msg);
    const none = configError(() => parseConfig(oneKind('{ depth: 2 }'), { kinds: { k: { needsBaseUrl: false } }, env: {} }));
    assert.ok(none.includes('/upstreams/0/options: provider "k" takes no options'), none);
  });

  test('needsBaseUrl and simulated come from the kind', () => {
    const msg = configError(() => parseConfig(oneKind(), { kinds: { k: { needsBaseUrl: true } }, env: {} }));
    assert.ok(msg.includes('/upstreams/0/base_url: required for provider "k"'), msg);
    const live = parseConfig(oneKind('{}', 'http://127.0.0.1:9/v1'), { kinds: { k: { needsBaseUrl: true } }, env: {}, path: 'p.yaml' });
    assert.deepEqual([live.path, live.upstreamStatus[0]!.mode], ['p.yaml', 'live']);
    const sim = parseConfig(oneKind(), { kinds: { k: { needsBaseUrl: false, simulated: true } }, env: {} });
    assert.deepEqual([sim.path, sim.upstreamStatus[0]!.mode], ['<inline>', 'simulated']);
  });
});
