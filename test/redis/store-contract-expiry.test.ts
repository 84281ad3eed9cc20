/**
 * The shared-store contract, run unchanged against MemoryStore, RedisStore and StateStore
 * over Redis (test/helpers/store-contract.ts): state that expires. Cooldowns (the later one
 * kept, gone once past), the Responses journal and session pins, each gone after its TTL.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { test } from 'node:test';
import { forEachStore, ref, sleep, up } from '../helpers/store-contract.js';

forEachStore((flavour, store) => {
  test('setCooldown keeps the later value and shows in view until it passes', async () => {
    const s = await store();
    const a = up('cool');
    const key = `${a}/m1`;
    const other = `${a}/m2`;
    const now = Date.now();
    await s.setCooldown(key, now + 5_000);
    await s.setCooldown(key, now + 400);
    let [v, w] = await s.view([ref(a, { key }), ref(a, { key: other })]);
    assert.equal(v!.coolingUntil, now + 5_000, 'an earlier cooldown replaced a later one');
    assert.equal(w!.coolingUntil, 0, 'the cooldown is per target key');

    await s.setCooldown(other, now + 300);
    await s.setCooldown(other, now + 350);
    [, w] = await s.view([ref(a, { key }), ref(a, { key: other })]);
    assert.equal(w!.coolingUntil, now + 350, 'a later cooldown did not replace an earlier one');
    await sleep(Math.max(0, now + 450 - Date.now()));
    [v, w] = await s.view([ref(a, { key }), ref(a, { key: other })]);
    assert.equal(w!.coolingUntil, 0, 'a past cooldown still shows');
    assert.equal(v!.coolingUntil, now + 5_000);

    // A cooldown already in the past never shows.
    await s.setCooldown(`${a}/m3`, Date.now() - 1_000);
    const [p] = await s.view([ref(a, { key: `${a}/m3` })]);
    assert.equal(p!.coolingUntil, 0);
  });

  test('journal: put, read back unchanged, replaced, gone after its TTL', async () => {
    const s = await store();
    const id = `resp_${randomUUID()}`;
    assert.equal(await s.getJournal(id), undefined);
    const text = JSON.stringify({ v: 1, input: [{ role: 'user', content: 'héllo 🙂' }], output: [] });
    await s.putJournal(id, text, 60_000);
    assert.equal(await s.getJournal(id), text);
    await s.putJournal(id, '{"v":1}', 150);
    assert.equal(await s.getJournal(id), '{"v":1}');
    await sleep(250);
    assert.equal(await s.getJournal(id), undefined);
  });

  test('pins: set, replace, and expire after their TTL', async () => {
    const s = await store();
    const session = `sess-${randomUUID()}`;
    assert.equal(await s.getPin(session), undefined);
    await s.setPin(session, 'up1/model', 800);
    assert.equal(await s.getPin(session), 'up1/model');
    await s.setPin(session, 'up2/model', 800);
    assert.equal(await s.getPin(session), 'up2/model');
    assert.equal(await s.getPin(`${session}-other`), undefined);
    await sleep(400);
    assert.equal(await s.getPin(session), 'up2/model', 'the pin expired before its TTL');
    // Setting again refreshes the TTL.
    await s.setPin(session, 'up2/model', 800);
    await sleep(550);
    assert.equal(await s.getPin(session), 'up2/model', 'setPin did not refresh the TTL');
    await sleep(400);
    assert.equal(await s.getPin(session), undefined, 'the pin outlived its TTL');
  });
});
