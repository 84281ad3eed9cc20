/**
 * The prompt-cache lifetime a request asks for (src/apis/cache-lifetime.ts), which a
 * session's pin lasts at least: OpenAI's `prompt_cache_retention` and
 * `prompt_cache_options.ttl`, Anthropic's `cache_control.ttl` on any breakpoint.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { lifetimeMs, messagesCacheLifetimeMs, openaiCacheLifetimeMs } from '../../src/apis/cache-lifetime.js';

describe('cache lifetimes', () => {
  test('durations: s, m, h; at most a day; anything else is none', () => {
    assert.deepEqual(['90s', '5m', '30m', '1h', '24h', '48h', 'in_memory', '1d', '', 5, null].map(lifetimeMs), [
      90_000,
      300_000,
      1_800_000,
      3_600_000,
      86_400_000,
      86_400_000,
      undefined,
      undefined,
      undefined,
      undefined,
      undefined,
    ]);
  });

  test('OpenAI: the longer of prompt_cache_retention and prompt_cache_options.ttl', () => {
    assert.equal(openaiCacheLifetimeMs({ prompt_cache_retention: '24h' }), 86_400_000);
    assert.equal(openaiCacheLifetimeMs({ prompt_cache_options: { ttl: '30m' } }), 1_800_000);
    assert.equal(openaiCacheLifetimeMs({ prompt_cache_retention: 'in_memory', prompt_cache_options: { ttl: '30m' } }), 1_800_000);
    assert.equal(openaiCacheLifetimeMs({ prompt_cache_key: 'k' }), undefined);
  });

  test('Messages: the longest breakpoint, 5 minutes when a marker names no ttl', () => {
    const mark = (ttl?: string) => ({ type: 'ephemeral', ...(ttl ? { ttl } : {}) });
    assert.equal(messagesCacheLifetimeMs({ messages: [{ role: 'user', content: 'hi' }] }), undefined);
    assert.equal(messagesCacheLifetimeMs({ messages: [{ role: 'user', content: [{ type: 'text', text: 'hi', cache_control: mark() }] }] }), 300_000);
    assert.equal(
      messagesCacheLifetimeMs({
        tools: [{ name: 't', input_schema: {}, cache_control: mark('1h') }],
        messages: [{ role: 'user', content: [{ type: 'text', text: 'hi', cache_control: mark() }] }],
      }),
      3_600_000,
    );
    assert.equal(messagesCacheLifetimeMs({ system: [{ type: 'text', text: 's', cache_control: mark('1h') }], messages: [] }), 3_600_000);
    assert.equal(messagesCacheLifetimeMs({ cache_control: mark('1h'), messages: 'not a list' }), 3_600_000);
  });
});
