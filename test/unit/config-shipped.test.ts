/**
 * Config loading (parseConfig / loadConfig) of the shipped config/switchyard.yaml: which
 * upstreams and models it serves with and without provider keys.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { loadTestConfig, parseTestConfig } from '../helpers/config.js';
import { DEFAULT_PATH, DEFAULT_YAML, DEMO_HASH, targetsOf } from '../helpers/config-fixtures.js';

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
    assert.deepEqual(
      { ...c.models.get('gpt-5.5-codex')!.price },
      { input: 1.25, cached_input: 0.125, cache_write: 1.25, cache_write_1h: 1.25, output: 10, reasoning: 10 },
    );
    assert.deepEqual(
      { ...c.models.get('deepseek-v3.2')!.price },
      { input: 0.28, cached_input: 0.028, cache_write: 0.28, cache_write_1h: 0.28, output: 0.42, reasoning: 0.42 },
    );
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
