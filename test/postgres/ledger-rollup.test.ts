/**
 * The ledger's hourly rollup (src/ledger/rollup.ts) against the real PostgreSQL: rows of
 * many hours written by the gateway's own writer, then every spend question answered from
 * the rollup (whole hours) and the rows (part-hours) must equal the same sums computed over
 * the request rows alone; a re-sent batch adds nothing; migration 2 fills the rollup from
 * rows already there; retention drops old hours from both.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { FastifyBaseLogger } from 'fastify';
import pino from 'pino';
import { LedgerSchema, type LedgerConfig } from '../../src/config/schema.js';
import { Ledger } from '../../src/ledger/index.js';
import { MIGRATIONS, migrate } from '../../src/ledger/migrations.js';
import type { RequestRecord } from '../../src/record/request.js';
import { dropExpired } from '../../src/ledger/partitions.js';
import type { LedgerRow } from '../../src/ledger/row.js';
import { spendQuery, spendRow } from '../../src/ledger/spend-query.js';
import { RowWriter } from '../../src/ledger/writer.js';
import { tmpdir } from 'node:os';
import { Value } from '@sinclair/typebox/value';
import { TestDatabase } from '../helpers/postgres.js';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const NOW = Math.floor(Date.now() / HOUR) * HOUR + 17 * 60_000;

/** `n` rows spread over the last three days, with a few keys, models, outcomes and tag sets. */
function rows(n: number, seed: number): LedgerRow[] {
  return Array.from({ length: n }, (_, i) => {
    const j = i + seed;
    return {
      id: crypto.randomUUID(),
      ts: new Date(NOW - ((j * 7_919_000) % (3 * DAY))).toISOString(),
      request_id: `r-${seed}-${i}`,
      key_name: j % 5 === 0 ? null : `key-${j % 3}`,
      tags: j % 4 === 0 ? {} : { repo: `repo-${j % 2}`, ...(j % 3 === 0 ? { dev: 'ana' } : {}) },
      api: 'chat',
      requested_model: `m-${j % 2}`,
      model: j % 7 === 0 ? 'cheap' : `m-${j % 2}`,
      upstream: `acct-${j % 3}`,
      upstream_model: 'up',
      stream: j % 2 === 0,
      status: j % 9 === 0 ? 500 : 200,
      outcome: j % 9 === 0 ? 'upstream_error' : 'ok',
      error_class: null,
      attempts: 1,
      fallback: j % 7 === 0 ? 'm-0' : null,
      shed: j % 11 === 0 ? 'wait' : null,
      ttft_ms: 100,
      duration_ms: 300,
      input_tokens: 10 + (j % 13),
      cached_tokens: j % 3,
      cache_write_tokens: j % 4,
      cache_write_1h_tokens: j % 2,
      output_tokens: 5 + (j % 17),
      reasoning_tokens: j % 2,
      tokens_estimated: false,
      cost_usd: 0.000_1 * (1 + (j % 29)),
    };
  });
}

const SUMS = [
  'requests',
  'cost_usd',
  'input_tokens',
  'cached_tokens',
  'cache_write_tokens',
  'cache_write_1h_tokens',
  'output_tokens',
  'reasoning_tokens',
  'shed',
  'fallback',
];

/** The same question summed over the request rows alone, as the reference. */
async function reference(db: TestDatabase, from: number, to: number, group: string): Promise<Map<string, Record<string, number>>> {
  const expr = group.startsWith('tag:') ? `tags->>'${group.slice(4)}'` : { key: 'key_name', model: 'model', upstream: 'upstream', outcome: 'outcome' }[group]!;
  const rs = await db.query(
    `SELECT date_trunc('day', ts, 'UTC') AS period, ${expr} AS g, count(*) AS requests, sum(cost_usd) AS cost_usd, sum(input_tokens) AS input_tokens,
       sum(cached_tokens) AS cached_tokens, sum(cache_write_tokens) AS cache_write_tokens,
       sum(cache_write_1h_tokens) AS cache_write_1h_tokens, sum(output_tokens) AS output_tokens, sum(reasoning_tokens) AS reasoning_tokens,
       count(*) FILTER (WHERE shed IS NOT NULL) AS shed, count(*) FILTER (WHERE fallback IS NOT NULL) AS fallback
     FROM switchyard_requests WHERE ts >= $1 AND ts < $2 GROUP BY 1, 2`,
    [new Date(from).toISOString(), new Date(to).toISOString()],
  );
  return new Map(rs.map((r) => [`${(r['period'] as Date).toISOString()}|${r['g']}`, Object.fromEntries(SUMS.map((k) => [k, Number(r[k])]))]));
}

async function answer(db: TestDatabase, from: number, to: number, group: string): Promise<Map<string, Record<string, number>>> {
  const q = spendQuery({ from: new Date(from).toISOString(), to: new Date(to).toISOString(), group_by: group, granularity: 'day' }, NOW);
  const rs = (await db.query(q.sql, q.params as unknown[])).map((r) => spendRow(q, r));
  return new Map(rs.map((r) => [`${r['period']}|${r[group]}`, Object.fromEntries(SUMS.map((k) => [k, Number(r[k])]))]));
}

