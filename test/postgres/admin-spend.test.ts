/**
 * `GET /admin/spend` reads the ledger back per key, model and tag, and what it says equals
 * the Prometheus spend counters and the `x-switchyard-cost-usd` headers of the same
 * requests. Bad parameters are 400s naming the parameter; no ledger is a 503 that says
 * what to set.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { hashKey } from '../../src/auth/keys.js';
import { buildAdmin } from '../../src/server/admin/api.js';
import { FakeUpstream } from '../helpers/fake-upstream.js';
import { postChat, startGateway, testConfigYaml, type TestGateway } from '../helpers/gateway.js';
import { LedgerSetup, ledgerConfig } from '../helpers/ledger.js';
import { metricSum } from '../helpers/metrics-text.js';
import type { TestDatabase } from '../helpers/postgres.js';

const ADMIN_KEY = 'sk-admin-spend-0123456789abcdef0123';
const admin = `admin:\n  key_sha256: ${hashKey(ADMIN_KEY)}\n`;

interface Spend {
  totals: { requests: number; cost_usd: number };
  data: Record<string, string | number | null>[];
  ledger: string;
  backlog_rows: number;
}

describe('GET /admin/spend', () => {
  let setup: LedgerSetup;
  let db: TestDatabase;
  let gw: TestGateway;
  let adm: FastifyInstance;
  let adminUrl: string;
  const headerCost: Record<string, number> = { api: 0, web: 0 };

  const spend = async (
    qs: string,
    key = ADMIN_KEY,
  ): Promise<{ status: number; body: Spend & { error?: { message: string; param: string; code: string } } }> => {
    const res = await fetch(`${adminUrl}/admin/spend?${qs}`, { headers: { authorization: `Bearer ${key}` } });
    return { status: res.status, body: (await res.json()) as Spend & { error?: { message: string; param: string; code: string } } };
  };

  before(async () => {
    setup = await LedgerSetup.create();
    db = setup.db;
    gw = await setup.gateway(ledgerConfig(setup.fake.url, db.url(), setup.spool()) + admin);
    adm = await buildAdmin(gw);
    adminUrl = await adm.listen({ host: '127.0.0.1', port: 0 });
    const chat = (content: string, tags: string, extra: Record<string, unknown> = {}) =>
      postChat(gw, { model: 'gpt-test', messages: [{ role: 'user', content }], ...extra }, { headers: { 'x-switchyard-tags': tags } });
    for (let i = 0; i < 6; i++) headerCost['api']! += Number((await chat('hi', 'repo=api,dev=ana')).headers.get('x-switchyard-cost-usd'));
    for (let i = 0; i < 4; i++) headerCost['web']! += Number((await chat('hi', 'repo=web')).headers.get('x-switchyard-cost-usd'));
    for (let i = 0; i < 3; i++) assert.match((await chat('hi', 'repo=web', { stream: true, stream_options: { include_usage: true } })).text, /\[DONE\]/);
    for (let i = 0; i < 2; i++) assert.equal((await chat('fail', 'repo=api')).status, 200);
    const end = Date.now() + 10_000;
    for (;;) {
      const s = await spend('granularity=none');
      if (s.status === 200 && s.body.totals.requests === 15 && s.body.backlog_rows === 0) break;
      if (Date.now() > end) throw new Error(`ledger never held the 15 rows: ${JSON.stringify(s.body)}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  });
  after(async () => {
    await adm.close();
    await setup.close();
  });

  test('per key and model it equals the Prometheus spend counters', async () => {
    const s = await spend('group_by=key,model&granularity=day');
    assert.equal(s.status, 200);
    const metrics = await gw.metricsText();
    for (const model of ['gpt-test', 'gpt-cheap']) {
      const fromLedger = s.body.data.filter((r) => r['model'] === model && r['key'] === 'team-a').reduce((a, r) => a + Number(r['cost_usd']), 0);
      const fromMetrics = metricSum(metrics, 'switchyard_spend_usd_total', { key: 'team-a', model });
      assert.ok(fromMetrics > 0, model);
      assert.ok(Math.abs(fromLedger - fromMetrics) < 1e-12, `${model}: ledger ${fromLedger} vs metrics ${fromMetrics}`);
    }
    const today = new Date().toISOString().slice(0, 10);
    assert.ok(
      s.body.data.every((r) => String(r['period']).startsWith(today)),
      'one day',
    );
    assert.ok(Math.abs(s.body.totals.cost_usd - metricSum(metrics, 'switchyard_spend_usd_total')) < 1e-12);
  });

  test('per tag: the JSON answers equal their cost headers, fallbacks and streams counted', async () => {
    const s = await spend('group_by=tag:repo,model&granularity=none');
    const row = (repo: string, model: string) => s.body.data.find((r) => r['tag:repo'] === repo && r['model'] === model);
    assert.equal(row('api', 'gpt-test')!['requests'], 6);
    assert.ok(Math.abs(Number(row('api', 'gpt-test')!['cost_usd']) - headerCost['api']!) < 1e-7);
    assert.equal(row('api', 'gpt-cheap')!['requests'], 2);
    assert.equal(row('api', 'gpt-cheap')!['fallback'], 2);
    assert.equal(row('web', 'gpt-test')!['requests'], 7);
    assert.equal(Number(row('web', 'gpt-test')!['input_tokens']), 4 * 11 + 3 * 13);
    const byDev = await spend('group_by=tag:dev&granularity=none');
    assert.deepEqual(
      byDev.body.data.map((r) => [r['tag:dev'], r['requests']]).sort(),
      [
        ['ana', 6],
        [null, 9],
      ].sort(),
    );
  });

  test('on whole hours (read from the hourly rollup) it says what the request rows say', async () => {
    const HOUR = 3_600_000;
    const from = new Date(Math.floor(Date.now() / HOUR) * HOUR - 24 * HOUR).toISOString();
    const to = new Date(Math.ceil((Date.now() + 1) / HOUR) * HOUR).toISOString();
    const rolled = await spend(`from=${from}&to=${to}&group_by=tag:repo,model&granularity=none`);
    const rows = await spend('group_by=tag:repo,model&granularity=none');
    const rolledUp = await db.query<{ n: string }>('SELECT sum(requests) AS n FROM switchyard_spend_hourly');
    assert.equal(rolledUp[0]!.n, '15', 'the rollup holds the 15 requests');
    const norm = (b: Spend) =>
      b.data.map((r) => `${r['tag:repo']}|${r['model']}|${r['requests']}|${Number(r['cost_usd']).toFixed(12)}|${r['fallback']}`).sort();
    assert.deepEqual(norm(rolled.body), norm(rows.body));
    assert.equal(rolled.body.totals.requests, 15);
  });

  test('a time range outside the traffic is empty', async () => {
    const s = await spend('from=2020-01-01&to=2020-02-01&group_by=key');
    assert.equal(s.status, 200);
    assert.deepEqual(s.body.data, []);
    assert.equal(s.body.totals.requests, 0);
  });

  test('from/to take UTC offsets, an unencoded + included; a repeated group_by is one list', async () => {
    const at = (qs: string) => spend(`${qs}&to=2026-12-02T00:00:00Z&granularity=none`);
    for (const from of ['2026-12-01T05:30:00%2B05:30', '2026-12-01T05:30:00+05:30', '2026-12-01T05:30:00+0530', '2025-12-31T19:00:00-05:00']) {
      const s = await at(`from=${from}`);
      assert.equal(s.status, 200, `${from}: ${JSON.stringify(s.body.error)}`);
      assert.equal((s.body as unknown as { from: string }).from, from.startsWith('2025') ? '2026-01-01T00:00:00.000Z' : '2026-12-01T00:00:00.000Z', from);
    }
    const s = await spend('group_by=key&group_by=model&granularity=none');
    assert.equal(s.status, 200);
    assert.deepEqual((s.body as unknown as { group_by: string[] }).group_by, ['key', 'model']);
    assert.ok(s.body.data.length > 0 && s.body.data.every((r) => r['key'] === 'team-a' && typeof r['model'] === 'string'), JSON.stringify(s.body.data));
  });

  test('bad parameters are 400s that name them; a client key is 403', async () => {
    for (const [qs, param, says] of [
      ['group_by=colour', 'group_by', /Unknown group/],
      ['group_by=key,key', 'group_by', /twice/],
      ["group_by=tag:Repo'", 'group_by', /Unknown group/],
      ['granularity=week', 'granularity', /hour, day, month, none/],
      ['from=yesterday', 'from', /ISO-8601/],
      ['from=1', 'from', /ISO-8601/], // not ISO-8601, though Date.parse reads it as 2001-01-01
      ['from=2026-02-31', 'from', /ISO-8601/], // no such day (Date.parse rolls it to March 3)
      ['from=-271821-04-20&to=-271821-04-21', 'to', /ISO-8601/], // beyond PostgreSQL's range: was a 503 "retry shortly"
      ['from=2026-12-02&to=2026-12-01', 'from', /before/],
      ['from=2020-01-01&to=2026-01-01', 'from', /400 days/],
    ] as const) {
      const s = await spend(qs);
      assert.equal(s.status, 400, qs);
      assert.equal(s.body.error!.param, param, qs);
      assert.match(s.body.error!.message, says, qs);
    }
    assert.equal((await spend('', 'sk-test-client-0123456789abcdef')).status, 403);
  });

  test('a truncated answer (over 10000 groups) still totals every group', async () => {
    // 10050 one-request groups on a day of their own, written as the ledger writes rows.
    await db.query(
      `CREATE TABLE IF NOT EXISTS switchyard_requests_20210601 PARTITION OF switchyard_requests FOR VALUES FROM ('2021-06-01T00:00:00Z') TO ('2021-06-02T00:00:00Z')`,
    );
    await db.query(`INSERT INTO switchyard_requests (id, ts, request_id, key_name, tags, stream, status, outcome, attempts, duration_ms,
        input_tokens, cached_tokens, cache_write_tokens, output_tokens, reasoning_tokens, tokens_estimated, cost_usd)
      SELECT gen_random_uuid(), '2021-06-01T00:00:01Z', 'many-' || g, 'team-a', jsonb_build_object('n', 'v' || g), false, 200, 'ok', 1, 1, 1, 0, 0, 1, 0, false, 0.5
      FROM generate_series(1, 10050) g`);
    try {
      const s = await spend('from=2021-06-01T00:00:00Z&to=2021-06-01T00:30:00Z&group_by=tag:n&granularity=none');
      assert.equal(s.status, 200);
      assert.equal((s.body as unknown as { truncated: boolean }).truncated, true);
      assert.equal(s.body.data.length, 10_000);
      assert.deepEqual(s.body.totals, { requests: 10_050, cost_usd: 5025 });
    } finally {
      await db.query('DROP TABLE switchyard_requests_20210601');
    }
  });
});

describe('GET /admin/spend without a ledger', () => {
  test('is a 503 ledger_unavailable that says to set DATABASE_URL', async () => {
    const fake = await new FakeUpstream().start();
    const gw = await startGateway(testConfigYaml(fake.url) + admin);
    const adm = await buildAdmin(gw);
    try {
      const url = await adm.listen({ host: '127.0.0.1', port: 0 });
      const res = await fetch(`${url}/admin/spend`, { headers: { authorization: `Bearer ${ADMIN_KEY}` } });
      assert.equal(res.status, 503);
      const body = (await res.json()) as { error: { code: string; message: string } };
      assert.equal(body.error.code, 'ledger_unavailable');
      assert.match(body.error.message, /DATABASE_URL/);
    } finally {
      await adm.close();
      await gw.close();
      await fake.close();
    }
  });
});
