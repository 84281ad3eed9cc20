/**
 * PostgreSQL refusing the gateway is not an outage: a URL naming a database that does not
 * exist, or a role that does not exist, makes the ledger `misconfigured`: `/readyz` answers
 * 503 naming the problem (never the password), one error line says the same, requests are
 * still served and their rows spooled; once the database exists the rows are replayed, once.
 */
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import pg from 'pg';
import { postChat, type TestGateway } from '../helpers/gateway.js';
import { LedgerSetup } from '../helpers/ledger.js';

const PG_PASSWORD = 'pg-secret-b41c07';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Ready {
  code: number;
  body: { status: string; ledger: { state: string; backlog_rows: number; problem?: string } };
}
const readyz = async (gw: TestGateway): Promise<Ready> => {
  const res = await fetch(`${gw.url}/readyz`);
  return { code: res.status, body: (await res.json()) as Ready['body'] };
};

async function until<T>(what: string, ms: number, fn: () => Promise<T | undefined | false>): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

/** `url` with its database replaced by `db`, its user by `user` and the test's password added. */
function urlWith(url: string, db: string, user = 'postgres'): string {
  const u = new URL(url);
  u.pathname = `/${db}`;
  u.username = user;
  u.password = PG_PASSWORD;
  return u.toString();
}

/** Waits for `/readyz` to be 503 `misconfigured`, checks the body and serves one request whose row must reach the spool. */
async function refused(gw: TestGateway, spool: string, requestId: string, names: string, code: string): Promise<void> {
  const r = await until('ledger misconfigured', 10_000, async () => {
    const x = await readyz(gw);
    return x.body.ledger.state === 'misconfigured' && x;
  });
  assert.equal(r.code, 503);
  assert.equal(r.body.status, 'not_ready');
  assert.ok(r.body.ledger.problem?.includes(names) && r.body.ledger.problem.includes(code), JSON.stringify(r.body));
  assert.ok(!JSON.stringify(r.body).includes(PG_PASSWORD), 'the password is not in /readyz');

  const res = await postChat(gw, { model: 'gpt-test', messages: [{ role: 'user', content: 'hi' }] }, { headers: { 'x-request-id': requestId } });
  assert.equal(res.status, 200, 'requests are still served');
  await until('the row in the spool', 5_000, async () => existsSync(spool) && readFileSync(spool, 'utf8').includes(`"${requestId}"`));
  // Several retries (retry_ms 200) later: still one error line for the one problem, no "cannot reach".
  await sleep(700);
  const errors = gw.logLines().filter((l) => l['msg'] === 'ledger refused by PostgreSQL: not ready until it is fixed; spooling rows meanwhile');
  assert.equal(errors.length, 1, JSON.stringify(errors));
  assert.equal(errors[0]!['level'], 'error');
  assert.ok(String(errors[0]!['problem']).includes(names));
  assert.ok(!gw.logs.some((l) => l.includes('cannot reach PostgreSQL')), 'not logged as an outage');
  assert.ok(!gw.logs.some((l) => l.includes(PG_PASSWORD)), 'the password is never logged');
}

describe('ledger: PostgreSQL refuses the gateway', () => {
  let setup: LedgerSetup;
  let late: string;
  let admin: pg.Client;

  before(async () => {
    setup = await LedgerSetup.create();
    late = `${setup.db.name}_late`;
    admin = new pg.Client({ connectionString: setup.db.url().replace(/\/[^/]+$/, '/postgres') });
    await admin.connect();
  });
  after(async () => {
    await setup.close();
    await admin.query(`DROP DATABASE IF EXISTS ${late} WITH (FORCE)`);
    await admin.end();
  });

  test('a database that does not exist: 503 naming it, rows spooled, replayed once it exists', async () => {
    const gw = await setup.ledgerGateway('', {}, 'no-db', urlWith(setup.db.url(), late));
    await refused(gw, setup.spool('no-db'), 'no-db-1', `database "${late}" does not exist`, '3D000');

    await admin.query(`CREATE DATABASE ${late}`);
    const r = await until('ledger up', 10_000, async () => {
      const x = await readyz(gw);
      return x.body.ledger.state === 'up' && x.body.ledger.backlog_rows === 0 && x;
    });
    assert.equal(r.code, 200);
    assert.equal(r.body.ledger.problem, undefined);
    const db = new pg.Client({ connectionString: setup.db.url().replace(/\/[^/]+$/, `/${late}`) });
    await db.connect();
    try {
      const rows = await db.query<{ request_id: string }>('SELECT request_id FROM switchyard_requests');
      assert.deepEqual(
        rows.rows.map((x) => x.request_id),
        ['no-db-1'],
      );
    } finally {
      await db.end();
    }
  });

  test('a role that does not exist: 503 naming it, rows spooled', async () => {
    const gw = await setup.ledgerGateway('', {}, 'no-role', urlWith(setup.db.url(), setup.db.name, 'sy_no_such_role'));
    await refused(gw, setup.spool('no-role'), 'no-role-1', 'role "sy_no_such_role" does not exist', '28000');
  });
});
