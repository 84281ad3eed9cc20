/**
 * The probe wait's halving in the Lua twin of the learned-capacity law (store/redis-capacity.ts),
 * which the store contract's real-time table cannot reach in a test's time (a 16 s wait): an
 * account's state is written into Redis as a saturated account's (raised to 5 after three
 * throttled raises, the wait at 16 s), then calls served at the raised limit are reported
 * through a real StateStore and the wait read back: halved by each, not below its base, as in
 * TypeScript (test/unit/capacity.test.ts).
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import { PROBE_BASE_MS } from '../../src/store/capacity.js';
import { RedisServer } from '../helpers/redis-server.js';
import { storeOn } from '../helpers/shared-store.js';

let redis: RedisServer;
before(async () => {
  redis = await RedisServer.start();
});
after(() => redis?.stop());

test('on Redis, each call served at a raised limit halves the probe wait, not below its base', async () => {
  const prefix = `probe-wait-${randomUUID()}`;
  const store = await storeOn(redis.url, prefix);
  const base = redis.client();
  try {
    const key = `{${prefix}}:cap:acct`;
    const now = Number((await base.time())[0]) * 1000;
    await base.hset(key, { limit: 5, changedAt: now - 1_000, raised: 4, probeMs: 16_000, slowStart: 0, servedAt: 4, servedMs: now - 1_000 });
    const waits: number[] = [];
    for (let i = 0; i < 5; i++) {
      await store.feedback('acct', { signal: 'ok', inFlight: 5 }, { start: 4, min: 1, ceiling: 40 });
      waits.push(Number(await base.hget(key, 'probeMs')));
    }
    assert.deepEqual(
      waits,
      [8_000, 4_000, 2_000, 2_000, 2_000].map((w) => Math.max(w, PROBE_BASE_MS)),
    );
    assert.equal(await base.hget(key, 'limit'), '5', 'within the wait: no raise');
  } finally {
    base.disconnect();
    await store.close();
  }
});
