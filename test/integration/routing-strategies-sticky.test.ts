/**
 * Routing strategy `sticky`, end to end: it keeps a session (x-session-id, then
 * prompt_cache_key, then user; the agents' own headers in routing-sessions.test.ts) on one target, and moves it (for good) when that target goes
 * into cooldown.
 *
 * The real gateway on port 0 in front of several real fake upstreams on loopback (one per
 * target, test/helpers/routing-cluster.ts), driven with the `openai` client and fetch.
 * Where a call went is read from the `x-switchyard-upstream` response header and
 * cross-checked with each fake's received requests.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { BASE_ROUTING, chat, ok, sleep, startCluster, unavailable, type Result } from '../helpers/routing-cluster.js';

describe('routing strategies', () => {
  test('sticky: 20 requests of one x-session-id land on one target (new, then pinned)', async () => {
    const c = await startCluster([{ id: 'a' }, { id: 'b' }, { id: 'c' }], `  strategy: sticky\n${BASE_ROUTING}`);
    try {
      const results: Result[] = [];
      for (let i = 0; i < 20; i++) results.push(await chat(c.gw, {}, { 'x-session-id': 'session-one' }));
      assert.ok(results.every((r) => r.status === 200));
      assert.ok(results.every((r) => r.headers.get('x-switchyard-strategy') === 'sticky'));
      assert.deepEqual(
        results.map((r) => r.headers.get('x-switchyard-sticky')),
        ['new', ...Array<string>(19).fill('pinned')],
      );
      const home = results[0]!.upstream!;
      assert.ok(
        results.every((r) => r.upstream === home),
        `all on ${home}: ${results.map((r) => r.upstream).join(',')}`,
      );
      assert.equal(c.fakes[home]!.requests.length, 20);

      // Without a session there is nothing to pin: no sticky header, and turns are taken.
      const loose: Result[] = [];
      for (let i = 0; i < 6; i++) loose.push(await chat(c.gw));
      assert.ok(loose.every((r) => r.status === 200 && r.headers.get('x-switchyard-sticky') === null));
      assert.ok(new Set(loose.map((r) => r.upstream)).size >= 2, 'session-less requests spread over targets');
    } finally {
      await c.close();
    }
  });

  test('sticky: prompt_cache_key, then user, key the session when there is no x-session-id', async () => {
    const c = await startCluster([{ id: 'a' }, { id: 'b' }, { id: 'c' }], `  strategy: sticky\n${BASE_ROUTING}`);
    try {
      const run = async (n: number, body: Record<string, unknown>, headers: Record<string, string> = {}) => {
        const out: Result[] = [];
        for (let i = 0; i < n; i++) out.push(await chat(c.gw, body, headers));
        assert.ok(out.every((r) => r.status === 200));
        return out;
      };
      const stickyOf = (rs: Result[]) => rs.map((r) => r.headers.get('x-switchyard-sticky'));

      const byCacheKey = await run(8, { prompt_cache_key: 'pck-1' });
      assert.deepEqual(stickyOf(byCacheKey), ['new', ...Array<string>(7).fill('pinned')]);
      assert.equal(new Set(byCacheKey.map((r) => r.upstream)).size, 1, 'prompt_cache_key keeps one target');

      const byUser = await run(8, { user: 'user-1' });
      assert.deepEqual(stickyOf(byUser), ['new', ...Array<string>(7).fill('pinned')]);
      assert.equal(new Set(byUser.map((r) => r.upstream)).size, 1, 'user keeps one target');

      const byHeader = await run(3, {}, { 'x-session-id': 'hdr-1' });
      assert.deepEqual(stickyOf(byHeader), ['new', 'pinned', 'pinned']);

      // Precedence: x-session-id over prompt_cache_key over user. A known session plus a
      // never-seen lower-precedence key stays `pinned` (a lower key would have been `new`).
      const hdrWins = await run(1, { prompt_cache_key: 'pck-never-seen', user: 'user-never-seen' }, { 'x-session-id': 'hdr-1' });
      assert.deepEqual(stickyOf(hdrWins), ['pinned']);
      assert.equal(hdrWins[0]!.upstream, byHeader[0]!.upstream);
      const pckWins = await run(1, { prompt_cache_key: 'pck-1', user: 'user-never-seen-2' });
      assert.deepEqual(stickyOf(pckWins), ['pinned']);
      assert.equal(pckWins[0]!.upstream, byCacheKey[0]!.upstream);
      // And a new header session is new even with a known prompt_cache_key in the body.
      const newHdr = await run(1, { prompt_cache_key: 'pck-1' }, { 'x-session-id': 'hdr-fresh' });
      assert.deepEqual(stickyOf(newHdr), ['new']);
    } finally {
      await c.close();
    }
  });

  test('sticky: different sessions can land on different targets, each staying on its own', async () => {
    const c = await startCluster([{ id: 'a' }, { id: 'b' }, { id: 'c' }], `  strategy: sticky\n${BASE_ROUTING}`);
    try {
      const sessions = ['s1', 's2', 's3', 's4', 's5', 's6'];
      const home: Record<string, string> = {};
      for (let round = 0; round < 4; round++) {
        for (const s of sessions) {
          const r = await chat(c.gw, {}, { 'x-session-id': s });
          assert.equal(r.status, 200);
          assert.equal(r.headers.get('x-switchyard-sticky'), round === 0 ? 'new' : 'pinned');
          if (round === 0) home[s] = r.upstream!;
          else assert.equal(r.upstream, home[s], `session ${s} stays on ${home[s]}`);
        }
      }
      const used = new Set(Object.values(home));
      assert.ok(used.size >= 2, `new sessions spread over targets: ${JSON.stringify(home)}`);
      // Every target's traffic is exactly its sessions' 4 requests each.
      for (const id of c.ids) {
        const pinnedHere = sessions.filter((s) => home[s] === id).length;
        assert.equal(c.fakes[id]!.requests.length, pinnedHere * 4, `target ${id}`);
      }
    } finally {
      await c.close();
    }
  });

  test('sticky: when the pinned target cools down the session moves, and stays moved after it recovers', async () => {
    const c = await startCluster(
      [{ id: 'a' }, { id: 'b' }, { id: 'c' }],
      `  strategy: sticky\n  cooldown: { failures: 1, base_ms: 300, max_ms: 300 }\n${BASE_ROUTING}`,
    );
    try {
      const session = { 'x-session-id': 'moving-session' };
      const first = await chat(c.gw, {}, session);
      assert.equal(first.headers.get('x-switchyard-sticky'), 'new');
      const old = first.upstream!;
      for (let i = 0; i < 3; i++) {
        const r = await chat(c.gw, {}, session);
        assert.equal(r.headers.get('x-switchyard-sticky'), 'pinned');
        assert.equal(r.upstream, old);
      }

      // The pinned target starts failing: one 503 cools it, the request fails over.
      c.fakes[old]!.on(() => unavailable());
      const beforeOld = c.fakes[old]!.requests.length;
      const moved = await chat(c.gw, {}, session);
      assert.equal(moved.status, 200);
      assert.equal(moved.headers.get('x-switchyard-sticky'), 'moved');
      assert.equal(moved.headers.get('x-switchyard-attempts'), '2');
      const now = moved.upstream!;
      assert.notEqual(now, old);
      assert.equal(c.fakes[old]!.requests.length, beforeOld + 1, 'the pinned target was tried first');

      for (let i = 0; i < 3; i++) {
        const r = await chat(c.gw, {}, session);
        assert.equal(r.headers.get('x-switchyard-sticky'), 'pinned');
        assert.equal(r.headers.get('x-switchyard-attempts'), '1');
        assert.equal(r.upstream, now);
      }
      assert.equal(c.fakes[old]!.requests.length, beforeOld + 1, 'the cooling target got nothing more');

      // The old target recovers; once its cooldown is over it serves again (session-less
      // requests take turns over all three targets) ...
      c.fakes[old]!.on(() => ok());
      await sleep(400);
      const loose: Result[] = [];
      for (let i = 0; i < 3; i++) loose.push(await chat(c.gw));
      assert.ok(loose.every((r) => r.status === 200));
      assert.ok(
        loose.some((r) => r.upstream === old),
        `the recovered target serves again: ${loose.map((r) => r.upstream).join(',')}`,
      );

      // ... but the session stays where it moved to.
      const oldBefore = c.fakes[old]!.requests.length;
      for (let i = 0; i < 10; i++) {
        const r = await chat(c.gw, {}, session);
        assert.equal(r.status, 200);
        assert.equal(r.headers.get('x-switchyard-sticky'), 'pinned');
        assert.equal(r.upstream, now);
      }
      assert.equal(c.fakes[old]!.requests.length, oldBefore);
    } finally {
      await c.close();
    }
  });
});
