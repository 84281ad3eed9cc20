#!/usr/bin/env node
// npm run bench:overhead — Switchyard against going direct, measured with the neutral harness
// in ../shared/bench, or its unmodified copy in scripts/bench-harness/ when that is absent
// (copied to .bench/harness, never modified). One run gives every number issue 16 asks for.
//
// Pinning: the mock upstream, the load driver and the redis-servers share CPU 0; each gateway
// and nginx run on CPU 1 (the workers arm excepted, see below). Every Switchyard build runs
// with the node flags of its own `npm start` (package.json scripts.start), recorded per arm.
//
//   node scripts/bench-overhead.mjs [--quick] [--compare <git rev>] [--out .bench/overhead.json] [options]
//   node scripts/bench/overhead-report.mjs .bench/overhead.json     (the markdown summary again)
//
// Phases, in order (a full default run takes ~20 min, ~27 min with --compare,
// plus its build the first time):
//  1. closed loop (harness, ~10 min, ~15 with --compare): nonstream and stream at 1/16/64 clients, stream delays 0 and
//     5 ms; targets direct (baseline), nginx, node-floor, [switchyard@<rev>, switchyard@<rev>+redis],
//     switchyard+redis, [switchyard+tracing], switchyard.
//  2. Redis commands per request (~1 min): per Redis arm, MONITOR on its own redis-server while
//     200 sequential JSON and 200 streaming requests go through; top-level commands only.
//  3. idle, then open loop (~6-8 min): all targets idle --idle-s, then each in turn at 60 % of the
//     current build's memory-mode req/s (nonstream, 16 clients), --open-rounds of --open-round-s.
//  4. streams memory (~1 min per arm): per Switchyard arm (memory, Redis, compare memory; with
//     --only streams compare Redis too), RSS idle, while
//     --streams streams are open at once (two batches), and for --after-s s after.
//  5. workers (~2 min): one worker vs --workers N, both on Redis, nonstream 16 and 64 clients,
//     gateway processes on CPUs 0-1; only when the build accepts server.workers. Then the CPU
//     per request of each at one offered load, and of node-floor with one process and with N
//     (node:cluster) at the same load: the stack's own cost of a second process, beside ours.
//
// --quick           a smoke run of every phase: short rounds, 5 s idle, 200 streams, 5 s after
// --aa              also the A/A noise floor (direct vs direct)
// --compare <rev>   also an earlier build (built into .bench/rev-<sha>), memory and Redis arms
// --no-redis        no Redis arms (and so no commands count and no workers arm); --redis is the default
// --tracing         also the current build with OpenTelemetry on (a local OTLP sink on CPU 0 counts spans)
// --no-nginx        no nginx reference (skipped with a note anyway when nginx is not installed)
// --no-node-floor   no node-floor reference (Fastify + undici relaying with no gateway work:
//                   what the fixed stack costs by itself; scripts/bench/node-floor-server.mjs)
// --no-open-loop, --idle-s 90, --open-rounds 6, --open-round-s 10, --open-rate <req/s> (default: 60 % of capacity)
// --streams 1000 (0 = skip), --after-s 60
// --workers 2 (0 = skip)
// --rounds N, --concurrency 1,16,64, --mode stream|nonstream|both, --delays 0,5   (closed loop)
// --only streams    phase 4 alone (streams memory; no nginx or node-floor started): a few
//                   minutes instead of ~20, for work on memory. Each arm starts fresh, so its
//                   idle RSS is lower than after the closed and open loops of a full run.
// --out FILE        the combined JSON report (default .bench/overhead.json; nothing tracked is
//                   written unless FILE is under docs/)
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { describeArm, startSwitchyard, targetFlags } from './bench/overhead-arms.mjs';
import { commandsPerRequest } from './bench/overhead-redis.mjs';
import { capacityFromClosedLoop, measureCapacity, openLoop } from './bench/overhead-open-loop.mjs';
import { render } from './bench/overhead-report.mjs';
import { streamsMemory } from './bench/overhead-streams.mjs';
import { workersArm } from './bench/overhead-workers.mjs';
import { findNginx, startNginx } from './bench/nginx.mjs';
import { startNodeFloor } from './bench/node-floor.mjs';
import { CHUNKS, build, canPin, findHarness, freePort, prepareHarness, runHarness, start, stopAll, waitHttp } from './bench/overhead-setup.mjs';
import { startSink, sinkCounters } from './bench/otlp-sink.mjs';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const { values: o } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    aa: { type: 'boolean', default: false },
    out: { type: 'string', default: join(root, '.bench', 'overhead.json') },
    harness: { type: 'string' },
    compare: { type: 'string' },
    redis: { type: 'boolean', default: true },
    'no-redis': { type: 'boolean', default: false },
    tracing: { type: 'boolean', default: false },
    'no-nginx': { type: 'boolean', default: false },
    'no-node-floor': { type: 'boolean', default: false },
    'no-open-loop': { type: 'boolean', default: false },
    'open-loop': { type: 'boolean', default: true },
    'idle-s': { type: 'string' },
    'open-rounds': { type: 'string' },
    'open-round-s': { type: 'string' },
    'open-rate': { type: 'string' },
    streams: { type: 'string' },
    'after-s': { type: 'string' },
    workers: { type: 'string', default: '2' },
    concurrency: { type: 'string', default: '1,16,64' },
    rounds: { type: 'string', default: '3' },
    mode: { type: 'string', default: 'both' },
    delays: { type: 'string', default: '0,5' },
    only: { type: 'string' },
  },
});
if (o.only !== undefined && o.only !== 'streams') {
  console.error(`bench:overhead: --only ${o.only}: only "streams" is supported`);
  process.exit(2);
}
const onlyStreams = o.only === 'streams';
const num = (v, full, quick) => Number(v ?? (o.quick ? quick : full));
const opt = {
  redis: !o['no-redis'],
  nginx: !o['no-nginx'] && !onlyStreams,
  nodeFloor: !o['no-node-floor'] && !onlyStreams,
  openLoop: !o['no-open-loop'] && !onlyStreams,
  idleS: num(o['idle-s'], 90, 5),
  openRounds: num(o['open-rounds'], 6, 2),
  openRoundS: num(o['open-round-s'], 10, 3),
  streams: num(o.streams, 1000, 200),
  afterS: num(o['after-s'], 60, 5),
  workers: onlyStreams ? 0 : Number(o.workers),
  commands: o.quick ? 20 : 200,
};
const log = (s) => process.stderr.write(`bench:overhead: ${s}\n`);

