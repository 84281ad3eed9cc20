/**
 * The usage arithmetic: readUsage of OpenAI and DeepSeek usage objects, recorded
 * responses and streams, cache hits, and malformed numbers.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { readChatUsage as readUsage } from '../../src/apis/chat.js';
import { fixtureJson, sseEvents } from '../helpers/recordings.js';

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
