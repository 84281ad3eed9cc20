/**
 * The shared-store contract, run unchanged against MemoryStore, RedisStore and StateStore
 * over Redis (test/helpers/store-contract.ts): the learned limits. The learned-capacity law
 * runs in TypeScript (memory) and in Lua (Redis): the same table of feedback steps must
 * give the same limits on every store; the limit for every call, the probe wait, slow start
 * and the probe gate likewise.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { PROBE_BASE_MS, type CapacityFeedback } from '../../src/store/capacity.js';
import { PROBE_LUCK_MS } from '../../src/store/probe-gate.js';
import type { Lease } from '../../src/store/types.js';
import { WIDE, callsOf, cand, cap, forEachStore, leaseOf, ref, req, sleep, up } from '../helpers/store-contract.js';

forEachStore((flavour, store) => {
  /** An account whose limit slow start raised from 4 to 6 (four deep calls held, served at the limit twice, the probe wait apart): the store, the account, its capacity, a deep request and the held leases. */
  const raised = async (name: string) => {
    const s = await store();
    const c = up(name);
    const wide = cap(4, 40);
    const deep = req(c, { deep: true, capacity: wide });
    const held: Lease[] = [];
    for (let i = 0; i < 4; i++) held.push(leaseOf(await s.acquire(deep)));
    await s.feedback(c, { signal: 'ok', inFlight: 4 }, wide);
    await sleep(PROBE_BASE_MS + 100);
    await s.feedback(c, { signal: 'ok', inFlight: 4 }, wide);
    return { s, c, wide, deep, held };
  };

  test('the learned limit for every call: a non-deep refusal cuts it, a call at it is refused (full, or hot for a deep one), a served call at it raises it after the probe wait', async () => {
    const s = await store();
    const a = up('calls');
    const calls = callsOf(10);
    const plain = req(a, { limit: 10, calls });
    const deep = req(a, { limit: 10, calls, deep: true });
    const view = async () => (await s.view([ref(a, { calls })]))[0]!;
    const held: Lease[] = [];
    for (let i = 0; i < 6; i++) held.push(leaseOf(await s.acquire(plain)));
    assert.deepEqual(
      held.map((l) => l.inFlight),
      [1, 2, 3, 4, 5, 6],
      'each lease says how many calls it found, itself included',
    );
    assert.equal((await view()).callLimit, 10, 'the limit starts at max_concurrency');
    // A deep lease's refusal is the deep capacity's: the limit for every call stays.
    const d = leaseOf(await s.acquire(deep));
    await s.release(d, { signal: 'throttled', inFlight: 3 }, WIDE);
    assert.equal((await view()).callLimit, 10, "a deep call's feedback does not touch the limit for every call");
    assert.equal((await view()).limit, 2, 'it cuts the deep limit');
    // The second call is refused while six hold places: the account takes 5.
    await s.release(held[1]!, { signal: 'throttled', inFlight: held[1]!.inFlight }, calls);
    let v = await view();
    assert.equal(v.callLimit, 5, 'six in flight at the refusal: the account takes 5');
    assert.equal(v.limit, 2, 'a non-deep refusal does not touch the deep limit');
    assert.equal(v.inFlight, 5);
    assert.deepEqual(await s.acquire(plain), { ok: false, reason: 'full' }, 'a call at the learned limit is refused full (it may queue)');
    assert.deepEqual(await s.acquire(deep), { ok: false, reason: 'hot' }, 'a deep call at it is refused hot (it sheds)');
    // The same refusal again changes nothing (once per lease).
    await s.release(held[1]!, { signal: 'throttled', inFlight: 6 }, calls);
    assert.equal((await view()).callLimit, 5);
    // Served at the limit after the probe wait: one more place.
    await s.release(held[2]!, { signal: 'ok', inFlight: 5 }, calls); // the first word after the cut starts no raise
    assert.equal((await view()).callLimit, 5, 'no raise before the probe wait');
    await sleep(PROBE_BASE_MS + 100);
    await s.release(held[3]!, { signal: 'ok', inFlight: held[3]!.inFlight }, calls);
    assert.equal((await view()).callLimit, 5, 'a call served below the limit says nothing');
    await s.release(held[4]!, { signal: 'ok', inFlight: 5 }, calls);
    v = await view();
    assert.equal(v.callLimit, 6, 'served at the limit after the probe wait: additive raise');
    assert.equal(v.inFlight, 2);
    // max_concurrency holds above the learned limit, and a reload that lowers it applies at once.
    assert.equal((await s.view([ref(a, { calls: callsOf(4) })]))[0]!.callLimit, 4);
  });

  test('the learned limit follows one table of feedback steps (the same in TypeScript and Lua)', async () => {
    const s = await store();
    const a = up('law');
    const b = cap(8, 12);
    const limit = async () => (await s.view([ref(a, { capacity: b })]))[0]!.limit;
    const steps: [CapacityFeedback, number, string][] = [
      [{ signal: 'ok', inFlight: 2 }, 8, 'a call below the limit says nothing (its word starts the calm)'],
      [{ signal: 'ok', inFlight: 8 }, 8, 'served at the limit within the first calm: no raise yet'],
      [{ signal: 'throttled', inFlight: 6 }, 8, 'it served 8 at once a moment ago: a refusal below that is not about concurrency'],
      [{ signal: 'throttled', inFlight: 8 }, 8, 'a refusal at the level served uses that evidence up'],
      [{ signal: 'throttled', inFlight: 8 }, 7, 'a second there, nothing served there between: the account takes 7'],
      [{ signal: 'throttled', inFlight: 8 }, 7, 'the same refusal again changes nothing'],
      [{ signal: 'throttled', inFlight: 9 }, 7, 'a refusal above the limit changes nothing'],
      [{ signal: 'ok', inFlight: 7 }, 7, 'no raise before the probe wait'],
    ];
    for (const [f, want, why] of steps) {
      await s.feedback(a, f, b);
      assert.equal(await limit(), want, `${JSON.stringify(f)}: ${why}`);
    }
    // An account that has served nothing yet: every refusal cuts.
    const cold = up('law-cold');
    const coldSteps: [CapacityFeedback, number, string][] = [
      [{ signal: 'throttled', inFlight: 3 }, 2, 'nothing served yet: the account takes 2'],
      [{ signal: 'throttled', inFlight: 1 }, 1, 'never below min'],
      [{ signal: 'ok', inFlight: 1 }, 1, 'no raise before the probe wait'],
    ];
    for (const [f, want, why] of coldSteps) {
      await s.feedback(cold, f, b);
      assert.equal((await s.view([ref(cold, { capacity: b })]))[0]!.limit, want, `${JSON.stringify(f)}: ${why}`);
    }
    // Feedback given with a release applies too, once per lease.
    const c = up('law-release');
    const lease = leaseOf(await s.acquire(req(c, { deep: true, capacity: cap(3) })));
    leaseOf(await s.acquire(req(c, { deep: true, capacity: cap(3) })));
    await s.release(lease, { signal: 'throttled', inFlight: 2 }, cap(3));
    await s.release(lease, { signal: 'throttled', inFlight: 2 }, cap(3));
    assert.equal((await s.view([ref(c, { capacity: cap(3) })]))[0]!.limit, 1);

    // A refusal reported while more deep calls hold places than when it took its own (they
    // may have reached the provider first) cuts to the count at the refusal, not to 1.
    const d = up('law-late');
    const early = leaseOf(await s.acquire(req(d, { deep: true, capacity: cap(8) })));
    assert.equal(early.deepInFlight, 1);
    for (let i = 0; i < 4; i++) leaseOf(await s.acquire(req(d, { deep: true, capacity: cap(8) })));
    await s.release(early, { signal: 'throttled', inFlight: early.deepInFlight }, cap(8));
    assert.equal((await s.view([ref(d, { capacity: cap(8) })]))[0]!.limit, 4, 'five in flight at the refusal: the account takes 4');
    // A stall reported while the call runs reads the count at its start alone.
    const e = up('law-late-stall');
    for (let i = 0; i < 2; i++) leaseOf(await s.acquire(req(e, { deep: true, capacity: cap(8) })));
    const third = leaseOf(await s.acquire(req(e, { deep: true, capacity: cap(8) })));
    for (let i = 0; i < 3; i++) leaseOf(await s.acquire(req(e, { deep: true, capacity: cap(8) })));
    await s.feedback(e, { signal: 'throttled', inFlight: third.deepInFlight }, cap(8));
    assert.equal(
      (await s.view([ref(e, { capacity: cap(8) })]))[0]!.limit,
      2,
      'stalled as the third in flight: the account takes 2 (the three admitted since say nothing)',
    );
  });

  test(`after ${PROBE_BASE_MS} ms calm, a call served at the limit raises it by one; the ceiling holds`, async () => {
    const s = await store();
    const a = up('probe');
    const b = cap(4, 4);
    await s.feedback(a, { signal: 'throttled', inFlight: 3 }, b);
    const limit = async () => (await s.view([ref(a, { capacity: b })]))[0]!.limit;
    assert.equal(await limit(), 2);
    await sleep(PROBE_BASE_MS + 100);
    await s.feedback(a, { signal: 'ok', inFlight: 2 }, b);
    assert.equal(await limit(), 3, 'additive raise after the first throttle');
    await s.feedback(a, { signal: 'ok', inFlight: 3 }, b);
    assert.equal(await limit(), 3, 'one raise per probe wait');
    // Slow start: an account that never throttled grows by half, after its first calm.
    const c = up('slow-start');
    const wide = cap(4, 40);
    const deep = req(c, { deep: true, capacity: wide });
    const held: Lease[] = [];
    for (let i = 0; i < 4; i++) held.push(leaseOf(await s.acquire(deep)));
    assert.ok(
      held.every((l) => !l.probe),
      'places within the first limit seen are trusted: no probe',
    );
    await s.feedback(c, { signal: 'ok', inFlight: 4 }, wide);
    assert.equal((await s.view([ref(c, { capacity: wide })]))[0]!.limit, 4, 'the first word starts the calm');
    await sleep(PROBE_BASE_MS + 100);
    await s.feedback(c, { signal: 'ok', inFlight: 4 }, wide);
    assert.equal((await s.view([ref(c, { capacity: wide })]))[0]!.limit, 6, 'slow start: 4 + 2');

    // The probe gate: one call at a time above the trusted count (4), on every store.
    const p1 = leaseOf(await s.acquire(deep));
    assert.equal(p1.probe, true, 'the fifth place is a probe of the raised limit');
    assert.deepEqual(await s.acquire(deep), { ok: false, reason: 'hot' }, 'a second call above the trusted count waits for the probe');
    await s.answered(p1);
    const p2 = leaseOf(await s.acquire(deep));
    assert.equal(p2.probe, true, 'the answer trusted one place (5): the sixth is the next probe');
    await s.release(p2);
    const p3 = leaseOf(await s.acquire(deep));
    assert.equal(p3.probe, true, 'a probe that ended without an answer opens the gate for the next');
    await s.release(p3);
    await s.release(held[0]!);
    const ok = leaseOf(await s.acquire(deep));
    assert.equal(ok.probe, false, 'within the trusted count (the fifth of 5): no probe');
    // A bound moved by a reload applies at once.
    assert.equal((await s.view([ref(a, { capacity: cap(4, 2) })]))[0]!.limit, 2);
  });

  test('a waiter (only trusted places) never carries the probe; a new request on an account waited for (only the probe place) never takes a trusted place', async () => {
    const { s, c, wide, held } = await raised('only');
    const one = (only: 'trusted' | 'probe') => s.admit([cand(c, { deep: true, capacity: wide, only })]);
    const waiter = await one('trusted');
    assert.equal(waiter.taken, null);
    assert.deepEqual(waiter.refused, ['hot'], 'the fifth place (a probe of the raised limit, 6) is refused to a waiter');
    const fresh = await one('probe');
    assert.equal(fresh.taken?.lease.probe, true, 'a new request takes it, as the probe');
    await s.release(held.shift()!, undefined, undefined, 1_000);
    await s.release(held.shift()!, undefined, undefined, 1_000);
    const again = await one('probe');
    assert.deepEqual(again.refused, ['hot'], "a trusted place (the fourth) is the waiters': refused to a probe-only request");
    const turn = await one('trusted');
    assert.equal(turn.taken?.lease.probe, false, 'the waiter takes it');
  });

  test(`a lucky probe (another call that held its place ended within ${PROBE_LUCK_MS} ms of it going) trusts no place`, async () => {
    const { s, c, wide, deep, held } = await raised('lucky');
    assert.equal((await s.view([ref(c, { capacity: wide })]))[0]!.limit, 6, 'slow start: 4 + 2');

    const p1 = leaseOf(await s.acquire(deep));
    assert.equal(p1.probe, true);
    // A call the provider had finished before the probe reached it gives its place back.
    await s.release(held.shift()!);
    assert.equal(await s.answered(p1), true, 'lucky: its success proves one call fewer (the router counts it so)');
    const p2 = leaseOf(await s.acquire(deep));
    assert.equal(p2.probe, true, 'the lucky answer trusted nothing: the fifth place is still a probe');
    // The lucky probe's own end, moments after the next probe went, makes that one lucky too.
    await s.release(p1);
    assert.equal(await s.answered(p2), true, 'the next probe went as p1 ended: lucky');
    await s.release(p2);
    await s.release(p2);

    // A call ended long before (a stalled call's cancel that lingered) makes a probe lucky;
    // a release sent again (it no longer holds a place) does not.
    held.push(leaseOf(await s.acquire(deep)));
    const p3 = leaseOf(await s.acquire(deep));
    assert.equal(p3.probe, true);
    await sleep(PROBE_LUCK_MS + 30);
    await s.release(p1);
    await s.release(held.shift()!, undefined, undefined, PROBE_LUCK_MS + 1_000);
    assert.equal(await s.answered(p3), true, 'a lingered end before the probe went: lucky');
    await s.release(p3);

    held.push(leaseOf(await s.acquire(deep)));
    const p4 = leaseOf(await s.acquire(deep));
    assert.equal(p4.probe, true, 'nothing trusted yet: the fifth place is a probe');
    await s.release(p3);
    await sleep(PROBE_LUCK_MS + 30);
    await s.release(held.shift()!);
    assert.equal(await s.answered(p4), false, 'an end after the luck window (and a repeated release) says nothing of it');
    held.push(leaseOf(await s.acquire(deep)));
    assert.equal(held.at(-1)!.probe, false, 'trusted 5: the fifth place is no probe');
  });
});