const harnessSource = findHarness(root, o.harness, 'bench:overhead');
const work = join(root, '.bench');
mkdirSync(work, { recursive: true });
const harness = prepareHarness(harnessSource, work);
const DELAYS = o.delays.split(',').map(Number);
const timing = o.quick ? ['--duration', '2', '--rounds', '2', '--warmup', '1'] : ['--duration', '5', '--rounds', o.rounds, '--warmup', '1'];
const report = {
  tool: 'switchyard scripts/bench-overhead.mjs',
  started_at: new Date().toISOString(),
  quick: o.quick,
  options: opt,
  harness: harnessSource,
  notes: [],
};

// Builds and targets.
const current = build(root, work);
const compare = o.compare ? build(root, work, o.compare) : null;
report.git = { current: current.git, compare: compare?.git ?? null };
report.pinning = canPin
  ? 'mock + driver + redis-servers on CPU 0; each gateway, nginx and node-floor on CPU 1 (workers arm: see workers.pinning)'
  : 'not pinned (taskset unavailable)';
const mockPort = await freePort();
start(0, process.execPath, [join(harness, 'mock-upstream.mjs'), '--port', String(mockPort), '--quiet'], { log: join(work, 'mock.log') });
const mockUrl = `http://127.0.0.1:${mockPort}`;
await waitHttp(`${mockUrl}/health`);
const direct = { name: 'direct', kind: 'direct', url: mockUrl, node_flags: null, cpus: '0' };
const common = { work, mockPort, delays: DELAYS };
const sw = await startSwitchyard({ ...common, b: current, name: 'switchyard' });
const swRedis = opt.redis ? await startSwitchyard({ ...common, b: current, name: 'switchyard+redis', redis: true }) : null;
const cmp = compare ? await startSwitchyard({ ...common, b: compare, name: compare.label }) : null;
const cmpRedis = compare && opt.redis ? await startSwitchyard({ ...common, b: compare, name: `${compare.label}+redis`, redis: true }) : null;
let sink = null;
let swTracing = null;
if (o.tracing) {
  sink = await startSink();
  // The SDK's defaults otherwise (http/protobuf, batch span processor, parentbased_always_on: every request traced).
  swTracing = await startSwitchyard({ ...common, b: current, name: 'switchyard+tracing', env: { OTEL_EXPORTER_OTLP_ENDPOINT: sink.url } });
}
const nginxBin = opt.nginx ? findNginx() : null;
if (opt.nginx && !nginxBin) {
  report.notes.push('nginx not installed (command -v nginx): no nginx reference target');
  log(report.notes.at(-1));
}
const nginx = nginxBin ? await startNginx(nginxBin, work, mockPort) : null;
const floor = opt.nodeFloor ? await startNodeFloor(work, mockPort, current.flags) : null;
const present = (...xs) => xs.filter(Boolean);
const allArms = present(direct, nginx, floor, cmp, cmpRedis, swRedis, swTracing, sw);
report.arms = Object.fromEntries(allArms.map((a) => [a.name, describeArm(a)]));

