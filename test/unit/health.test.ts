/**
 * Long cooldowns of the health board, driven with a settable clock: the scope follows the
 * failure class (credential / quota: the whole account; permission / not_found: that
 * target), each is probed by exactly one request once its probe delay has passed, a good
 * probe clears it, a failed one restarts the wait, and each cooldown is announced once.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { classifiedAs as as, classifyFailure } from '../../src/errors/classify.js';
import { HealthBoard, type CooldownEvent } from '../../src/router/health.js';
import { probeDelayMs } from '../../src/router/long-cooldown.js';

const CFG = { failures: 3, base_ms: 1_000, max_ms: 5_000, credential_ms: 60_000 };
/** min(60_000 / 4, 60 s) */
const PROBE = 15_000;

function board(cfg = CFG): { h: HealthBoard; events: CooldownEvent[]; clock: { t: number } } {
  const clock = { t: 1_700_000_000_000 };
  const h = new HealthBoard(cfg, () => clock.t);
  const events: CooldownEvent[] = [];
  h.onCooldown = (ev) => events.push(ev);
  return { h, events, clock };
}

describe('probeDelayMs', () => {
  test('min(length / 4, 60 s), doubled per failed probe, capped at the length', () => {
    assert.deepEqual(
      [0, 1, 2, 3, 4].map((n) => probeDelayMs(300_000, n)),
      [60_000, 120_000, 240_000, 300_000, 300_000],
    );
    assert.deepEqual(
      [0, 1, 2, 3].map((n) => probeDelayMs(60_000, n)),
      [15_000, 30_000, 60_000, 60_000],
    );
    assert.equal(probeDelayMs(1, 0), 1, 'never 0, never above the length');
  });
});

