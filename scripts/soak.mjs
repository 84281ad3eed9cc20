#!/usr/bin/env node
// npm run soak [-- --minutes 10] — two gateway replicas on Redis behind an open-loop load
// generator at 60% of their measured capacity, against two fake provider accounts that
// inject 1% each of connection resets, mid-stream stalls, 429s and 500s (scripts/soak/
// upstream.mjs, its own flags); Redis is killed and restarted once (40% in, with its
// append-only file, as in docker/k8s/redis.yaml) and the config hot-reloaded once (60% in).
// Then it checks: gateway-caused failures, every request once in the logs and the metrics,
// spend (logs = metrics = Redis), RSS growth and event-loop delay, slots held at the end.
// Writes docs/soak.md, docs/soak-chart.svg and docs/bench/soak.json (--out to change).
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { freePort, redisCommand, start, stop, waitHttp } from './bench/procs.mjs';
import { call, dispatcher } from './soak/load.mjs';
import { writeReport } from './soak/report.mjs';

const { values } = parseArgs({
  options: {
    minutes: { type: 'string', default: '10' },
    rate: { type: 'string' },
    out: { type: 'string', default: 'docs' },
    share: { type: 'string', default: '0.6' },
  },
});
const MINUTES = Number(values.minutes);
const KEY = 'sk-soak-0123456789abcdef';
const PREFIX = 'soak';
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const dir = mkdtempSync(join(tmpdir(), 'switchyard-soak-'));
const t00 = Date.now();

// --- Redis with an append-only file (fsync on every write), so a kill loses nothing acknowledged.
const redisPort = await freePort();
const redisArgs = ['--port', String(redisPort), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'yes', '--appendfsync', 'always', '--dir', dir];
let redis = start(dir, 'redis', 'redis-server', redisArgs);
async function redisUp() {
  for (let i = 0; i < 100; i++) {
    if ((await redisCommand(redisPort, 'PING'))?.startsWith('+PONG')) return;
    await sleep(100);
  }
  throw new Error('redis-server did not come up');
}
await redisUp();

// --- Two fake accounts, each its own process with its own fault flags.
async function upstream(name, seed) {
  const port = await freePort();
  const child = start(dir, name, process.execPath, ['scripts/soak/upstream.mjs', '--port', String(port), '--seed', String(seed)]);
  await sleep(300);
  return { name, child, url: `http://127.0.0.1:${port}` };
}
const ups = [await upstream('acct-a', 1), await upstream('acct-b', 2)];

// --- Two gateways on one config file.
const configPath = join(dir, 'switchyard.yaml');
const config = (extraAlias) => `
server: { log_level: info }
store: { redis_url: "redis://127.0.0.1:${redisPort}", replicas: 2, key_prefix: ${PREFIX} }
upstreams:
${ups.map((u, i) => `  - { id: acct-${'ab'[i]}, provider: openai-compatible, base_url: "${u.url}/v1", api_key: "\${SOAK_KEY}", timeouts: { connect_ms: 1000, first_byte_ms: 2000, idle_ms: 1500 } }`).join('\n')}
models:
  - name: soak-model
    aliases: [${extraAlias ? '"soak-reloaded"' : ''}]
    price: { input: 2.5, cached_input: 1.25, output: 10 }
    targets: [{ upstream: acct-a, model: soak-upstream }, { upstream: acct-b, model: soak-upstream }]
keys:
  - name: soak
    key_sha256: ${createHash('sha256').update(KEY).digest('hex')}
    limits: { rpm: 10000000, tpm: 10000000000, budget_usd: { amount: 100000, period: day } }
`;
writeFileSync(configPath, config(false));
const gateways = [];
for (const name of ['gw-1', 'gw-2']) {
  const port = await freePort();
  const child = start(dir, name, process.execPath, ['dist/main.js', '--config', configPath], { PORT: String(port), SOAK_KEY: 'sk-upstream-soak' });
  const url = `http://127.0.0.1:${port}`;
  await waitHttp(`${url}/healthz`);
  gateways.push({ name, child, url, log: join(dir, `${name}.log`) });
}

