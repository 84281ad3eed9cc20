/**
 * `kill -9` loses no finished request's ledger row. The gateway (a child process, default
 * `ledger.durable_ms` of 1 s) serves 200 requests against a healthy PostgreSQL, then 100 more
 * while the test holds an exclusive lock on `switchyard_requests`, so their INSERT hangs and
 * the rows exist only in the process's memory unless the ledger spools them. 1.6 s after the
 * last answer the process is killed (SIGKILL); the lock is released (the hung INSERT may now
 * land too: the row is then both in PostgreSQL and in the spool). A new process on the same
 * spool and database replays the spool: every request id is in the ledger exactly once.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type pg from 'pg';
import { ChildGateway } from '../helpers/child-gateway.js';
import { hashKey } from '../../src/auth/keys.js';
import { CLIENT_KEY, postChat } from '../helpers/gateway.js';
import { LedgerSetup } from '../helpers/ledger.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The gateway's config: the ledger with its defaults (flush, durability bound) but the spool path and a quick retry. */
function config(setup: LedgerSetup): string {
  return `
ledger: { postgres_url: "${setup.db.url()}", retry_ms: 200, spool_path: "${setup.spool()}" }
upstreams:
  - { id: fake, provider: openai-compatible, base_url: "${setup.fake.url}/v1", api_key: "\${TEST_UPSTREAM_KEY}" }
models:
  - name: gpt-test
    price: { input: 2.5, output: 10 }
    targets: [{ upstream: fake, model: up-x }]
keys:
  - { name: team-a, key_sha256: ${hashKey(CLIENT_KEY)} }
`;
}

/** Sends `n` chat calls, `width` at a time, with request ids `<prefix>-<i>`; every one must answer 200. */
async function load(url: string, prefix: string, n: number, width: number): Promise<string[]> {
  const ids: string[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < n) {
        const id = `${prefix}-${next++}`;
        const r = await postChat({ url }, { model: 'gpt-test', messages: [{ role: 'user', content: 'hi' }] }, { headers: { 'x-request-id': id } });
        assert.equal(r.status, 200, r.text);
        ids.push(id);
      }
    }),
  );
  return ids;
}

const readyz = async (url: string) => ((await (await fetch(`${url}/readyz`)).json()) as { ledger?: { state: string; backlog_rows: number } }).ledger;

describe('ledger: SIGKILL loses no row finished more than ledger.durable_ms earlier, and doubles none', () => {
  let setup: LedgerSetup;
  let gw: ChildGateway | null = null;
  let locker: pg.PoolClient | null = null;

  before(async () => {
    setup = await LedgerSetup.create();
  });
  after(async () => {
    await gw?.kill();
    if (locker) {
      await locker.query('ROLLBACK').catch(() => undefined);
      locker.release();
    }
    await setup.close();
  });

  test('200 requests healthy, 100 while PostgreSQL hangs, kill -9, restart: each request once', async () => {
    const yaml = config(setup);
    const file = join(setup.dir, 'switchyard.yaml');
    gw = await ChildGateway.start(yaml, file);
    const healthy = [...(await load(gw.url, 'healthy', 150, 8)), ...(await load(gw.url, 'single', 50, 1))];
    // The table (and today's partition) exist once the first rows are in.
    for (let i = 0; (await setup.db.query('SELECT 1 FROM switchyard_requests LIMIT 1').catch(() => [])).length === 0; i++) {
      assert.ok(i < 100, 'the first rows never reached PostgreSQL');
      await sleep(50);
    }

    locker = await setup.db.pool.connect();
    await locker.query('BEGIN');
    await locker.query('LOCK TABLE switchyard_requests IN ACCESS EXCLUSIVE MODE');
    const stalled = await load(gw.url, 'stalled', 100, 8);
    await sleep(1_600);
    await gw.kill('SIGKILL');
    await locker.query('ROLLBACK');
    locker.release();
    locker = null;

    gw = await ChildGateway.start(yaml, file);
    const url = gw.url;
    for (let i = 0; ; i++) {
      const led = await readyz(url);
      if (led?.state === 'up' && led.backlog_rows === 0) break;
      assert.ok(i < 200, `the spool was not replayed: ${JSON.stringify(led)}`);
      await sleep(50);
    }

    const rows = await setup.db.query<{ request_id: string; n: string }>('SELECT request_id, count(*) AS n FROM switchyard_requests GROUP BY request_id');
    const counts = new Map(rows.map((r) => [r.request_id, Number(r.n)]));
    const missing = [...healthy, ...stalled].filter((id) => !counts.has(id));
    const doubled = rows.filter((r) => Number(r.n) > 1).map((r) => r.request_id);
    assert.deepEqual(missing, [], `${missing.length} finished requests missing from the ledger`);
    assert.deepEqual(doubled, [], 'requests booked more than once');
    assert.equal(rows.length, 300);
  });
});
