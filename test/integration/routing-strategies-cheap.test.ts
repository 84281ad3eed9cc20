/**
 * Routing strategy `cheap`, end to end: it always prefers the lowest price and fails over
 * in price order.
 *
 * The real gateway on port 0 in front of several real fake upstreams on loopback (one per
 * target, test/helpers/routing-cluster.ts), driven with the `openai` client and fetch.
 * Where a call went is read from the `x-switchyard-upstream` response header and
 * cross-checked with each fake's received requests.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { BASE_ROUTING, ok, received, sdkChat, startCluster, unavailable } from '../helpers/routing-cluster.js';

describe('routing strategies', () => {
  test('cheap: every request goes to the cheapest target; on its failure, to the next cheapest', async () => {
    const c = await startCluster(
      [
        { id: 'pricey', price: { input: 3, output: 3 } },
        { id: 'cheapest', price: { input: 0.5, output: 1 } },
        { id: 'middle', price: { input: 1, output: 2 } },
      ],
      // Enough failures allowed that the cheapest target never cools during this test.
      `  strategy: cheap\n  cooldown: { failures: 50 }\n${BASE_ROUTING}`,
    );
    try {
      const client = c.gw.client();
      const seq: Headers[] = [];
      for (let i = 0; i < 6; i++) seq.push(await sdkChat(client));
      // Price beats load: a concurrent burst (under the concurrency cap) stays on the cheapest too.
      for (const f of Object.values(c.fakes)) f.on(() => ok(50));
      const burst = await Promise.all(Array.from({ length: 8 }, () => sdkChat(client)));
      for (const h of [...seq, ...burst]) {
        assert.equal(h.get('x-switchyard-strategy'), 'cheap');
        assert.equal(h.get('x-switchyard-upstream'), 'cheapest');
        assert.equal(h.get('x-switchyard-attempts'), '1');
      }
      assert.deepEqual(received(c), { pricey: 0, cheapest: 14, middle: 0 });

      // The cheapest fails: the request still succeeds, on the second cheapest.
      c.fakes['cheapest']!.on(() => unavailable());
      for (let i = 0; i < 3; i++) {
        const h = await sdkChat(client);
        assert.equal(h.get('x-switchyard-attempts'), '2');
        assert.equal(h.get('x-switchyard-upstream'), 'middle');
      }
      assert.deepEqual(received(c), { pricey: 0, cheapest: 17, middle: 3 });

      // Both cheaper ones fail: the third attempt goes to the most expensive.
      c.fakes['middle']!.on(() => unavailable());
      const h = await sdkChat(client);
      assert.equal(h.get('x-switchyard-attempts'), '3');
      assert.equal(h.get('x-switchyard-upstream'), 'pricey');
      assert.deepEqual(received(c), { pricey: 1, cheapest: 18, middle: 4 });
    } finally {
      await c.close();
    }
  });
});
