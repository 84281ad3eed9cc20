/**
 * When an account out of quota comes back (errors/quota-reset.ts): Anthropic's spend-limit
 * date, the answer's own Retry-After (uncapped), and nothing when neither names a time; and
 * the account's long cooldown sends no probe before that time (router/health.ts).
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { classifiedAs } from '../../src/errors/classify.js';
import { quotaResetAt } from '../../src/errors/quota-reset.js';
import { HealthBoard } from '../../src/router/health.js';

const NOW = Date.UTC(2026, 2, 23, 23, 8, 46);
const SPEND = 'You have reached your specified API usage limits. You will regain access on 2026-04-01 at 00:00 UTC.';

describe('quotaResetAt', () => {
  test("Anthropic's spend-limit date, in UTC", () => {
    assert.equal(quotaResetAt(SPEND, {}, NOW), Date.UTC(2026, 3, 1, 0, 0));
    assert.equal(quotaResetAt(SPEND.toLowerCase(), undefined, NOW), Date.UTC(2026, 3, 1, 0, 0), 'the classifier lower-cases; the reader does not care');
  });

  test('a date already past, or more than a year ahead, names nothing', () => {
    assert.equal(quotaResetAt(SPEND, {}, Date.UTC(2026, 3, 2)), undefined);
    assert.equal(quotaResetAt('You will regain access on 2099-01-01 at 00:00 UTC.', {}, NOW), undefined);
  });

  test('Retry-After in seconds or as a date, and retry-after-ms, uncapped', () => {
    assert.equal(quotaResetAt('You exceeded your current quota', { 'retry-after': '86400' }, NOW), NOW + 86_400_000);
    assert.equal(quotaResetAt(null, { 'retry-after-ms': '5000' }, NOW), NOW + 5_000);
    assert.equal(quotaResetAt(null, { 'retry-after': 'Tue, 24 Mar 2026 00:00:00 GMT' }, NOW), Date.UTC(2026, 2, 24));
  });

  test('no date and no header: undefined (the account is probed as a bad key is)', () => {
    assert.equal(quotaResetAt('You exceeded your current quota, please check your plan and billing details.', {}, NOW), undefined);
    assert.equal(quotaResetAt(null, { 'retry-after': 'soon' }, NOW), undefined);
  });
});

describe('an account out of quota with a named reset', () => {
  const cfg = { failures: 3, base_ms: 1_000, max_ms: 5_000, credential_ms: 60_000 };

  test('no probe goes before the reset; without one the first probe is due after the usual delay', () => {
    const clock = { t: NOW };
    const h = new HealthBoard(cfg, () => clock.t);
    const reset = NOW + 3_600_000;
    h.failure('a/m', 'a', classifiedAs('quota'), SPEND, undefined, reset);
    h.failure('b/m', 'b', classifiedAs('quota'), 'You exceeded your current quota');
    clock.t = NOW + 15_000;
    assert.equal(h.canAdmit('b/m', 'b'), true, 'no reset named: probed after min(credential_ms / 4, 60 s)');
    assert.equal(h.canAdmit('a/m', 'a'), false, 'out until its reset');
    assert.equal(h.availableAt('a/m2', 'a'), reset, 'every target of the account is out until then');
    clock.t = reset;
    assert.equal(h.canAdmit('a/m', 'a'), true, 'the probe goes at the reset');
    h.admit('a/m', 'a');
    h.failure('a/m', 'a', classifiedAs('quota'), SPEND, undefined, NOW + 1_000);
    assert.equal(h.availableAt('a/m', 'a'), reset + 30_000, 'a failed probe naming a past reset waits the usual (doubled) delay');
  });
});
