/**
 * Config loading (parseConfig / loadConfig) and the usage / cost arithmetic.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { Type } from '@sinclair/typebox';
import { hashKey, mayUse } from '../../src/auth/keys.js';
import { globMatch } from '../../src/util/glob.js';
import { ConfigError, parseConfig, type GatewayConfig, type ProviderKinds } from '../../src/config/load.js';
import { loadTestConfig, parseTestConfig } from '../helpers/config.js';
import { readChatUsage as readUsage } from '../../src/apis/chat.js';
import { costUsd, ZERO_USAGE, type Usage } from '../../src/usage/usage.js';
import { fixtureJson, sseEvents } from '../helpers/recordings.js';

const here = dirname(fileURLToPath(import.meta.url));
/** The repository root, from the compiled `.test-build/test/unit`. */
const ROOT = join(here, '..', '..', '..');
const DEFAULT_PATH = join(ROOT, 'config', 'switchyard.yaml');
const DEFAULT_YAML = readFileSync(DEFAULT_PATH, 'utf8');
const DEMO_HASH = hashKey('sk-switchyard-demo');

/** Runs `fn`, asserts it throws a ConfigError, returns the message. */
function configError(fn: () => unknown): string {
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

function targetsOf(config: GatewayConfig, model: string): { upstream: string; model: string }[] {
  const m = config.models.get(model);
  assert.ok(m, `model ${model} is served`);
  return m.targets.map((t) => ({ upstream: t.upstream.id, model: t.model }));
}

interface MiniOptions {
  upstream?: string;
  models?: string;
  keys?: string;
}

/** A small valid config; parts can be replaced to break one thing at a time. */
function mini(o: MiniOptions = {}): string {
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

describe('parseConfig: the shipped config/switchyard.yaml', () => {
  test('parses with no provider keys: simulator targets only, openai and deepseek off', () => {
    const c = parseTestConfig(DEFAULT_YAML, {}, DEFAULT_PATH);
    assert.equal(c.path, DEFAULT_PATH);
    assert.deepEqual(
      c.upstreamStatus.map((u) => [u.id, u.mode]),
      [
        ['openai', 'off'],
        ['deepseek', 'off'],
        ['anthropic', 'off'],
        ['simulator', 'simulated'],
      ],
    );
    assert.match(c.upstreamStatus[0]!.reason ?? '', /OPENAI_API_KEY/);
    assert.match(c.upstreamStatus[1]!.reason ?? '', /DEEPSEEK_API_KEY/);
    assert.deepEqual([...c.upstreams.keys()], ['simulator']);
    assert.deepEqual([...c.models.keys()], ['gpt-5.5-codex', 'claude-sonnet-4.6', 'deepseek-v3.2', 'deepseek-reasoner']);
    assert.deepEqual(targetsOf(c, 'gpt-5.5-codex'), [{ upstream: 'simulator', model: 'deepseek-reasoner' }]);
    assert.deepEqual(targetsOf(c, 'deepseek-v3.2'), [{ upstream: 'simulator', model: 'deepseek-chat' }]);
    assert.deepEqual(targetsOf(c, 'deepseek-reasoner'), [{ upstream: 'simulator', model: 'deepseek-reasoner' }]);
    assert.deepEqual(c.warnings, []);
    assert.equal(c.models.get('gpt-5.5-codex')!.reasoning, true);
    assert.equal(c.models.get('deepseek-v3.2')!.reasoning, false);
    assert.deepEqual({ ...c.models.get('gpt-5.5-codex')!.price }, { input: 1.25, cached_input: 0.125, cache_write: 1.25, output: 10, reasoning: 10 });
    assert.deepEqual({ ...c.models.get('deepseek-v3.2')!.price }, { input: 0.28, cached_input: 0.028, cache_write: 0.28, output: 0.42, reasoning: 0.42 });
    assert.equal(c.keys.length, 1);
    assert.equal(c.keys[0]!.key_sha256, DEMO_HASH, 'the demo key hash is sha256("sk-switchyard-demo")');
    assert.deepEqual(c.keys[0]!.models, ['*']);
    const sim = c.upstreams.get('simulator')!;
    assert.equal(sim.apiKey, undefined);
    assert.equal(sim.simulator.chunk_delay_ms, 20);
    assert.equal(sim.simulator.first_byte_delay_ms, 150);
    assert.equal(c.server.log_level, 'info');
    assert.equal(c.server.body_limit_bytes, 33554432);
  });

  test('an empty OPENAI_API_KEY counts as unset', () => {
    const c = parseTestConfig(DEFAULT_YAML, { OPENAI_API_KEY: '' });
    assert.equal(c.upstreamStatus.find((u) => u.id === 'openai')!.mode, 'off');
    assert.deepEqual(targetsOf(c, 'gpt-5.5-codex'), [{ upstream: 'simulator', model: 'deepseek-reasoner' }]);
  });

  test('with OPENAI_API_KEY set, gpt-5.5-codex targets openai only (standby simulator dropped)', () => {
    const c = parseTestConfig(DEFAULT_YAML, { OPENAI_API_KEY: 'sk-test-openai-key' });
    assert.deepEqual(targetsOf(c, 'gpt-5.5-codex'), [{ upstream: 'openai', model: 'gpt-5.5-codex' }]);
    const openai = c.models.get('gpt-5.5-codex')!.targets[0]!.upstream;
    assert.equal(openai.apiKey, 'sk-test-openai-key');
    assert.equal(openai.base_url, 'https://api.openai.com/v1');
    assert.equal(openai.timeouts.first_byte_ms, 120000);
    assert.equal(c.upstreamStatus.find((u) => u.id === 'openai')!.mode, 'live');
    assert.equal(c.upstreamStatus.find((u) => u.id === 'deepseek')!.mode, 'off');
    // DeepSeek models still on the simulator.
    assert.deepEqual(targetsOf(c, 'deepseek-v3.2'), [{ upstream: 'simulator', model: 'deepseek-chat' }]);
  });

  test('with both provider keys set no model uses the simulator', () => {
    const c = parseTestConfig(DEFAULT_YAML, { OPENAI_API_KEY: 'sk-a', DEEPSEEK_API_KEY: 'sk-b' });
    assert.deepEqual(targetsOf(c, 'deepseek-v3.2'), [{ upstream: 'deepseek', model: 'deepseek-chat' }]);
    assert.deepEqual(targetsOf(c, 'deepseek-reasoner'), [{ upstream: 'deepseek', model: 'deepseek-reasoner' }]);
    assert.equal(c.upstreams.get('deepseek')!.apiKey, 'sk-b');
  });

  test('loadConfig reads the file and keeps its path', () => {
    const c = loadTestConfig(DEFAULT_PATH, {});
    assert.equal(c.path, DEFAULT_PATH);
    assert.equal(c.models.size, 4);
  });

  test('the result is frozen', () => {
    const c = parseTestConfig(DEFAULT_YAML, {});
    assert.ok(Object.isFrozen(c));
    assert.ok(Object.isFrozen(c.models.get('gpt-5.5-codex')));
    assert.ok(Object.isFrozen(c.upstreams.get('simulator')));
  });
});

describe('parseConfig: defaults and env references', () => {
  test('schema defaults are filled in', () => {
    const c = parseTestConfig(mini(), { UP_KEY: 'k' });
    const up = c.upstreams.get('up')!;
    assert.equal(up.region, 'default');
    assert.deepEqual({ ...up.timeouts }, { connect_ms: 5000, first_byte_ms: 120000, idle_ms: 60000 });
    assert.deepEqual({ ...up.headers }, {});
    assert.equal(c.server.log_level, 'info');
    // cached_input defaults to input.
    assert.deepEqual({ ...c.models.get('m1')!.price }, { input: 1, cached_input: 1, cache_write: 1, output: 2, reasoning: 2 });
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
    const yaml = mini()
      .replace('max_concurrency: 8', 'max_concurrency: lots-please')
      .replace('provider: simulator', 'provider: simulator\n    colour: blue');
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

  test('loadConfig on a missing file throws ConfigError naming the file', () => {
    const missing = join(tmpdir(), `switchyard-missing-${process.pid}-${Date.now()}.yaml`);
    const msg = configError(() => loadTestConfig(missing, {}));
    assert.ok(msg.includes(missing), msg);
  });
});

describe('parseConfig: an api_key value is never printed in an error', () => {
  const SECRET = 'sk-live-S3CR3T-value-0123456789';

  test('api_key of the wrong type', () => {
    const yaml = mini().replace('api_key: ${UP_KEY}', 'api_key: 7777123456789');
    const msg = configError(() => parseTestConfig(yaml, {}));
    assert.ok(msg.includes('/upstreams/0/api_key'), msg);
    assert.ok(!msg.includes('7777123456789'), msg);

    const obj = mini().replace('api_key: ${UP_KEY}', `api_key: { value: ${SECRET} }`);
    const msg2 = configError(() => parseTestConfig(obj, {}));
    assert.ok(msg2.includes('/upstreams/0/api_key'), msg2);
    assert.ok(!msg2.includes(SECRET), msg2);
  });

  test('a literal or resolved api_key next to another error', () => {
    const literal = mini().replace('api_key: ${UP_KEY}', `api_key: ${SECRET}`).replace('max_concurrency: 8', 'max_concurrency: -1');
    const msg = configError(() => parseTestConfig(literal, {}));
    assert.ok(msg.includes('/upstreams/0/max_concurrency'), msg);
    assert.ok(!msg.includes(SECRET), msg);

    const fromEnv = mini().replace('max_concurrency: 8', 'max_concurrency: -1\n    region: 5');
    const msg2 = configError(() => parseTestConfig(fromEnv, { UP_KEY: SECRET }));
    assert.ok(!msg2.includes(SECRET), msg2);
  });

  test('a store.cluster_nodes entry written as {host, port, password}, and a base_url with credentials and a wrong scheme', () => {
    const nodes = `${mini()}\nstore:\n  cluster_nodes:\n    - { host: 10.0.0.1, port: 6379, password: ${SECRET} }\n`;
    const msg = configError(() => parseTestConfig(nodes, {}));
    assert.ok(msg.includes('/store/cluster_nodes/0'), msg);
    assert.ok(!msg.includes(SECRET), msg);
    const url = mini().replace('base_url: http://127.0.0.1:9/v1', `base_url: ftp://admin:${SECRET}@example.com/v1`);
    const msg2 = configError(() => parseTestConfig(url, {}));
    assert.ok(msg2.includes('/upstreams/0/base_url'), msg2);
    assert.ok(!msg2.includes(SECRET), msg2);
    assert.ok(msg2.includes('example.com'), `the rest of the URL is shown: ${msg2}`);
  });

  test('a YAML syntax error on the api_key line', () => {
    const yaml = mini().replace('api_key: ${UP_KEY}', `api_key: ${SECRET}: oops`);
    const msg = configError(() => parseTestConfig(yaml, {}));
    assert.match(msg, /not valid YAML/);
    assert.ok(!msg.includes(SECRET), `the key is printed: ${msg}`);
  });
});

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

describe('usage: readUsage', () => {
  /** The last `usage` object in a recorded stream. */
  function streamUsage(name: string): unknown {
    let usage: unknown = null;
    for (const e of sseEvents(name)) {
      const m = /^data: (\{.*\})\s*$/s.exec(e);
      if (!m) continue;
      const c = JSON.parse(m[1]!) as { usage?: unknown };
      if (c.usage) usage = c.usage;
    }
    assert.ok(usage, `${name} has usage`);
    return usage;
  }

  test('OpenAI non-streaming usage with reasoning tokens (o3-mini)', () => {
    assert.deepEqual(readUsage(fixtureJson('openai-chat-o3-mini-reasoning-tokens.json')['usage']), {
      input: 577,
      cached: 0,
      output: 2320,
      reasoning: 1792,
    });
  });

  test('OpenAI non-streaming usage (gpt-5)', () => {
    assert.deepEqual(readUsage(fixtureJson('openai-chat-gpt5.json')['usage']), { input: 13, cached: 0, output: 11, reasoning: 0 });
  });

  test('DeepSeek non-streaming usage (deepseek-reasoner)', () => {
    assert.deepEqual(readUsage(fixtureJson('deepseek-reasoner.json')['usage']), { input: 12, cached: 0, output: 789, reasoning: 415 });
  });

  test('usage chunks of recorded streams', () => {
    assert.deepEqual(readUsage(streamUsage('openai-chat-stream-text-include-usage.sse')), { input: 53, cached: 0, output: 15, reasoning: 0 });
    assert.deepEqual(readUsage(streamUsage('openai-chat-stream-parallel-tool-calls.sse')), { input: 364, cached: 0, output: 40, reasoning: 0 });
    assert.deepEqual(readUsage(streamUsage('deepseek-reasoner-stream.sse')), { input: 6, cached: 0, output: 212, reasoning: 198 });
    assert.deepEqual(readUsage(streamUsage('openrouter-chat-stream-reasoning-claude.sse')), { input: 43, cached: 0, output: 36, reasoning: 13 });
  });

  test('DeepSeek cache hits: cached_tokens, or prompt_cache_hit_tokens when it is absent', () => {
    // The shape of the DeepSeek tool-call recording's final chunk.
    assert.deepEqual(
      readUsage({
        prompt_tokens: 339,
        completion_tokens: 83,
        total_tokens: 422,
        prompt_tokens_details: { cached_tokens: 320 },
        completion_tokens_details: { reasoning_tokens: 39 },
        prompt_cache_hit_tokens: 320,
        prompt_cache_miss_tokens: 19,
      }),
      { input: 339, cached: 320, output: 83, reasoning: 39 },
    );
    // Older DeepSeek responses: only prompt_cache_hit_tokens.
    assert.deepEqual(readUsage({ prompt_tokens: 100, completion_tokens: 10, prompt_cache_hit_tokens: 64, prompt_cache_miss_tokens: 36 }), {
      input: 100,
      cached: 64,
      output: 10,
      reasoning: 0,
    });
    // OpenAI cached_tokens.
    assert.deepEqual(readUsage({ prompt_tokens: 2000, completion_tokens: 5, prompt_tokens_details: { cached_tokens: 1920 } }), {
      input: 2000,
      cached: 1920,
      output: 5,
      reasoning: 0,
    });
  });

  test('no usage, and malformed numbers', () => {
    assert.equal(readUsage(null), null);
    assert.equal(readUsage(undefined), null);
    assert.equal(readUsage('12 tokens'), null);
    assert.deepEqual(readUsage({}), { input: 0, cached: 0, output: 0, reasoning: 0 });
    // A count that is not one: the usage is not believed (null), so the call is counted by the tokenizer and marked estimated.
    assert.equal(readUsage({ prompt_tokens: -5, completion_tokens: 'many', completion_tokens_details: { reasoning_tokens: Number.NaN } }), null);
    assert.equal(readUsage({ prompt_tokens: 5, completion_tokens: 'many' }), null);
    // Parts never exceed their totals.
    assert.deepEqual(
      readUsage({ prompt_tokens: 10, completion_tokens: 3, prompt_tokens_details: { cached_tokens: 50 }, completion_tokens_details: { reasoning_tokens: 9 } }),
      { input: 10, cached: 10, output: 3, reasoning: 3 },
    );
  });
});

describe('usage: costUsd (USD per 1M tokens)', () => {
  const close = (got: number, want: number) => assert.ok(Math.abs(got - want) < 1e-12, `got ${got}, want ${want}`);
  const PRICE = { input: 1.25, cached_input: 0.125, cache_write: 1.5625, output: 10, reasoning: 10 };

  test('cache writes are priced at cache_write, the rest of the prompt at input', () => {
    // 1M prompt tokens of which 200k read from and 300k written to the cache.
    close(costUsd({ input: 1_000_000, cached: 200_000, output: 0, reasoning: 0, cacheWrite: 300_000 }, PRICE), 0.5 * 1.25 + 0.2 * 0.125 + 0.3 * 1.5625);
  });

  test('a cost has no float noise: it is rounded to the picodollar', () => {
    // 7 input tokens at $0.1 and 3 output at $0.2 per 1M: the float sum is 0.0000013000000000000003.
    assert.equal(String(costUsd({ input: 7, cached: 0, output: 3, reasoning: 0 }, { ...PRICE, input: 0.1, output: 0.2 })), '0.0000013');
  });

  test('one million tokens of each kind cost the list price', () => {
    close(costUsd({ input: 1_000_000, cached: 0, output: 0, reasoning: 0 }, PRICE), 1.25);
    close(costUsd({ input: 1_000_000, cached: 1_000_000, output: 0, reasoning: 0 }, PRICE), 0.125);
    close(costUsd({ input: 0, cached: 0, output: 1_000_000, reasoning: 0 }, PRICE), 10);
    assert.equal(costUsd(ZERO_USAGE, PRICE), 0);
  });

  test('uncached input, cached input and output are priced separately', () => {
    // 800k uncached * 1.25 + 200k cached * 0.125 + 500k output * 10, per 1M.
    close(costUsd({ input: 1_000_000, cached: 200_000, output: 500_000, reasoning: 0 }, PRICE), 1 + 0.025 + 5);
  });

  test('reasoning tokens are part of output and not billed twice', () => {
    const u: Usage = { input: 100, cached: 0, output: 1000, reasoning: 0 };
    const r: Usage = { ...u, reasoning: 900 };
    close(costUsd(r, PRICE), costUsd(u, PRICE));
    close(costUsd(r, PRICE), (100 * 1.25 + 1000 * 10) / 1e6);
  });

  test('reasoning tokens are billed at the reasoning price, the rest of output at the output price', () => {
    const r: Usage = { input: 100, cached: 20, output: 1000, reasoning: 900 };
    close(costUsd(r, { ...PRICE, reasoning: 30 }), (80 * 1.25 + 20 * 0.125 + 100 * 10 + 900 * 30) / 1e6);
  });

  test('recorded usage at the shipped config prices', () => {
    const c = parseTestConfig(DEFAULT_YAML, {});
    const codex = c.models.get('gpt-5.5-codex')!.price;
    const v32 = c.models.get('deepseek-v3.2')!.price;
    // DeepSeek tool-call recording: 19 uncached + 320 cached input, 83 output.
    const toolCall = readUsage({ prompt_tokens: 339, completion_tokens: 83, prompt_tokens_details: { cached_tokens: 320 } })!;
    close(costUsd(toolCall, codex), (19 * 1.25 + 320 * 0.125 + 83 * 10) / 1e6);
    close(costUsd(toolCall, v32), (19 * 0.28 + 320 * 0.028 + 83 * 0.42) / 1e6);
    const o3 = readUsage(fixtureJson('openai-chat-o3-mini-reasoning-tokens.json')['usage'])!;
    close(costUsd(o3, codex), (577 * 1.25 + 2320 * 10) / 1e6);
  });

  test('cached_input defaults to the input price', () => {
    const c = parseTestConfig(mini(), {});
    const price = c.models.get('m1')!.price;
    close(costUsd({ input: 1_000_000, cached: 600_000, output: 0, reasoning: 0 }, price), 1);
  });
});

describe('keys: model globs', () => {
  test('exact names, prefix, suffix and middle globs, and `*`', () => {
    const cases: [string, string, boolean][] = [
      ['gpt-test', 'gpt-test', true],
      ['gpt-test', 'gpt-test2', false],
      ['gpt-*', 'gpt-5.5-codex', true],
      ['gpt-*', 'gpt-', true],
      ['gpt-*', 'deepseek-v3.2', false],
      ['*-reasoner', 'deepseek-reasoner', true],
      ['*-reasoner', 'deepseek-reasoner-2', false],
      ['*', 'anything/with.dots', true],
      ['a*b*c', 'axxbyyc', true],
      ['a*b*c', 'acb', false],
      ['ab*ba', 'aba', false],
      ['g?t', 'gpt', false],
    ];
    for (const [p, n, want] of cases) assert.equal(globMatch(p, n), want, `${p} ~ ${n}`);
    assert.equal(mayUse({ name: 't', models: ['gpt-*', 'deepseek-reasoner'] }, 'deepseek-reasoner'), true);
    assert.equal(mayUse({ name: 't', models: ['gpt-*'] }, 'deepseek-reasoner'), false);
  });
});