function assertSame(got: Map<string, Record<string, number>>, want: Map<string, Record<string, number>>, label: string): void {
  assert.deepEqual([...got.keys()].sort(), [...want.keys()].sort(), `${label}: the same groups`);
  for (const [k, w] of want) {
    const g = got.get(k)!;
    for (const s of SUMS) {
      if (s === 'cost_usd') assert.ok(Math.abs(g[s]! - w[s]!) < 1e-9, `${label} ${k} cost ${g[s]} vs ${w[s]}`);
      else assert.equal(g[s], w[s], `${label} ${k} ${s}`);
    }
  }
}

describe('ledger hourly rollup', () => {
  let db: TestDatabase;
  let writer: RowWriter;
  const first = rows(400, 0);

  before(async () => {
    db = await TestDatabase.create();
    const c = await db.pool.connect();
    await migrate(c).finally(() => c.release());
    writer = new RowWriter(db.pool);
    await writer.write(first.slice(0, 250));
    await writer.write(first.slice(250));
  });
  after(async () => {
    await db.drop();
  });

  test('the rollup holds every written row once', async () => {
    const [r] = await db.query<{ n: string; cost: number }>('SELECT sum(requests) AS n, sum(cost_usd) AS cost FROM switchyard_spend_hourly');
    const [q] = await db.query<{ n: string; cost: number }>('SELECT count(*) AS n, sum(cost_usd) AS cost FROM switchyard_requests');
    assert.equal(r!.n, '400');
    assert.equal(q!.n, '400');
    assert.ok(Math.abs(r!.cost - q!.cost) < 1e-9);
  });

  test('a re-sent batch (a replay after a timeout that landed) adds nothing to the rollup', async () => {
    await writer.write(first.slice(100, 300));
    const [r] = await db.query<{ n: string }>('SELECT sum(requests) AS n FROM switchyard_spend_hourly');
    assert.equal(r!.n, '400');
  });

  test('whole-hour, part-hour and sub-hour ranges equal the sums over the rows', async () => {
    const ranges: [number, number, string][] = [
      [NOW - 17 * 60_000 - 3 * DAY - HOUR, NOW - 17 * 60_000 + 2 * HOUR, 'all, on whole hours'],
      [NOW - 2 * DAY + 1_234_567, NOW - 987_654, 'part-hours at both ends'],
      [NOW - 5 * HOUR - 600_000, NOW - 5 * HOUR + 900_000, 'inside two hours'],
      [NOW - 10 * HOUR + 60_000, NOW - 10 * HOUR + 120_000, 'one minute'],
    ];
    for (const [from, to, label] of ranges) {
      for (const group of ['key', 'model', 'outcome', 'tag:repo', 'tag:dev']) {
        assertSame(await answer(db, from, to, group), await reference(db, from, to, group), `${label} by ${group}`);
      }
    }
  });

  test('whole hours are read from the rollup, part-hours from the rows', async () => {
    const [busiest] = await db.query<{ hour: Date; n: string }>(
      'SELECT hour, count(*) AS n FROM switchyard_spend_hourly GROUP BY hour ORDER BY 2 DESC LIMIT 1',
    );
    const h = busiest!.hour.getTime();
    const k = Number(busiest!.n);
    const total = async (from: number, to: number) => {
      const q = spendQuery({ from: new Date(from).toISOString(), to: new Date(to).toISOString(), granularity: 'none' }, NOW);
      return Number(spendRow(q, (await db.query(q.sql, q.params as unknown[]))[0]!)['requests']);
    };
    const [whole, part] = [await total(h, h + HOUR), await total(h + 60_000, h + HOUR)];
    await db.query('UPDATE switchyard_spend_hourly SET requests = requests + 1000 WHERE hour = $1', [new Date(h).toISOString()]);
    try {
      assert.equal(await total(h, h + HOUR), whole + 1000 * k, 'the whole hour comes from the rollup');
      assert.equal(await total(h + 60_000, h + HOUR), part, 'a part-hour comes from the rows');
    } finally {
      await db.query('UPDATE switchyard_spend_hourly SET requests = requests - 1000 WHERE hour = $1', [new Date(h).toISOString()]);
    }
  });

  test('retention drops old hours from the rollup with their partitions', async () => {
    const before = await db.query<{ n: string }>('SELECT count(*) AS n FROM switchyard_spend_hourly WHERE hour < $1', [
      new Date(Math.floor(NOW / DAY) * DAY - DAY).toISOString(),
    ]);
    assert.ok(Number(before[0]!.n) > 0, 'there are rollup rows older than yesterday');
    const c = await db.pool.connect();
    const dropped = await dropExpired(c, 2, NOW).finally(() => c.release());
    assert.ok(dropped.length > 0, 'a partition was dropped');
    const keepFrom = new Date(Math.floor(NOW / DAY) * DAY - DAY).toISOString();
    const [old] = await db.query<{ n: string }>('SELECT count(*) AS n FROM switchyard_spend_hourly WHERE hour < $1', [keepFrom]);
    assert.equal(old!.n, '0');
    const [r] = await db.query<{ n: string }>('SELECT sum(requests) AS n FROM switchyard_spend_hourly');
    const [q] = await db.query<{ n: string }>('SELECT count(*) AS n FROM switchyard_requests');
    assert.equal(r!.n, q!.n, 'rollup and rows still agree');
  });
});

