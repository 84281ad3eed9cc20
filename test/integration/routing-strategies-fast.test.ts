/**
 * Routing strategy `fast`, end to end: it steers away from a target that turned slow and
 * comes back once it is fast again.
 *
 * The real gateway on port 0 in front of several real fake upstreams on loopback (one per
 * target, test/helpers/routing-cluster.ts), driven with the `openai` client and fetch.
 * Where a call went is read from the `x-switchyard-upstream` response header and
 * cross-checked with each fake's received requests.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { BASE_ROUTING, chat, diff, ok, received, sleep, startCluster, tally } from '../helpers/routing-cluster.js';

describe('routing strategies', () => {
  test('fast: avoids a target that turned 10x slower, and wins it back once it is fast again', async () => {
    // A small decay constant so an idle target's estimate fades within about a second.
    const c = await startCluster([{ id: 'a' }, { id: 'b' }, { id: 'c' }], `  strategy: fast\n  latency_decay_ms: 200\n${BASE_ROUTING}`);
    try {
      const delay: Record<string, number> = { a: 20, b: 20, c: 20 };
      for (const id of c.ids) c.fakes[id]!.on(() => ok(delay[id]));

      // Warm-up: never-measured targets cost 0 and are explored first; go on until every
      // target has answered at least twice.
      for (let i = 0; i < 60 && Object.values(received(c)).some((n) => n < 2); i++) {
        const r = await chat(c.gw);
        assert.equal(r.status, 200);
        assert.equal(r.headers.get('x-switchyard-strategy'), 'fast');
      }
      assert.ok(
        Object.values(received(c)).every((n) => n >= 2),
        `every target measured during warm-up: ${JSON.stringify(received(c))}`,
      );

      // b turns 10x slower: 200 ms vs 20 ms.
      delay['b'] = 200;
      const beforeSlow = received(c);
      const slowPhase: (string | null)[] = [];
      for (let i = 0; i < 50; i++) {
        const r = await chat(c.gw);
        assert.equal(r.status, 200);
        slowPhase.push(r.upstream);
      }
      const slow = tally(c.ids, slowPhase);
      assert.ok(slow['b']! <= 5, `at least 90% of 50 requests avoid the slow target: ${JSON.stringify(slow)}`);

      // b is fast again. It comes back because LatencyBoard.estimate() (src/router/latency.ts)
      // decays an idle target's estimate as ewma·exp(-idle / (3·latency_decay_ms)): with no
      // traffic b's 200 ms estimate falls below the others' ~20 ms after ~600·ln(10) ≈ 1.4 s,
      // power-of-two-choices then picks it whenever it is drawn, and its first fast answer
      // (blended with weight exp(-Δt/τ) ≈ 0 after that idle time) resets the estimate to ~20 ms.
      delay['b'] = 20;
      const recovered: (string | null)[] = [];
      const deadline = Date.now() + 6000;
      while (recovered.filter((u) => u === 'b').length < 3 && Date.now() < deadline) {
        const r = await chat(c.gw);
        assert.equal(r.status, 200);
        recovered.push(r.upstream);
        await sleep(40);
      }
      const back = tally(c.ids, recovered);
      assert.ok(back['b']! >= 3, `the recovered target wins traffic back (${JSON.stringify(back)} over ${recovered.length} requests)`);
      // The headers agree with what the upstreams received in these two phases.
      assert.deepEqual(diff(received(c), beforeSlow), tally(c.ids, [...slowPhase, ...recovered]));
    } finally {
      await c.close();
    }
  });
});
