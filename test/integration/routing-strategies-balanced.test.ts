/**
 * Routing strategy `balanced`, end to end: it spreads a concurrent burst evenly, and in
 * proportion to target weights.
 *
 * The real gateway on port 0 in front of several real fake upstreams on loopback (one per
 * target, test/helpers/routing-cluster.ts), driven with the `openai` client and fetch.
 * Where a call went is read from the `x-switchyard-upstream` response header and
 * cross-checked with each fake's received requests.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { BASE_ROUTING, ok, received, sdkChat, sleep, startCluster, tally } from '../helpers/routing-cluster.js';

describe('routing strategies', () => {
  test('balanced (default): a concurrent burst of 24 spreads 8/8/8 (±2) over three equal targets', async () => {
    // No `strategy` anywhere: `balanced` is the default.
    const c = await startCluster([{ id: 'a' }, { id: 'b' }, { id: 'c' }], BASE_ROUTING);
    try {
      // Each upstream holds its reply for 150 ms, so the burst is in flight at once and
      // the spread comes from in-flight load, not from taking turns.
      let inFlight = 0;
      let peak = 0;
      for (const f of Object.values(c.fakes)) {
        f.on(async () => {
          inFlight++;
          peak = Math.max(peak, inFlight);
          await sleep(150);
          inFlight--;
          return ok();
        });
      }
      const client = c.gw.client();
      const headers = await Promise.all(Array.from({ length: 24 }, () => sdkChat(client)));

      assert.ok(
        headers.every((h) => h.get('x-switchyard-strategy') === 'balanced'),
        'the default strategy is balanced',
      );
      assert.ok(headers.every((h) => h.get('x-switchyard-attempts') === '1'));
      const byHeader = tally(
        c.ids,
        headers.map((h) => h.get('x-switchyard-upstream')),
      );
      assert.deepEqual(byHeader, received(c), 'the header agrees with what each upstream received');
      for (const id of c.ids) {
        assert.ok(Math.abs(byHeader[id]! - 8) <= 2, `target ${id} took ${byHeader[id]} of 24 (expected 8±2): ${JSON.stringify(byHeader)}`);
      }
      assert.ok(peak >= 12, `the burst overlapped upstream (peak ${peak} in flight)`);
    } finally {
      await c.close();
    }
  });

  test('balanced: weights 2:1:1 give the heavier target about half of a 24-request burst', async () => {
    const c = await startCluster(
      [
        { id: 'heavy', weight: 2, maxConcurrency: 16 },
        { id: 'light1', weight: 1, maxConcurrency: 16 },
        { id: 'light2', weight: 1, maxConcurrency: 16 },
      ],
      `  strategy: balanced\n${BASE_ROUTING}`,
    );
    try {
      for (const f of Object.values(c.fakes)) f.on(() => ok(150));
      const client = c.gw.client();
      const headers = await Promise.all(Array.from({ length: 24 }, () => sdkChat(client)));
      const byHeader = tally(
        c.ids,
        headers.map((h) => h.get('x-switchyard-upstream')),
      );
      assert.deepEqual(byHeader, received(c));
      const { heavy, light1, light2 } = byHeader as { heavy: number; light1: number; light2: number };
      // Load is (in-flight + 1) / (weight × max_concurrency): ≈12 / 6 / 6.
      assert.ok(heavy >= 10 && heavy <= 14, `heavy took ${heavy} of 24 (expected about half): ${JSON.stringify(byHeader)}`);
      assert.ok(heavy >= light1 + 3 && heavy >= light2 + 3, `heavy clearly ahead of the light targets: ${JSON.stringify(byHeader)}`);
      assert.ok(light1 >= 4 && light2 >= 4, `the light targets still share the rest: ${JSON.stringify(byHeader)}`);
    } finally {
      await c.close();
    }
  });
});
