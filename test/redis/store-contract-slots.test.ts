/**
 * The shared-store contract, run unchanged against MemoryStore, RedisStore and StateStore
 * over Redis (test/helpers/store-contract.ts): places in flight and deep, 'full' and 'hot'
 * refusals, idempotent release, leases that lapse unless renewed, concurrent acquires, and
 * (on Redis) the keys the state lives under.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { test } from 'node:test';
import { WIDE, cap, forEachStore, leaseOf, reader, ref, req, sleep, up } from '../helpers/store-contract.js';

forEachStore((flavour, store) => {
  test('view counts in-flight and deep leases per account, with its learned limit, one view per target in order', async () => {
    const s = await store();
    const [a, b, c] = [up('a'), up('b'), up('c')];
    leaseOf(await s.acquire(req(a)));
    leaseOf(await s.acquire(req(a)));
    leaseOf(await s.acquire(req(a, { deep: true })));
    leaseOf(await s.acquire(req(b, { deep: true })));
    const v = await s.view([ref(a), ref(b), ref(c, { capacity: cap(7) }), ref(a, { key: `${a}/other-model` })]);
    assert.deepEqual(v, [
      { inFlight: 3, deep: 1, limit: 100, callLimit: 100, coolingUntil: 0 },
      { inFlight: 1, deep: 1, limit: 100, callLimit: 100, coolingUntil: 0 },
      // Nothing learned yet: the starting guess.
      { inFlight: 0, deep: 0, limit: 7, callLimit: 100, coolingUntil: 0 },
      // Another target on the same upstream account sees the same account counts.
      { inFlight: 3, deep: 1, limit: 100, callLimit: 100, coolingUntil: 0 },
    ]);
    assert.deepEqual(await s.view([]), []);
  });

  test("acquire refuses with 'full' at the upstream's max_concurrency, and a refused acquire takes nothing", async () => {
    const s = await store();
    const a = up('full');
    leaseOf(await s.acquire(req(a, { limit: 2 })));
    leaseOf(await s.acquire(req(a, { limit: 2, deep: true })));
    assert.deepEqual(await s.acquire(req(a, { limit: 2 })), { ok: false, reason: 'full' });
    assert.deepEqual(await s.acquire(req(a, { limit: 2, deep: true })), { ok: false, reason: 'full' });
    const [v] = await s.view([ref(a)]);
    assert.equal(v!.inFlight, 2);
    assert.equal(v!.deep, 1);
    // A higher limit (another config) lets the next one in.
    leaseOf(await s.acquire(req(a, { limit: 3 })));
  });

  test("a deep acquire refuses with 'hot' at the learned limit, before 'full'; a non-deep one still gets in; the lease says how many deep calls it found", async () => {
    const s = await store();
    const a = up('hot');
    const deep = req(a, { deep: true, capacity: cap(2), limit: 10 });
    const l1 = leaseOf(await s.acquire(deep));
    const l2 = leaseOf(await s.acquire(deep));
    assert.deepEqual([l1.deepInFlight, l2.deepInFlight], [1, 2]);
    assert.deepEqual(await s.acquire(deep), { ok: false, reason: 'hot' });
    const plain = leaseOf(await s.acquire(req(a, { capacity: cap(2), limit: 10 })));
    assert.equal(plain.deep, false);
    assert.equal(plain.deepInFlight, 0);
    // Hot is decided before full: an account at both limits is hot (the call sheds, not queues).
    assert.deepEqual(await s.acquire(req(a, { deep: true, capacity: cap(2), limit: 3 })), { ok: false, reason: 'hot' });
    let [v] = await s.view([ref(a, { capacity: cap(2) })]);
    assert.deepEqual(v, { inFlight: 3, deep: 2, limit: 2, callLimit: 100, coolingUntil: 0 });
    // Releasing a deep lease frees its place.
    await s.release(l1);
    leaseOf(await s.acquire(deep));
    [v] = await s.view([ref(a, { capacity: cap(2) })]);
    assert.deepEqual(v, { inFlight: 3, deep: 2, limit: 2, callLimit: 100, coolingUntil: 0 });
  });

  test('non-deep calls never count against the learned limit', async () => {
    const s = await store();
    const a = up('plain');
    for (let i = 0; i < 5; i++) leaseOf(await s.acquire(req(a, { capacity: cap(1) })));
    const [v] = await s.view([ref(a, { capacity: cap(1) })]);
    assert.deepEqual(v, { inFlight: 5, deep: 0, limit: 1, callLimit: 100, coolingUntil: 0 });
    leaseOf(await s.acquire(req(a, { deep: true, capacity: cap(1) })));
    assert.deepEqual(await s.acquire(req(a, { deep: true, capacity: cap(1) })), { ok: false, reason: 'hot' });
  });

  test('release is idempotent and counts never go negative', async () => {
    const s = await store();
    const a = up('rel');
    const r = req(a, { limit: 2, deep: true, capacity: cap(2) });
    const l1 = leaseOf(await s.acquire(r));
    const l2 = leaseOf(await s.acquire(r));
    await s.release(l1);
    await s.release(l1);
    await s.release(l1);
    let [v] = await s.view([ref(a, { capacity: cap(2) })]);
    assert.deepEqual(v, { inFlight: 1, deep: 1, limit: 2, callLimit: 100, coolingUntil: 0 });
    // Releasing l1 three times freed one slot, not three.
    const l3 = leaseOf(await s.acquire(r));
    assert.deepEqual(await s.acquire(r), { ok: false, reason: 'hot' });
    // A lease this store never issued changes nothing.
    await s.release({ id: randomUUID(), upstream: a, deep: true, from: l1.from, inFlight: 1, deepInFlight: 1, probe: false });
    [v] = await s.view([ref(a, { capacity: cap(2) })]);
    assert.deepEqual(v, { inFlight: 2, deep: 2, limit: 2, callLimit: 100, coolingUntil: 0 });
    for (const l of [l2, l3, l2, l3, l1]) await s.release(l);
    [v] = await s.view([ref(a, { capacity: cap(2) })]);
    assert.deepEqual(v, { inFlight: 0, deep: 0, limit: 2, callLimit: 100, coolingUntil: 0 });
    // Zero, not below: exactly `limit` new places are granted.
    leaseOf(await s.acquire(r));
    leaseOf(await s.acquire(r));
    assert.deepEqual(await s.acquire(r), { ok: false, reason: 'hot' });
  });

  test('a lease lapses after lease_ms unless renewed; renewing keeps it (in flight and deep)', async (t) => {
    const s = await store(600);
    const a = up('lease');
    const r = req(a, { limit: 2, deep: true, capacity: cap(2) });
    const kept = leaseOf(await s.acquire(r));
    const other = leaseOf(await s.acquire(r));
    assert.deepEqual(await s.acquire(r), { ok: false, reason: 'hot' });
    const counts = async () => {
      const [v] = await s.view([ref(a, { capacity: cap(2) })]);
      return [v!.inFlight, v!.deep];
    };
    if (flavour.autoRenews) {
      t.diagnostic('this store renews the leases it holds itself (its heartbeat): they outlive lease_ms until released');
      await sleep(1_300);
      assert.deepEqual(await counts(), [2, 2], 'a held lease lapsed although the heartbeat should renew it');
      await s.release(other);
      await s.release(kept);
      assert.deepEqual(await counts(), [0, 0]);
      return;
    }
    await sleep(350);
    await s.renew([kept]);
    assert.deepEqual(await counts(), [2, 2], 'a lease lapsed before lease_ms');
    await sleep(400);
    assert.deepEqual(await counts(), [1, 1], 'the unrenewed lease outlived lease_ms, or the renewed one lapsed');
    await sleep(400);
    assert.deepEqual(await counts(), [0, 0], 'the renewed lease outlived its renewal');
    // Renewing a lapsed or released lease brings nothing back.
    await s.renew([kept]);
    assert.deepEqual(await counts(), [0, 0]);
    leaseOf(await s.acquire(r));
  });

  test('50 concurrent acquires with limit 10 grant exactly 10; 50 deep ones with a learned limit of 7 grant exactly 7', async () => {
    const s = await store();
    const a = up('race');
    const results = await Promise.all(Array.from({ length: 50 }, () => s.acquire(req(a, { limit: 10 }))));
    assert.equal(results.filter((r) => r.ok).length, 10);
    assert.ok(results.filter((r) => !r.ok).every((r) => !r.ok && r.reason === 'full'));
    const ids = new Set(results.flatMap((r) => (r.ok ? [r.lease.id] : [])));
    assert.equal(ids.size, 10, 'lease ids are unique');
    let [v] = await s.view([ref(a)]);
    assert.equal(v!.inFlight, 10);

    const b = up('race-deep');
    const deep = await Promise.all(Array.from({ length: 50 }, () => s.acquire(req(b, { limit: 100, deep: true, capacity: cap(7) }))));
    assert.equal(deep.filter((r) => r.ok).length, 7);
    assert.ok(deep.filter((r) => !r.ok).every((r) => !r.ok && r.reason === 'hot'));
    [v] = await s.view([ref(b, { capacity: cap(7) })]);
    assert.deepEqual(v, { inFlight: 7, deep: 7, limit: 7, callLimit: 100, coolingUntil: 0 });

    // And releasing them all concurrently brings both back to zero.
    await Promise.all([...results, ...deep].flatMap((r) => (r.ok ? [s.release(r.lease), s.release(r.lease)] : [])));
    const [va, vb] = await s.view([ref(a), ref(b, { capacity: cap(7) })]);
    assert.deepEqual(va, { inFlight: 0, deep: 0, limit: 100, callLimit: 100, coolingUntil: 0 });
    assert.deepEqual(vb, { inFlight: 0, deep: 0, limit: 7, callLimit: 100, coolingUntil: 0 });
  });

  if (flavour.name !== 'MemoryStore') {
    test('the state lives in Redis under the documented keys', async () => {
      const s = await store();
      const a = up('keys');
      const l = leaseOf(await s.acquire(req(a, { deep: true })));
      assert.equal(l.from, 'redis');
      const inflight = await reader.keys(`{contract-*}:inflight:${a}`);
      const deep = await reader.keys(`{contract-*}:deep:${a}`);
      assert.equal(inflight.length, 1, `inflight key for ${a}`);
      assert.equal(deep.length, 1, `deep key for ${a}`);
      assert.deepEqual(await reader.zrange(inflight[0]!, 0, -1), [l.id]);
      assert.deepEqual(await reader.zrange(deep[0]!, 0, -1), [l.id]);
      await s.release(l, { signal: 'throttled', inFlight: 40 }, WIDE);
      assert.equal(await reader.zcard(inflight[0]!), 0);
      assert.equal(await reader.zcard(deep[0]!), 0);
      const capKey = await reader.keys(`{contract-*}:cap:${a}`);
      assert.equal(capKey.length, 1, `cap key for ${a}`);
      assert.equal(await reader.hget(capKey[0]!, 'limit'), '39');
    });
  }
});
