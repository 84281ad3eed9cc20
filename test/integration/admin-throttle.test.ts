/** The admin listener throttles wrong admin keys like the client port, and never the right key. */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { hashKey } from '../../src/auth/keys.js';
import { buildAdmin } from '../../src/server/admin/api.js';
import { FakeUpstream } from '../helpers/fake-upstream.js';
import { startGateway, testConfigYaml, type TestGateway } from '../helpers/gateway.js';

const ADMIN_KEY = 'sk-admin-throttle-0123456789abcdef';

describe('admin API bad-key throttle', () => {
  const upstream = new FakeUpstream();
  let gw: TestGateway;
  let admin: FastifyInstance;
  let url: string;

  before(async () => {
    await upstream.start();
    gw = await startGateway(`${testConfigYaml(upstream.url)}\nadmin:\n  key_sha256: ${hashKey(ADMIN_KEY)}\n`);
    admin = await buildAdmin(gw);
    url = await admin.listen({ host: '127.0.0.1', port: 0 });
  });
  after(async () => {
    await admin?.close();
    await gw?.close();
    await upstream.close();
  });

  test('10 wrong admin keys within a minute: then 429 with Retry-After for unknown keys, never for the right key', async () => {
    const get = (key: string) => fetch(`${url}/admin/upstreams`, { headers: { authorization: `Bearer ${key}` } });
    assert.equal((await get(ADMIN_KEY)).status, 200);
    for (let i = 0; i < 10; i++) {
      const r = await get(`sk-wrong-${i}`);
      assert.equal(r.status, 401, `attempt ${i + 1}`);
      await r.arrayBuffer();
    }
    const blocked = await get('sk-wrong-again');
    assert.equal(blocked.status, 429);
    assert.ok(Number(blocked.headers.get('retry-after')) >= 1);
    await blocked.arrayBuffer();
    assert.equal(blocked.headers.get('x-should-retry'), 'false');
    const right = await get(ADMIN_KEY);
    assert.equal(right.status, 200, 'the right key is accepted whatever else failed from its address');
    await right.arrayBuffer();
    // One wrong key repeated is held back on its own.
    for (let i = 0; i < 10; i++) await (await get('sk-wrong-0')).arrayBuffer();
    const same = await get('sk-wrong-0');
    assert.equal(same.status, 429);
    assert.match(((await same.json()) as { error: { message: string } }).error.message, /not a valid key/);
    // The console page itself stays reachable (it holds no data).
    assert.equal((await fetch(`${url}/console`)).status, 200);
  });
});
