/**
 * Spend per key and per model in the shared store, and each target's recent error rate in
 * the admin API: the real gateway on port 0 with its admin listener, a scripted upstream.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { hashKey } from '../../src/auth/keys.js';
import { buildAdmin } from '../../src/server/admin/api.js';
import type { FakeUpstream } from '../helpers/fake-upstream.js';
import { fixtureJson } from '../helpers/recordings.js';
import { CLIENT_KEY, startWithUpstream, testConfigYaml, waitFor, type TestGateway } from '../helpers/gateway.js';

const ADMIN_KEY = 'sk-admin-spend-0123456789abcdef';
let upstream: FakeUpstream;
let gw: TestGateway;
let admin: FastifyInstance;
let adminUrl: string;

before(async () => {
  ({ upstream, gw } = await startWithUpstream((url) => `${testConfigYaml(url)}\nadmin:\n  key_sha256: ${hashKey(ADMIN_KEY)}\n`));
  admin = await buildAdmin(gw);
  adminUrl = await admin.listen({ host: '127.0.0.1', port: 0 });
});
after(async () => {
  await admin.close();
  await gw.close();
  await upstream.close();
});

const chat = () =>
  fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${CLIENT_KEY}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'gpt-test', messages: [{ role: 'user', content: 'hi' }] }),
  });

test('the day spend of the key and of the model in the store equals the logged costs', async () => {
  upstream.on(() => ({ status: 200, body: fixtureJson('openai-chat-gpt5.json') }));
  const before = gw.finished().length;
  for (let i = 0; i < 3; i++) assert.equal((await chat()).status, 200);
  const lines = await waitFor(() => (gw.finished().length >= before + 3 ? gw.finished().slice(before) : null), 2000, 'log lines');
  const logged = lines.reduce((a, l) => a + Number(l['cost_usd']), 0);
  assert.ok(logged > 0);
  await new Promise((r) => setTimeout(r, 50)); // spend is recorded after the response
  const byKey = await gw.limits.spendToday('key', 'team-a');
  const byModel = await gw.limits.spendToday('model', 'gpt-test');
  assert.ok(Math.abs(byKey - logged) < 1e-9, `key spend ${byKey} vs logged ${logged}`);
  assert.ok(Math.abs(byModel - logged) < 1e-9, `model spend ${byModel} vs logged ${logged}`);
});

test("/admin/upstreams shows each target's recent attempts and error rate", async () => {
  upstream.on((_r, i) => (i % 2 === 0 ? { status: 500, body: { error: { message: 'boom' } } } : { status: 200, body: fixtureJson('openai-chat-gpt5.json') }));
  for (let i = 0; i < 4; i++) await chat();
  const res = await fetch(`${adminUrl}/admin/upstreams`, { headers: { authorization: `Bearer ${ADMIN_KEY}` } });
  assert.equal(res.status, 200);
  const body = (await res.json()) as { data: { target: string; recent: { attempts: number; error_rate: number } }[] };
  const t = body.data.find((d) => d.target === 'fake/upstream-model-x')!;
  assert.ok(t.recent.attempts >= 7, `attempts ${t.recent.attempts}`);
  assert.ok(t.recent.error_rate > 0.2 && t.recent.error_rate < 0.8, `error rate ${t.recent.error_rate}`);
});