describe('ledger migration 2', () => {
  let db: TestDatabase;
  before(async () => {
    db = await TestDatabase.create();
  });
  after(async () => {
    await db.drop();
  });

  test('fills the rollup from the rows a version-1 ledger already holds', async () => {
    const c = await db.pool.connect();
    try {
      await c.query(MIGRATIONS[0]!.sql);
      await c.query(
        'CREATE TABLE switchyard_ledger_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())',
      );
      await c.query("INSERT INTO switchyard_ledger_migrations (version, name) VALUES (1, 'requests')");
      const old = rows(120, 7);
      await c.query(`CREATE TABLE switchyard_requests_all PARTITION OF switchyard_requests DEFAULT`);
      for (const full of old) {
        // A version-1 row: no cache_write_1h_tokens yet (migration 3 adds it, 0 for these rows).
        const { cache_write_1h_tokens: _added, ...r } = full;
        const cols = Object.keys(r);
        await c.query(
          `INSERT INTO switchyard_requests (${cols.join(', ')}) VALUES (${cols.map((_, i) => `$${i + 1}`).join(', ')})`,
          Object.values(r).map((v) => (typeof v === 'object' && v !== null ? JSON.stringify(v) : v)),
        );
      }
      assert.deepEqual(await migrate(c), [2, 3]);
    } finally {
      c.release();
    }
    const [r] = await db.query<{ n: string }>('SELECT sum(requests) AS n FROM switchyard_spend_hourly');
    assert.equal(r!.n, '120');
    for (const group of ['key', 'tag:repo']) {
      assertSame(await answer(db, NOW - 4 * DAY, NOW + HOUR, group), await reference(db, NOW - 4 * DAY, NOW + HOUR, group), `after migration, by ${group}`);
    }
  });
});

describe('ledger: a batch with one row PostgreSQL refuses', () => {
  let db: TestDatabase;
  before(async () => {
    db = await TestDatabase.create();
  });
  after(async () => {
    await db.drop();
  });

  test('loses only that row: the others are written one by one, the rollup agrees', async () => {
    const lines: string[] = [];
    const log = pino({ level: 'info' }, { write: (l: string) => void lines.push(l) }) as unknown as FastifyBaseLogger;
    const cfg: LedgerConfig = {
      ...(Value.Default(LedgerSchema, {}) as LedgerConfig),
      flush_ms: 10_000,
      durable_ms: 60_000,
      spool_path: `${tmpdir()}/sy-ledger-bad-${process.pid}.jsonl`,
    };
    const ledger = new Ledger(db.url(), cfg, log, 0);
    const counts: Record<string, number> = {};
    ledger.onRows = (result, n) => void (counts[result] = (counts[result] ?? 0) + n);
    ledger.start();
    const rec = (id: string): RequestRecord => ({
      requestId: id,
      api: 'chat',
      key: 'team-a',
      model: 'm',
      requestedModel: 'm',
      upstream: 'u',
      upstreamModel: 'um',
      stream: false,
      status: 200,
      outcome: 'ok',
      errorClass: null,
      startedAt: Date.now(),
      durationMs: 5,
      ttftMs: null,
      usage: { input: 3, cached: 0, output: 2, reasoning: 0 },
      usageEstimated: false,
      costUsd: 0.001,
      attempts: 1,
      fallback: null,
      shed: null,
      tags: {},
    });
    // A NUL character: PostgreSQL's text type refuses it (22021), a data error, not an outage.
    for (const id of ['ok-1', 'ok-2', 'bad-\u0000', 'ok-3', 'ok-4']) ledger.add(rec(id));
    await ledger.close();
    assert.deepEqual(counts, { written: 4, dropped: 1 });
    const ids = (await db.query<{ request_id: string }>('SELECT request_id FROM switchyard_requests ORDER BY 1')).map((r) => r.request_id);
    assert.deepEqual(ids, ['ok-1', 'ok-2', 'ok-3', 'ok-4']);
    const [r] = await db.query<{ n: string }>('SELECT sum(requests) AS n FROM switchyard_spend_hourly');
    assert.equal(r!.n, '4');
    assert.equal(lines.filter((l) => l.includes('ledger row refused by PostgreSQL; dropped')).length, 1);
  });
});