// --- Metrics scraped every 5 s: RSS, event-loop delay p99 (prom-client resets it per scrape).
const samples = [];
const metric = (text, name) => Number(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, 'm').exec(text)?.[1] ?? NaN);
const sum = (text, name) => [...text.matchAll(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, 'gm'))].reduce((s, m) => s + Number(m[1]), 0);
const scrape = async (g) => (await fetch(`${g.url}/metrics`)).text();
async function sample(phase) {
  const row = { t: (Date.now() - t00) / 1000, phase };
  for (const g of gateways) {
    const text = await scrape(g).catch(() => '');
    const limits = [...text.matchAll(/^switchyard_call_capacity_limit\{upstream="([^"]+)"\} (\S+)$/gm)].map((m) => `${m[1]}=${m[2]}`).join(' ');
    row[g.name] = {
      rssMb: metric(text, 'switchyard_process_resident_memory_bytes') / 1048576,
      loopP99Ms: metric(text, 'switchyard_nodejs_eventloop_lag_p99_seconds') * 1000,
      // CPU seconds used so far (the process's own counter), to tell the gateway's cost from its neighbours'.
      cpuS: metric(text, 'switchyard_process_cpu_seconds_total'),
      callLimits: limits,
    };
  }
  // The load generator's own CPU seconds: it shares the 2 cores with the gateways.
  const cpu = process.cpuUsage();
  row.loadCpuS = (cpu.user + cpu.system) / 1e6;
  samples.push(row);
}

// --- Load.
const results = [];
// Counted as answers arrive: the loop below runs every few ms and must not rescan `results`
// (a filter there grew with the run and its CPU showed up as the gateways' event-loop delay).
let gatewayFailed = 0;
let inFlight = 0;
let n = 0;
function fire() {
  const g = gateways[n % 2];
  const stream = n % 2 === 1;
  n++;
  inFlight++;
  void call(`${g.url}/v1/chat/completions`, KEY, stream).then((r) => {
    inFlight--;
    results.push(r);
    if (r.outcome === 'gateway') gatewayFailed++;
  });
}
let lastProgress = 0;
const progress = (label, frac, extra) => {
  if (Date.now() - lastProgress < (process.stderr.isTTY ? 250 : 10_000) && frac < 1) return;
  lastProgress = Date.now();
  const w = 30;
  const bar = '#'.repeat(Math.round(frac * w)).padEnd(w, '.');
  process.stderr.write(
    `${process.stderr.isTTY ? '\r' : ''}${label} [${bar}] ${(frac * 100).toFixed(0).padStart(3)}% ${extra}${process.stderr.isTTY ? '   ' : '\n'}`,
  );
};

// Capacity: a closed loop of 64 callers for 15 s (faults on), unless --rate is given.
let rate = Number(values.rate ?? 0);
let capacity = null;
if (!rate) {
  const end = Date.now() + 15_000;
  const before = results.length;
  const t0 = Date.now();
  await Promise.all(
    Array.from({ length: 64 }, async (_, i) => {
      while (Date.now() < end) {
        const g = gateways[i % 2];
        n++;
        results.push(await call(`${g.url}/v1/chat/completions`, KEY, i % 2 === 1));
        progress('capacity', Math.min(1, (Date.now() - t0) / 15_000), `${results.length - before} calls`);
      }
    }),
  );
  capacity = (results.length - before) / ((Date.now() - t0) / 1000);
  rate = Math.round(capacity * Number(values.share));
  process.stderr.write(`\ncapacity ${capacity.toFixed(0)} req/s -> open loop at ${rate} req/s for ${MINUTES} min\n`);
}

const soakMs = MINUTES * 60_000;
const events = [];
const soakStart = Date.now();
const at = (frac) => soakStart + frac * soakMs;
let killed = false;
let restarted = false;
let reloaded = false;
let next = Date.now();
let lastSample = 0;
await sample('start');
while (Date.now() < soakStart + soakMs) {
  const now = Date.now();
  // Open loop: fire what is due (interval 1/rate), however slow the answers are.
  while (next <= now) {
    if (inFlight < 5000) fire();
    next += 1000 / rate;
  }
  if (!killed && now >= at(0.4)) {
    killed = true;
    redis.kill('SIGKILL');
    events.push({ t: (now - t00) / 1000, what: 'Redis killed' });
  }
  if (killed && !restarted && now >= at(0.4) + 10_000) {
    restarted = true;
    redis = start(dir, 'redis-2', 'redis-server', redisArgs);
    await redisUp();
    events.push({ t: (Date.now() - t00) / 1000, what: 'Redis restarted' });
  }
  if (!reloaded && now >= at(0.6)) {
    reloaded = true;
    writeFileSync(configPath, config(true));
    for (const g of gateways) g.child.kill('SIGHUP');
    events.push({ t: (now - t00) / 1000, what: 'config reloaded (SIGHUP)' });
  }
  if (now - lastSample >= 5_000) {
    lastSample = now;
    void sample('soak');
  }
  progress('soak', (now - soakStart) / soakMs, `sent ${n} answered ${results.length} in flight ${inFlight} gateway-caused ${gatewayFailed}`);
  await sleep(Math.max(1, Math.min(20, next - Date.now())));
}
process.stderr.write('\ndraining…\n');
while (inFlight > 0) await sleep(50);
await sleep(1500); // settlements after the last byte
await sample('end');

// --- Checks.
const metricsText = await Promise.all(gateways.map(scrape));
const logLines = gateways.flatMap((g) =>
  readFileSync(g.log, 'utf8')
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l)),
);
const finished = logLines.filter((l) => l.msg === 'request finished');
const ids = new Map();
for (const l of finished) ids.set(l.request_id, (ids.get(l.request_id) ?? 0) + 1);
const clientIds = results.filter((r) => r.requestId).map((r) => r.requestId);
/** One redis-cli call to the soak's Redis; its stdout lines. */
const cli = async (...args) => {
  const out = spawn('redis-cli', ['-p', String(redisPort), ...args]);
  let s = '';
  out.stdout.on('data', (d) => (s += d));
  await new Promise((r) => out.on('exit', r));
  return s.split('\n').filter(Boolean);
};
const redisKeys = (pattern) => cli('--scan', '--pattern', pattern);
const redisNumber = async (...args) => Number((await cli(...args))[0] ?? 0);
let redisSpend = 0;
for (const k of await redisKeys(`{${PREFIX}}:spend:day:*:key:soak`)) redisSpend += await redisNumber('get', k);
let slotsHeld = 0;
for (const k of await redisKeys(`{${PREFIX}}:inflight:*`)) slotsHeld += await redisNumber('zcount', k, String(Date.now()), '+inf');
const upstreamCounts = [];
for (const u of ups) {
  await stop(u.child);
  upstreamCounts.push(
    readFileSync(join(dir, `${u.name}.log`), 'utf8')
      .trim()
      .split('\n')
      .at(-1),
  );
}
for (const g of gateways) await stop(g.child);
await stop(redis);
await dispatcher.close();

