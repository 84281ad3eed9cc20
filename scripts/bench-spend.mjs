#!/usr/bin/env node
// npm run bench:spend — how fast GET /admin/spend's queries answer over a month of ledger
// rows. Creates a scratch database on the machine's PostgreSQL (127.0.0.1:5432, user
// postgres; PGHOST/PGPORT override), migrates it with the gateway's own migrations, fills
// DAYS daily partitions with ROWS_PER_DAY synthetic rows each (server-side generate_series:
// 40 keys, 12 models, 6 upstreams, tags repo (25 values) and dev (60)), ANALYZEs, then times
// each query (spend-query.ts builds them, as the admin API does) RUNS times and reports
// the median and worst; the database is dropped after. Results: docs/ledger.md.
//   --days 30 --rows-per-day 200000 --runs 5
import { parseArgs } from 'node:util';
import pg from 'pg';
import { migrate } from '../dist/ledger/migrations.js';
import { ensurePartitions } from '../dist/ledger/partitions.js';
import { withRollup } from '../dist/ledger/rollup.js';
import { spendQuery } from '../dist/ledger/spend-query.js';

const { values } = parseArgs({
  options: { days: { type: 'string', default: '30' }, 'rows-per-day': { type: 'string', default: '200000' }, runs: { type: 'string', default: '5' } },
});
const DAYS = Number(values.days);
const PER_DAY = Number(values['rows-per-day']);
const RUNS = Number(values.runs);
const host = process.env.PGHOST ?? '127.0.0.1';
const port = Number(process.env.PGPORT ?? 5432);
const name = `sy_bench_spend_${process.pid}`;
const adminUrl = `postgres://postgres@${host}:${port}/postgres`;

const admin = new pg.Client({ connectionString: adminUrl });
await admin.connect();
await admin.query(`CREATE DATABASE ${name}`);
const pool = new pg.Pool({ connectionString: `postgres://postgres@${host}:${port}/${name}`, max: 2 });
const DAY = 86_400_000;
const today = Math.floor(Date.now() / DAY) * DAY;
const first = today - (DAYS - 1) * DAY;

/** Migrates and fills the scratch database; returns the seconds it took and its size. */
async function fill(c) {
  await migrate(c);
  await ensurePartitions(
    c,
    Array.from({ length: DAYS }, (_, i) => first + i * DAY),
  );
  const t0 = Date.now();
  for (let d = 0; d < DAYS; d++) {
    const dayStart = new Date(first + d * DAY).toISOString();
    // Through the writer's own statement shape, so the hourly rollup is filled as in production.
    await c.query(
      withRollup(`INSERT INTO switchyard_requests
       SELECT gen_random_uuid(), $1::timestamptz + ((i - 1) * (86400.0 / $2::int)) * interval '1 second', 'r' || i, 'key-' || (i % 40),
              jsonb_build_object('repo', 'repo-' || (i % 25), 'dev', 'dev-' || (i % 60)), 'chat', 'model-' || (i % 12), 'model-' || (i % 12),
              'acct-' || (i % 6), 'up-' || (i % 12), i % 2 = 0, 200, 'ok', NULL, 1, NULL, CASE WHEN i % 20 = 0 THEN 'shed' END,
              CASE WHEN i % 2 = 0 THEN 300 END, 1500, 1200, 300, 0, 400, 200, false, 0.0042
       FROM generate_series(1, $2::int) AS i ON CONFLICT DO NOTHING`),
      [dayStart, PER_DAY],
    );
    process.stderr.write(`\rfilled ${d + 1}/${DAYS} days`);
  }
  await c.query('ANALYZE switchyard_requests');
  await c.query('ANALYZE switchyard_spend_hourly');
  const fillS = (Date.now() - t0) / 1000;
  const size = (
    await c.query("SELECT pg_size_pretty(sum(pg_total_relation_size(inhrelid))) AS s FROM pg_inherits WHERE inhparent = 'switchyard_requests'::regclass")
  ).rows[0].s;
  const rollup = (
    await c.query("SELECT count(*)::int AS n, pg_size_pretty(pg_total_relation_size('switchyard_spend_hourly')) AS s FROM switchyard_spend_hourly")
  ).rows[0];
  return { fillS, size, rollup };
}

try {
  const c = await pool.connect();
  const { fillS, size, rollup } = await fill(c).finally(() => c.release());
  process.stderr.write(`\nfilled ${DAYS * PER_DAY} rows in ${fillS.toFixed(0)} s (${size}; rollup ${rollup.n} rows, ${rollup.s})\n`);

  const to = new Date(today + DAY).toISOString();
  const monthFrom = new Date(first).toISOString();
  const dayFrom = new Date(today).toISOString();
  // Not on whole hours: the first and last part-hours are read from the request rows.
  const offFrom = new Date(first + 1_234_567).toISOString();
  const offTo = new Date(today + DAY - 2_345_678).toISOString();
  const cases = [
    ['month, group_by=key,model, day', { from: monthFrom, to, group_by: 'key,model', granularity: 'day' }],
    ['month, group_by=key,model,tag:repo, day', { from: monthFrom, to, group_by: 'key,model,tag:repo', granularity: 'day' }],
    ['month, group_by=tag:dev, none', { from: monthFrom, to, group_by: 'tag:dev', granularity: 'none' }],
    ['month, totals, none', { from: monthFrom, to, granularity: 'none' }],
    ['month off the hour (part-hours from rows), group_by=key,model, day', { from: offFrom, to: offTo, group_by: 'key,model', granularity: 'day' }],
    ['one day, group_by=key,model,tag:repo, hour', { from: dayFrom, to, group_by: 'key,model,tag:repo', granularity: 'hour' }],
  ];
  const results = [];
  for (const [label, q] of cases) {
    const sq = spendQuery(q);
    const times = [];
    let rows = 0;
    for (let i = 0; i < RUNS; i++) {
      const t = process.hrtime.bigint();
      rows = (await pool.query(sq.sql, sq.params)).rowCount;
      times.push(Number(process.hrtime.bigint() - t) / 1e6);
    }
    times.sort((a, b) => a - b);
    results.push({ label, rows, medianMs: times[Math.floor(times.length / 2)], worstMs: times.at(-1) });
  }
  console.log(
    `npm run bench:spend -- --days ${DAYS} --rows-per-day ${PER_DAY} --runs ${RUNS}  (Node ${process.version}, ${DAYS * PER_DAY} rows, ${size}; rollup ${rollup.n} rows, ${rollup.s}; filled in ${fillS.toFixed(0)} s)\n`,
  );
  console.log('| query | result rows | median ms | worst ms |\n|---|---|---|---|');
  for (const r of results) console.log(`| ${r.label} | ${r.rows} | ${r.medianMs.toFixed(0)} | ${r.worstMs.toFixed(0)} |`);
} finally {
  await pool.end();
  await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  await admin.end();
}
