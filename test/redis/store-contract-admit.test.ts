/**
 * The shared-store contract, run unchanged against MemoryStore, RedisStore and StateStore
 * over Redis (test/helpers/store-contract.ts): admit, which tries the router's candidates in
 * order and takes the first place one of them has, alone and concurrently.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { cand, cap, forEachStore, leaseOf, ref, req, up } from '../helpers/store-contract.js';

forEachStore((flavour, store) => {
  test('admit tries the candidates in order, takes the first that admits, says why the ones before refused, and reads every view after it', async () => {
    const s = await store();
    const [a, b, c, d] = [up('adm-a'), up('adm-b'), up('adm-c'), up('adm-d')];
    leaseOf(await s.acquire(req(a, { limit: 1 })));
    const hotDeep = { deep: true, capacity: cap(1), limit: 10 };
    leaseOf(await s.acquire(req(b, hotDeep)));
    const got = await s.admit([cand(a, { limit: 1, deep: true }), cand(b, hotDeep), cand(c, { deep: true }), cand(d)], [ref(a, { key: `${a}/other` })]);
    assert.ok(got.taken, 'the third candidate had room');
    assert.equal(got.taken.index, 2);
    assert.equal(got.taken.lease.upstream, c);
    assert.equal(got.taken.lease.deep, true);
    assert.deepEqual([got.taken.lease.inFlight, got.taken.lease.deepInFlight], [1, 1]);
    // Full (max_concurrency 1), hot (learned limit 1), taken, not tried.
    assert.deepEqual(got.refused, ['full', 'hot', null, null]);
    assert.deepEqual(got.views, [
      { inFlight: 1, deep: 0, limit: 100, callLimit: 1, coolingUntil: 0 },
      { inFlight: 1, deep: 1, limit: 1, callLimit: 10, coolingUntil: 0 },
      { inFlight: 1, deep: 1, limit: 100, callLimit: 100, coolingUntil: 0 },
      { inFlight: 0, deep: 0, limit: 100, callLimit: 100, coolingUntil: 0 },
      // The extra target (read only): the same account as the first candidate.
      { inFlight: 1, deep: 0, limit: 100, callLimit: 100, coolingUntil: 0 },
    ]);
    // The slot is a lease like acquire's: released, the account is empty again.
    await s.release(got.taken.lease);
    const [v] = await s.view([ref(c)]);
    assert.deepEqual([v!.inFlight, v!.deep], [0, 0]);
    assert.deepEqual(await s.admit([]), { taken: null, refused: [], views: [] });
  });

  test('admit refuses a cooling candidate unless it was chosen knowing it cools; every refusal takes nothing', async () => {
    const s = await store();
    const [a, b] = [up('cool-a'), up('cool-b')];
    const until = Date.now() + 5_000;
    await s.setCooldown(`${a}/model`, until);
    leaseOf(await s.acquire(req(b, { limit: 1 })));
    const none = await s.admit([cand(a), cand(b, { limit: 1 })]);
    assert.equal(none.taken, null);
    assert.deepEqual(none.refused, ['cooling', 'full']);
    assert.equal(none.views[0]!.coolingUntil, until);
    assert.deepEqual([none.views[0]!.inFlight, none.views[1]!.inFlight], [0, 1], 'a refusal took a place');
    // The soonest cooling target, forced by the router: its cooldown does not refuse it.
    const forced = await s.admit([cand(a, { coolingOk: true })]);
    assert.equal(forced.taken?.index, 0);
    assert.deepEqual(forced.refused, [null]);
    assert.equal(forced.views[0]!.inFlight, 1);
  });

  test('20 concurrent admissions over two accounts of 5 places each grant exactly 10, the first account filled first', async () => {
    const s = await store();
    const [a, b] = [up('adm-race-a'), up('adm-race-b')];
    const tries = [cand(a, { limit: 5 }), cand(b, { limit: 5 })];
    const results = await Promise.all(Array.from({ length: 20 }, () => s.admit(tries)));
    const taken = results.flatMap((r) => (r.taken ? [r.taken.index] : []));
    assert.equal(taken.length, 10);
    assert.deepEqual([taken.filter((i) => i === 0).length, taken.filter((i) => i === 1).length], [5, 5]);
    assert.ok(results.filter((r) => !r.taken).every((r) => r.refused.join() === 'full,full'));
    const [va, vb] = await s.view([ref(a), ref(b)]);
    assert.deepEqual([va!.inFlight, vb!.inFlight], [5, 5]);
  });
});