const causes = {};
for (const r of results.filter((x) => x.outcome !== 'ok')) causes[`${r.outcome}: ${r.cause}`] = (causes[`${r.outcome}: ${r.cause}`] ?? 0) + 1;
const report = {
  command: `npm run soak -- --minutes ${MINUTES}${values.rate ? ` --rate ${values.rate}` : ''}`,
  node: process.version,
  minutes: MINUTES,
  capacity,
  rate,
  sent: n,
  answered: results.length,
  ok: results.filter((r) => r.outcome === 'ok').length,
  upstreamCaused: results.filter((r) => r.outcome === 'upstream').length,
  gatewayCaused: results.filter((r) => r.outcome === 'gateway').length,
  causes,
  // Every log line of each gateway-caused failure (warnings and errors included), to say why.
  gatewayFailures: results
    .filter((r) => r.outcome === 'gateway')
    .slice(0, 20)
    .map((r) => ({
      requestId: r.requestId,
      cause: r.cause,
      lines: logLines.filter((l) => r.requestId && (l.request_id === r.requestId || l.reqId === r.requestId)),
    })),
  logs: {
    finished: finished.length,
    distinctIds: ids.size,
    duplicated: [...ids.values()].filter((c) => c > 1).length,
    clientIdsMissing: clientIds.filter((id) => !ids.has(id)).length,
  },
  metrics: {
    requests: metricsText.reduce((s, t) => s + sum(t, 'switchyard_requests_total'), 0),
    inFlight: metricsText.reduce((s, t) => s + sum(t, 'switchyard_requests_in_flight'), 0),
  },
  spend: {
    logs: finished.reduce((s, l) => s + (l.cost_usd ?? 0), 0),
    metrics: metricsText.reduce((s, t) => s + sum(t, 'switchyard_spend_usd_total'), 0),
    redis: redisSpend,
  },
  slotsHeld,
  upstreams: upstreamCounts,
  events,
  samples,
};
mkdirSync(join(values.out, 'bench'), { recursive: true });
writeFileSync(join(values.out, 'bench', 'soak.json'), `${JSON.stringify(report, null, 1)}\n`);
const verdict = writeReport(report, values.out);
rmSync(dir, { recursive: true, force: true });
process.stderr.write(`${verdict.pass ? 'PASS' : 'FAIL'}: ${verdict.lines.join('; ')}\n`);
process.exitCode = verdict.pass ? 0 : 1;
