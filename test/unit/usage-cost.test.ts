/**
 * The cost arithmetic: costUsd (USD per 1M tokens) of input, cached input, cache writes,
 * output and reasoning, at given and at the shipped config's prices.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { readChatUsage as readUsage } from '../../src/apis/chat.js';
import { costUsd, ZERO_USAGE, type Usage } from '../../src/usage/usage.js';
import { parseTestConfig } from '../helpers/config.js';
import { fixtureJson } from '../helpers/recordings.js';
import { DEFAULT_YAML, mini } from '../helpers/config-fixtures.js';

describe('usage: costUsd (USD per 1M tokens)', () => {
  const close = (got: number, want: number) => assert.ok(Math.abs(got - want) < 1e-12, `got ${got}, want ${want}`);
  const PRICE = { input: 1.25, cached_input: 0.125, cache_write: 1.5625, cache_write_1h: 2.5, output: 10, reasoning: 10 };

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
