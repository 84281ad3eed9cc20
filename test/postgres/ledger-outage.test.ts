/**
 * The ledger under a PostgreSQL outage and with two replicas: PostgreSQL cut off mid-load
 * (a proxy in front of it resets every connection and refuses new ones) and brought back —
 * no request fails, `/readyz` shows the spool's backlog, and every row arrives exactly once;
 * two replicas started together on one database migrate once and both write all their rows.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { postChat, type TestGateway } from '../helpers/gateway.js';
import { metricSum } from '../helpers/metrics-text.js';
import { PgProxy, type TestDatabase } from '../helpers/postgres.js';
import { LedgerSetup } from '../helpers/ledger.js';
import { MIGRATIONS } from '../../src/ledger/migrations.js';

const PG_PASSWORD = 'pg-secret-7f3a91';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until(what: string, ms: number, fn: () => Promise<boolean>): Promise<void> {
  const end = Date.now() + ms;
  while (!(await fn())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

/** Sends `n` chat calls, `width` at a time, with request ids `<prefix>-<i>`; returns their statuses. */
async function load(gw: TestGateway, prefix: string, n: number, width = 8): Promise<number[]> {
  const statuses: number[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < n) {
        const i = next++;
        const r = await postChat(gw, { model: 'gpt-test', messages: [{ role: 'user', content: 'hi' }] }, { headers: { 'x-request-id': `${prefix}-${i}` } });
        statuses.push(r.status);
      }
    }),
  );
  return statuses;
}

const readyz = async (gw: TestGateway) => ((await (await fetch(`${gw.url}/readyz`)).json()) as { ledger: { state: string; backlog_rows: number } }).ledger;

describe('ledger: PostgreSQL cut off mid-load loses no row and doubles none', () => {
  let setup: LedgerSetup;
  let db: TestDatabase;
  const proxy = new PgProxy();
  let gw: TestGateway;

  before(async () => {
    setup = await LedgerSetup.create();
    db = setup.db;
    await proxy.start();
    // A password in the URL (trust auth ignores it): it must never reach a log line.
    const url = db.url(proxy.port).replace('//postgres@', `//postgres:${PG_PASSWORD}@`);
    gw = await setup.ledgerGateway(', batch_rows: 20', { DATABASE_URL: url }, 'spool', '${DATABASE_URL}');
  });
  after(async () => {
    await setup.close();
    await proxy.stop();
  });

  test('rows spool while PostgreSQL is away and are replayed once it is back', async () => {
    await until('ledger up', 5000, async () => (await readyz(gw)).state === 'up');
    const during = load(gw, 'out', 300);
    await sleep(150);
    await proxy.stop();
    await sleep(600);
    const mid = await readyz(gw);
    const statuses = await during;
    assert.deepEqual([...new Set(statuses)], [200], 'no request fails because the ledger is down');
    assert.equal(mid.state, 'spooling');
    assert.ok(mid.backlog_rows > 0, JSON.stringify(mid));
    const spooled = metricSum(await gw.metricsText(), 'switchyard_ledger_rows_total', { result: 'spooled' });
    assert.ok(spooled > 0, 'rows went to the spool');

    await proxy.start();
    await until('ledger replayed', 10_000, async () => {
      const s = await readyz(gw);
      return s.state === 'up' && s.backlog_rows === 0;
    });
    const [counts] = await db.query<{ rows: string; ids: string; reqs: string }>(
      "SELECT count(*) AS rows, count(DISTINCT id) AS ids, count(DISTINCT request_id) AS reqs FROM switchyard_requests WHERE request_id LIKE 'out-%'",
    );
    assert.deepEqual(counts, { rows: '300', ids: '300', reqs: '300' });
    const [all] = await db.query<{ rows: string; rolled: string }>(
      'SELECT (SELECT count(*) FROM switchyard_requests) AS rows, (SELECT sum(requests) FROM switchyard_spend_hourly) AS rolled',
    );
    assert.equal(all!.rolled, all!.rows, 'the hourly rollup counts each replayed row once');
    assert.ok(metricSum(await gw.metricsText(), 'switchyard_ledger_rows_total', { result: 'replayed' }) > 0);
    assert.equal(metricSum(await gw.metricsText(), 'switchyard_ledger_rows_total', { result: 'dropped' }), 0);
    assert.ok(
      gw.logs.some((l) => l.includes('ledger cannot reach PostgreSQL')),
      'the outage is logged',
    );
    assert.ok(!gw.logs.some((l) => l.includes(PG_PASSWORD)), 'the database password is never logged');
    assert.ok(!(await gw.metricsText()).includes(PG_PASSWORD));
  });
});

describe('ledger: two replicas on one database', () => {
  let setup: LedgerSetup;
  let db: TestDatabase;
  let gws: TestGateway[];

  before(async () => {
    setup = await LedgerSetup.create();
    db = setup.db;
    gws = await Promise.all(['a', 'b'].map((r) => setup.ledgerGateway('', {}, `spool-${r}`)));
  });
  after(() => setup.close());

  test('started together, they migrate once and both write every row', async () => {
    const [a, b] = gws as [TestGateway, TestGateway];
    const statuses = (await Promise.all([load(a, 'rep-a', 100), load(b, 'rep-b', 100)])).flat();
    assert.deepEqual([...new Set(statuses)], [200]);
    await until('200 rows', 10_000, async () => Number((await db.query<{ n: string }>('SELECT count(*) AS n FROM switchyard_requests'))[0]!.n) >= 200);
    const [c] = await db.query<{ n: string; ids: string }>(
      "SELECT count(*) AS n, count(DISTINCT request_id) AS ids FROM switchyard_requests WHERE request_id LIKE 'rep-%'",
    );
    assert.deepEqual(c, { n: '200', ids: '200' });
    // Every migration applied once, by one of the two replicas.
    const migrations = await db.query<{ version: number }>('SELECT version FROM switchyard_ledger_migrations ORDER BY version');
    assert.deepEqual(
      migrations.map((m) => m.version),
      MIGRATIONS.map((m) => m.version),
    );
    const [r] = await db.query<{ n: string }>('SELECT sum(requests) AS n FROM switchyard_spend_hourly');
    assert.equal(r!.n, '200', 'the hourly rollup counts each row once');
  });
});
