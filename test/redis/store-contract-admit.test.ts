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

  test('candidates with a spread weight are tried least loaded first on the calls in flight now, weighted, the others in their places', async () => {
    const s = await store();
    const [a, b, c, w] = [up('spr-a'), up('spr-b'), up('spr-c'), up('spr-w')];
    // Another replica's calls, not in the order the router made (it ordered on old views).
    for (let i = 0; i < 3; i++) leaseOf(await s.acquire(req(a, { limit: 8 })));
    leaseOf(await s.acquire(req(b, { limit: 8 })));
    const spread = (u: string, weight = 1) => cand(u, { limit: 8, spread: weight });
    // Loads (in flight + 1) / 8: a 4/8, b 2/8, c 1/8 → c; the same tries without weights take a (the first).
    const got = await s.admit([spread(a), spread(b), spread(c)]);
    assert.equal(got.taken?.index, 2, `${flavour}: the least loaded`);
    assert.deepEqual(got.refused, [null, null, null]);
    const plain = await s.admit([cand(a, { limit: 8 }), cand(b, { limit: 8 }), cand(c, { limit: 8 })]);
    assert.equal(plain.taken?.index, 0, 'without weights, the given order');
    // Now a 4, b 1, c 1 in flight. Weight 3 on a: (4+1)/24 beats b's (1+1)/8.
    const weighted = await s.admit([spread(b), spread(a, 3)]);
    assert.equal(weighted.taken?.index, 1, 'weight divides the load');
    // A candidate without a weight (the session's warm account) keeps its place, first.
    const warm = await s.admit([cand(a, { limit: 8 }), spread(w), spread(b)]);
    assert.equal(warm.taken?.index, 0);
    // The least loaded but full (c: 1 in flight, limit 1, load 2/100) is passed over for the next by load: w (2/8), not a (7/8).
    leaseOf(await s.acquire(req(w, { limit: 8 })));
    const full = await s.admit([spread(a), cand(c, { limit: 1, spread: 100 }), spread(w)]);
    assert.deepEqual([full.taken?.index, full.refused[1]], [2, 'full']);
  });
});
