/**
 * Providers' rate-limit headers read into windows, and when a window counts as spent. The
 * header sets are the documented ones (OpenAI "Rate limits", Anthropic "Rate limits"; the
 * OpenAI values as sent on a chat completion, Azure's -1 for unknown).
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { anthropicRateWindows } from '../../src/providers/anthropic/rate-limits.js';
import { openAIRateWindows, parseGoDuration } from '../../src/providers/openai-compatible/rate-limits.js';
import { spentForMs } from '../../src/router/rate-windows.js';

describe('OpenAI-style x-ratelimit-* headers', () => {
  test('Go durations and plain seconds', () => {
    assert.equal(parseGoDuration('1s'), 1000);
    assert.equal(parseGoDuration('12ms'), 12);
    assert.equal(parseGoDuration('6m0s'), 360_000);
    assert.equal(parseGoDuration('1h2m3.5s'), 3_723_500);
    assert.equal(parseGoDuration('20'), 20_000);
    assert.equal(parseGoDuration('0.5'), 500);
    for (const bad of ['', 'soon', '5x', '-1s', '1s junk']) assert.equal(parseGoDuration(bad), null, bad);
  });

  test('a chat completion answer: both windows with their sizes and resets', () => {
    const w = openAIRateWindows({
      'x-ratelimit-limit-requests': '5000',
      'x-ratelimit-remaining-requests': '4999',
      'x-ratelimit-reset-requests': '12ms',
      'x-ratelimit-limit-tokens': '160000',
      'x-ratelimit-remaining-tokens': '159976',
      'x-ratelimit-reset-tokens': '9ms',
    });
    assert.deepEqual(w, { requests: { limit: 5000, remaining: 4999, resetInMs: 12 }, tokens: { limit: 160000, remaining: 159976, resetInMs: 9 } });
    assert.equal(spentForMs(w, 10_000), 0, 'plenty left');
  });

  test("Azure's -1 (unknown) and absent headers give no window", () => {
    assert.deepEqual(openAIRateWindows({ 'x-ratelimit-limit-tokens': '-1', 'x-ratelimit-remaining-tokens': '-1', 'x-ratelimit-reset-tokens': '0' }), {});
    assert.deepEqual(openAIRateWindows({ 'content-type': 'application/json' }), {});
  });

  test('requests spent: the account has no room until the window resets (capped)', () => {
    const w = openAIRateWindows({ 'x-ratelimit-limit-requests': '60', 'x-ratelimit-remaining-requests': '0', 'x-ratelimit-reset-requests': '2s' });
    assert.equal(spentForMs(w, 10_000), 2000);
    assert.equal(spentForMs(w, 500), 500, 'never longer than the cap');
    const one = openAIRateWindows({ 'x-ratelimit-limit-requests': '60', 'x-ratelimit-remaining-requests': '1', 'x-ratelimit-reset-requests': '2s' });
    assert.equal(spentForMs(one, 10_000), 0, 'one request left of 60 is room');
  });

  test('tokens at or below 5% of the window count as spent; the later reset wins', () => {
    const h = {
      'x-ratelimit-limit-requests': '500',
      'x-ratelimit-remaining-requests': '30',
      'x-ratelimit-reset-requests': '1s',
      'x-ratelimit-limit-tokens': '200000',
      'x-ratelimit-remaining-tokens': '9000',
      'x-ratelimit-reset-tokens': '4s',
    };
    assert.equal(spentForMs(openAIRateWindows(h), 10_000), 4000);
    assert.equal(spentForMs(openAIRateWindows({ ...h, 'x-ratelimit-remaining-tokens': '10001' }), 10_000), 0);
    assert.equal(
      spentForMs(openAIRateWindows({ ...h, 'x-ratelimit-remaining-tokens': '10001', 'x-ratelimit-remaining-requests': '5' }), 10_000),
      1000,
      '5 of 500 requests (1%) is spent',
    );
    assert.equal(spentForMs(openAIRateWindows({ ...h, 'x-ratelimit-remaining-requests': '0' }), 10_000), 4000, 'both spent: the later reset');
  });

  test('a spent window with no size or reset: 0 left is spent, for 1 s', () => {
    assert.equal(spentForMs(openAIRateWindows({ 'x-ratelimit-remaining-requests': '0' }), 10_000), 1000);
    assert.equal(spentForMs(openAIRateWindows({ 'x-ratelimit-remaining-requests': '2' }), 10_000), 0);
  });
});

describe('Anthropic anthropic-ratelimit-* headers', () => {
  const now = Date.parse('2026-12-02T10:00:00Z');
  test('RFC 3339 resets, relative to now', () => {
    const w = anthropicRateWindows(
      {
        'anthropic-ratelimit-requests-limit': '50',
        'anthropic-ratelimit-requests-remaining': '0',
        'anthropic-ratelimit-requests-reset': '2026-12-02T10:00:03Z',
        'anthropic-ratelimit-tokens-limit': '80000',
        'anthropic-ratelimit-tokens-remaining': '79000',
        'anthropic-ratelimit-tokens-reset': '2026-12-02T10:00:01.500Z',
      },
      now,
    );
    assert.deepEqual(w, { requests: { limit: 50, remaining: 0, resetInMs: 3000 }, tokens: { limit: 80000, remaining: 79000, resetInMs: 1500 } });
    assert.equal(spentForMs(w, 10_000), 3000);
  });

  test('a reset in the past or unreadable is no reset; a garbled count is no window', () => {
    const w = anthropicRateWindows(
      {
        'anthropic-ratelimit-requests-remaining': '0',
        'anthropic-ratelimit-requests-reset': '2026-12-02T09:59:00Z',
        'anthropic-ratelimit-tokens-remaining': 'lots',
      },
      now,
    );
    assert.deepEqual(w, { requests: { limit: null, remaining: 0, resetInMs: 0 } });
    assert.equal(
      spentForMs(anthropicRateWindows({ 'anthropic-ratelimit-requests-remaining': '0', 'anthropic-ratelimit-requests-reset': 'tomorrow' }, now), 10_000),
      1000,
    );
  });
});