describe('HealthBoard long cooldowns', () => {
  test('a 403 permission_error on model A cools only A: model B of the same upstream is still admitted', () => {
    const { h, clock } = board();
    const c = classifyFailure({ status: 403, type: 'permission_error', message: 'Your API key does not have permission to use the specified resource.' });
    assert.deepEqual(c, { class: 'permission', retryable: true, scope: 'target' });
    h.failure('acct/a', 'acct', c, 'no access to a');
    assert.equal(h.state('acct/a', 'acct'), 'cooling');
    assert.equal(h.canAdmit('acct/a', 'acct'), false);
    assert.equal(h.availableAt('acct/a', 'acct'), clock.t + PROBE);
    assert.deepEqual(h.longCooldown('acct/a', 'acct'), { class: 'permission', reason: 'no access to a', probeAt: clock.t + PROBE, scope: 'target' });
    assert.equal(h.state('acct/b', 'acct'), 'healthy');
    assert.equal(h.canAdmit('acct/b', 'acct'), true);
    assert.equal(h.longCooldown('acct/b', 'acct'), null);
  });

  test("the gateway's own failures (a thrown error with no network code) never open the circuit, however many", () => {
    const { h, events } = board();
    const own = classifyFailure({ thrown: new RangeError('Maximum call stack size exceeded') });
    assert.equal(own.class, 'gateway');
    for (let i = 0; i < 10; i++) h.failure('acct/a', 'acct', own, 'RangeError');
    assert.equal(h.state('acct/a', 'acct'), 'healthy');
    assert.equal(h.canAdmit('acct/a', 'acct'), true);
    assert.deepEqual(events, []);
    // The same count of upstream failures does open it: the check above can fail.
    for (let i = 0; i < 3; i++) h.failure('acct/a', 'acct', as('server'), '500');
    assert.equal(h.state('acct/a', 'acct'), 'cooling');
  });

  test('a 404 not_found cools only that target; 5xx failures leave the circuit, not a long cooldown', () => {
    const { h } = board();
    h.failure('acct/a', 'acct', classifyFailure({ status: 404, code: 'model_not_found' }), 'no such model');
    h.failure('acct/b', 'acct', as('server'), '500');
    assert.equal(h.longCooldown('acct/a', 'acct')?.class, 'not_found');
    assert.equal(h.longCooldown('acct/b', 'acct'), null);
    assert.equal(h.canAdmit('acct/b', 'acct'), true, 'one 5xx does not open the circuit (failures: 3)');
  });

  test('a 401 (credential) or quota cools every target of the upstream, seen or not, and only that upstream', () => {
    for (const c of [classifyFailure({ status: 401, code: 'invalid_api_key' }), classifyFailure({ status: 429, code: 'insufficient_quota' })]) {
      const { h, clock } = board();
      assert.equal(c.scope, 'account');
      h.failure('acct/a', 'acct', c, 'bad');
      for (const key of ['acct/a', 'acct/b', 'acct/never-seen']) {
        assert.equal(h.state(key, 'acct'), 'cooling', key);
        assert.equal(h.canAdmit(key, 'acct'), false, key);
        assert.equal(h.availableAt(key, 'acct'), clock.t + PROBE, key);
        assert.equal(h.longCooldown(key, 'acct')?.scope, 'account', key);
      }
      assert.equal(h.state('other/a', 'other'), 'healthy');
    }
  });

  test('after the probe delay exactly one request is let through; its success clears the whole account', () => {
    const { h, clock } = board();
    h.failure('acct/a', 'acct', as('credential'), 'Incorrect API key provided');
    clock.t += PROBE - 1;
    assert.equal(h.canAdmit('acct/b', 'acct'), false, 'not before the probe delay');
    clock.t += 1;
    assert.equal(h.state('acct/b', 'acct'), 'probing');
    assert.equal(h.canAdmit('acct/b', 'acct'), true);
    h.admit('acct/b', 'acct');
    assert.equal(h.canAdmit('acct/b', 'acct'), false, 'a probe is in flight');
    assert.equal(h.canAdmit('acct/a', 'acct'), false, 'one probe per account, whatever the target');
    h.success('acct/b', 'acct');
    for (const key of ['acct/a', 'acct/b']) {
      assert.equal(h.state(key, 'acct'), 'healthy', key);
      assert.equal(h.longCooldown(key, 'acct'), null, key);
    }
  });

  test('a failed probe restarts the wait with a doubled delay; a success of a request sent before does not clear', () => {
    const { h, clock } = board();
    h.failure('acct/a', 'acct', as('permission'), 'no');
    h.success('acct/a', 'acct'); // sent before the cooldown: not the probe
    assert.equal(h.state('acct/a', 'acct'), 'cooling');
    clock.t += PROBE;
    h.admit('acct/a', 'acct');
    h.failure('acct/a', 'acct', as('permission'), 'still no');
    assert.equal(h.availableAt('acct/a', 'acct'), clock.t + 2 * PROBE);
    assert.equal(h.longCooldown('acct/a', 'acct')?.reason, 'still no');
    clock.t += 2 * PROBE;
    assert.equal(h.canAdmit('acct/a', 'acct'), true);
    h.admit('acct/a', 'acct');
    h.success('acct/a', 'acct');
    assert.equal(h.state('acct/a', 'acct'), 'healthy');
  });

  test('an aborted probe or one that fails otherwise (5xx, the caller) frees the probe without deciding', () => {
    const { h, clock } = board();
    h.failure('acct/a', 'acct', as('quota'), 'out of credit');
    clock.t += PROBE;
    for (const end of [
      () => h.release('acct/a', 'acct'),
      () => h.failure('acct/a', 'acct', as('server'), '503'),
      () => h.failure('acct/a', 'acct', as('bad_request'), 'bad'),
    ]) {
      h.admit('acct/a', 'acct');
      assert.equal(h.canAdmit('acct/a', 'acct'), false);
      end();
      assert.equal(h.longCooldown('acct/a', 'acct')?.probeAt, clock.t, 'the wait did not restart');
      assert.equal(h.canAdmit('acct/a', 'acct'), true, 'the next request may probe');
    }
  });

  test('one onCooldown call per cooldown: not for failures already in flight, not for failed probes', () => {
    const { h, events, clock } = board();
    h.failure('acct/a', 'acct', as('credential'), 'key revoked');
    h.failure('acct/b', 'acct', as('credential'), 'key revoked'); // a request in flight when the first failed
    h.failure('acct/a', 'acct', as('permission'), 'no access to a');
    assert.deepEqual(events, [
      { upstream: 'acct', target: null, class: 'credential', reason: 'key revoked', untilMs: clock.t + PROBE },
      { upstream: 'acct', target: 'acct/a', class: 'permission', reason: 'no access to a', untilMs: clock.t + PROBE },
    ]);
    clock.t += PROBE;
    h.admit('acct/b', 'acct');
    h.failure('acct/b', 'acct', as('credential'), 'key revoked');
    assert.equal(events.length, 2, 'a failed probe extends the cooldown silently');
    h.failure('other/x', 'other', as('server'), '500');
    h.failure('other/x', 'other', as('rate_limited'), '429');
    assert.equal(events.length, 2, 'circuit trips are not long cooldowns');
    clock.t += 2 * PROBE;
    h.admit('acct/b', 'acct');
    h.success('acct/b', 'acct');
    h.failure('acct/b', 'acct', as('quota'), 'out of credit');
    assert.equal(events.length, 3, 'a new cooldown after the last one cleared is announced again');
    assert.equal(events[2]!.class, 'quota');
  });

  test('the reason is cut to 500 characters', () => {
    const { h, events } = board();
    h.failure('acct/a', 'acct', as('credential'), 'x'.repeat(2_000));
    assert.equal(events[0]!.reason, `${'x'.repeat(500)}…`);
  });
});