// 1. Closed loop.
const closedArgs = ['--concurrency', o.concurrency, '--mode', o.mode, '--chunks', String(CHUNKS), '--delay', DELAYS.join(','), '--include-usage', ...timing];
const tables = [];
if (o.aa) {
  const aaOut = join(work, 'aa.json');
  report.aa = runHarness(harness, [...targetFlags([direct, { ...direct, name: 'direct-again' }]), ...closedArgs], aaOut);
  tables.push(aaOut);
}
if (!onlyStreams) {
  log(`closed loop: ${allArms.map((a) => a.name).join(', ')}`);
  const closedOut = join(work, 'closed-loop.json');
  report.closed_loop = runHarness(harness, [...targetFlags(allArms), ...closedArgs], closedOut);
  tables.push(closedOut);
}
if (sink) report.tracing_sink = await sinkCounters(sink.url);

// 2. Redis commands per request.
report.commands_per_request = {};
for (const arm of onlyStreams ? [] : present(swRedis, cmpRedis)) {
  log(`commands per request: ${arm.name}, ${opt.commands} JSON + ${opt.commands} streaming requests`);
  report.commands_per_request[arm.name] = await commandsPerRequest(arm, `gpt-mock-chunks${CHUNKS}-delay0-ttft0-latency0`, opt.commands);
}

// 3. Idle, then open loop.
if (opt.openLoop) {
  let capacity = capacityFromClosedLoop(report.closed_loop);
  const source = capacity != null ? 'closed loop, nonstream c=16' : 'short closed-loop run, nonstream c=16';
  if (capacity == null) capacity = measureCapacity(harness, work, sw);
  const rate = o['open-rate'] ? Number(o['open-rate']) : Math.round(capacity * 0.6);
  const order = present(direct, floor, sw, swRedis, cmp, cmpRedis, nginx);
  report.open_loop = {
    capacity_rps: capacity,
    capacity_source: source,
    rate_fraction: o['open-rate'] ? null : 0.6,
    ...(await openLoop(harness, work, order, { rate, idleS: opt.idleS, roundS: opt.openRoundS, rounds: opt.openRounds, log })),
  };
}

// 4. Streams memory.
if (opt.streams > 0) {
  report.streams_memory = {};
  // --only streams also measures the earlier build's Redis arm (cheap then: no other phase).
  for (const arm of present(sw, swRedis, cmp, onlyStreams && cmpRedis)) {
    log(`streams memory: ${arm.name}, ${opt.streams} streams x 2 batches, then ${opt.afterS} s`);
    report.streams_memory[arm.name] = await streamsMemory(harness, work, arm, { streams: opt.streams, afterS: opt.afterS, mockUrl });
  }
}

// 5. Workers (the other gateways stopped first: this arm uses both cores).
await Promise.all(present(sw, swRedis, cmp, cmpRedis, swTracing, nginx, floor).map((a) => a.child.stop().then(() => a.redis?.child.stop())));
if (opt.workers > 1 && opt.redis) {
  log(`workers: 1 vs ${opt.workers}`);
  report.workers = await workersArm({ harness, work, b: current, n: opt.workers, ...common, timing });
  if (report.workers.skipped) log(report.workers.skipped);
} else report.workers = { skipped: opt.redis ? '--workers below 2' : '--no-redis (workers need Redis)' };

await stopAll();
report.finished_at = new Date().toISOString();
const outPath = resolve(o.out);
mkdirSync(dirname(outPath), { recursive: true });
writeFileSync(outPath, `${JSON.stringify(report, null, 2)}\n`);
if (report.tracing_sink) {
  const s = report.tracing_sink;
  process.stdout.write(`tracing sink: ${s.exports} OTLP exports, ${s.spans} spans, ${(s.bytes / 1e6).toFixed(1)} MB\n`);
}
const table = tables.length ? execFileSync(process.execPath, [join(harness, 'report.mjs'), ...tables], { encoding: 'utf8' }) : '';
process.stdout.write(`${report.pinning}\n\n${table}\n${render(report)}\nreport: ${outPath}\n`);
