/**
 * Prompt-cache prices and counts: reads, 5-minute and 1-hour writes as Anthropic reports them
 * (`cache_creation.ephemeral_5m_input_tokens` / `ephemeral_1h_input_tokens`, in one answer and
 * folded from a stream), priced at `cached_input`, `cache_write` and `cache_write_1h` (USD per
 * 1M tokens), and the defaults of those prices by provider kind.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { foldAnthropicUsage, readAnthropicUsage } from '../../src/apis/messages.js';
import { cacheWrites, costUsd } from '../../src/usage/usage.js';
import { fullPrice } from '../../src/config/models.js';
import { tpmTokens } from '../../src/limits/index.js';
import { parseTestConfig } from '../helpers/config.js';
import { anthropicConfigYaml } from '../helpers/gateway.js';
import { fixtureJson } from '../helpers/recordings.js';

const close = (got: number, want: number) => assert.ok(Math.abs(got - want) < 1e-12, `got ${got}, want ${want}`);

/** A recorded answer's usage (anthropic-messages-text.json) with cache traffic in its counts. */
function cachedUsage(): Record<string, unknown> {
  const u = structuredClone(fixtureJson('anthropic-messages-text.json')['usage']) as Record<string, unknown>;
  return {
    ...u,
    cache_read_input_tokens: 4000,
    cache_creation_input_tokens: 3000,
    cache_creation: { ephemeral_5m_input_tokens: 1000, ephemeral_1h_input_tokens: 2000 },
  };
}

describe('usage: Anthropic cache reads and writes by lifetime', () => {
  test('cache_creation splits the writes into 5-minute and 1-hour', () => {
    const u = readAnthropicUsage(cachedUsage())!;
    assert.deepEqual(u, { input: 12 + 4000 + 3000, cached: 4000, output: 29, reasoning: 0, cacheWrite: 3000, cacheWrite1h: 2000 });
    assert.deepEqual(cacheWrites(u), { m5: 1000, h1: 2000 });
  });

  test('without cache_creation every write is a 5-minute one', () => {
    const u = readAnthropicUsage({ input_tokens: 5, output_tokens: 1, cache_creation_input_tokens: 700 })!;
    assert.equal(u.cacheWrite1h, undefined);
    assert.deepEqual(cacheWrites(u), { m5: 700, h1: 0 });
  });

  test('counts that are not counts read as 0; a 1-hour count past the writes is cut to them', () => {
    const u = readAnthropicUsage({
      input_tokens: 5,
      output_tokens: 1,
      cache_creation_input_tokens: 100,
      cache_creation: { ephemeral_5m_input_tokens: -3, ephemeral_1h_input_tokens: 250 },
    })!;
    assert.deepEqual(cacheWrites(u), { m5: 0, h1: 100 });
    const bad = readAnthropicUsage({ input_tokens: 5, output_tokens: 1, cache_creation: { ephemeral_1h_input_tokens: 'x' } })!;
    assert.deepEqual(cacheWrites(bad), { m5: 0, h1: 0 });
  });

  test("a stream's cache_creation is folded from message_start (message_delta repeats no split)", () => {
    const counts: Record<string, number> = {};
    foldAnthropicUsage(counts, cachedUsage());
    foldAnthropicUsage(counts, { input_tokens: 12, cache_creation_input_tokens: 3000, cache_read_input_tokens: 4000, output_tokens: 282 });
    assert.deepEqual(readAnthropicUsage(counts), { input: 7012, cached: 4000, output: 282, reasoning: 0, cacheWrite: 3000, cacheWrite1h: 2000 });
  });
});

describe('usage: costUsd with cache prices (USD per 1M tokens)', () => {
  const PRICE = { input: 3, cached_input: 0.3, cache_write: 3.75, cache_write_1h: 6, output: 15, reasoning: 15 };

  test('uncached input, reads, 5-minute and 1-hour writes and output are each priced at their own price', () => {
    const u = readAnthropicUsage(cachedUsage())!;
    close(costUsd(u, PRICE), (12 * 3 + 4000 * 0.3 + 1000 * 3.75 + 2000 * 6 + 29 * 15) / 1e6);
  });

  test('one million tokens of each cache kind cost the list price', () => {
    close(costUsd({ input: 1e6, cached: 1e6, output: 0, reasoning: 0 }, PRICE), 0.3);
    close(costUsd({ input: 1e6, cached: 0, output: 0, reasoning: 0, cacheWrite: 1e6 }, PRICE), 3.75);
    close(costUsd({ input: 1e6, cached: 0, output: 0, reasoning: 0, cacheWrite: 1e6, cacheWrite1h: 1e6 }, PRICE), 6);
  });
});

describe('config: cache price defaults by provider kind', () => {
  test('anthropic: reads 0.1x, 5-minute writes 1.25x, 1-hour writes 2x input', () => {
    assert.deepEqual(
      { ...fullPrice({ input: 3, output: 15 }, 'anthropic') },
      { input: 3, output: 15, cached_input: 0.30000000000000004, cache_write: 3.75, cache_write_1h: 6, reasoning: 15 },
    );
  });

  test('other kinds: reads and writes at input, 1-hour writes at cache_write', () => {
    assert.deepEqual(
      { ...fullPrice({ input: 1.25, output: 10 }, 'openai-compatible') },
      { input: 1.25, output: 10, cached_input: 1.25, cache_write: 1.25, cache_write_1h: 1.25, reasoning: 10 },
    );
    assert.equal(fullPrice({ input: 1, output: 2, cache_write: 1.5 }, undefined).cache_write_1h, 1.5);
  });

  test('a configured price wins over the default; targets take their own upstream kind', () => {
    const yaml = anthropicConfigYaml('http://127.0.0.1:9').replace('cache_write: 3.75,', 'cache_write: 3.75, cache_write_1h: 7,');
    const t = parseTestConfig(yaml, { TEST_UPSTREAM_KEY: 'k' }).models.get('claude-test')!.targets[0]!;
    assert.equal(t.price.cache_write_1h, 7);
    const bare = anthropicConfigYaml('http://127.0.0.1:9').replace(/price: \{[^}]*\}/, 'price: { input: 3, output: 15 }');
    const m = parseTestConfig(bare, { TEST_UPSTREAM_KEY: 'k' }).models.get('claude-test')!;
    close(m.price.cached_input, 0.3);
    assert.equal(m.targets[0]!.price.cache_write_1h, 6);
  });
});

describe("limits: what a cached prompt counts against a key's tpm", () => {
  const u = { input: 7012, cached: 4000, output: 29, reasoning: 0, cacheWrite: 3000 };

  test('anthropic leaves cache reads out (cache-aware ITPM); writes count', () => {
    assert.deepEqual(tpmTokens(u, 'anthropic'), { input: 3012, output: 29 });
  });

  test('other kinds (OpenAI counts cached tokens toward TPM) and no upstream count the whole prompt', () => {
    assert.deepEqual(tpmTokens(u, 'openai-compatible'), { input: 7012, output: 29 });
    assert.deepEqual(tpmTokens(u, null), { input: 7012, output: 29 });
  });
});
