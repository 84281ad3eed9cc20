#!/usr/bin/env node
// npm run bench:alloc — bytes allocated per request, and where, for the current build and
// (with --compare) an earlier one, in one run. Each gateway runs alone on CPU 1 with its own
// `npm start` flags, in memory mode, behind the neutral harness (../shared/bench or its copy
// in scripts/bench-harness/) whose mock and driver run on CPU 0. After a warm-up, V8's
// sampling heap profiler (scripts/bench/alloc-preload.mjs: collected objects included) runs
// while the driver sends --duration s of closed-loop load; the sampled bytes over the
// requests the gateway counted meanwhile (switchyard_requests_total) are the allocation per
// request (an estimate: one sample per 512 bytes on average), and the profile's call frames
// say which functions allocated them.
//
//   node scripts/bench-alloc.mjs [--compare <git rev>] [--mode nonstream|stream|both]
//        [--concurrency 16] [--duration 5] [--top 25] [--out .bench/alloc.json]
//
// Gives, per build and mode: KB per request, and the top allocating functions (self bytes per
// request, by function and file:line; dependencies as nm/<package>/...).
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { targetFlags } from './bench/overhead-arms.mjs';
import {
  BENCH_KEY,
  CHUNKS,
  build,
  findHarness,
  freePort,
  prepareHarness,
  runHarness,
  sleep,
  start,
  stopAll,
  waitHttp,
  writeConfig,
} from './bench/overhead-setup.mjs';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const { values: o } = parseArgs({
  options: {
    compare: { type: 'string' },
    mode: { type: 'string', default: 'both' },
    concurrency: { type: 'string', default: '16' },
    duration: { type: 'string', default: '5' },
    top: { type: 'string', default: '25' },
    out: { type: 'string', default: join(root, '.bench', 'alloc.json') },
    harness: { type: 'string' },
  },
});
const log = (s) => process.stderr.write(`bench:alloc: ${s}\n`);
const fail = (msg) => {
  console.error(`bench:alloc: ${msg}`);
  process.exit(2);
};
if (!['nonstream', 'stream', 'both'].includes(o.mode)) fail(`--mode must be nonstream, stream or both (got ${o.mode})`);
for (const k of ['concurrency', 'duration', 'top'])
  if (!(Number.isInteger(Number(o[k])) && Number(o[k]) > 0)) fail(`--${k} must be a whole number above 0 (got ${o[k]})`);
const harnessSource = findHarness(root, o.harness, 'bench:alloc');
const work = join(root, '.bench');
mkdirSync(work, { recursive: true });
const harness = prepareHarness(harnessSource, work);
const modes = o.mode === 'both' ? ['nonstream', 'stream'] : [o.mode];
let builds;
try {
  builds = [build(root, work), ...(o.compare ? [build(root, work, o.compare)] : [])];
} catch (err) {
  fail(`cannot build ${o.compare ? `--compare ${o.compare}` : 'the checkout'}: ${err.message.split('\n')[0]}`);
}

const mockPort = await freePort();
start(0, process.execPath, [join(harness, 'mock-upstream.mjs'), '--port', String(mockPort), '--quiet'], { log: join(work, 'mock.log') });
await waitHttp(`http://127.0.0.1:${mockPort}/health`);

/** A frame's name: function, then file:line with the checkout and node_modules prefixes cut. */
function frameName(f) {
  // A compared build lives in .bench/rev-<sha>/: its frames are named as the checkout's are.
  const url = f.url
    .replace(/^.*node_modules\//, 'nm/')
    .replace(/^file:\/\/.*?\/dist\//, 'dist/')
    .replace(`file://${root}/`, '');
  return `${f.functionName || '(anonymous)'} ${url || '(native)'}${url ? `:${f.lineNumber + 1}` : ''}`;
}

/** Sums a sampling heap profile: { total bytes, self bytes per frame name }. */
function summarise(profile) {
  const self = new Map();
  let total = 0;
  const walk = (node) => {
    const k = frameName(node.callFrame);
    self.set(k, (self.get(k) ?? 0) + node.selfSize);
    total += node.selfSize;
    for (const c of node.children) walk(c);
  };
  walk(profile.head);
  return { total, self };
}

/** The gateway's switchyard_requests_total, summed over its labels (GET /metrics). */
async function requestsServed(url) {
  const text = await (await fetch(`${url}/metrics`)).text();
  let n = 0;
  for (const line of text.split('\n'))
    if (line.startsWith('switchyard_requests_total{') || line.startsWith('switchyard_requests_total ')) n += Number(line.slice(line.lastIndexOf(' ') + 1));
  return n;
}

/** Runs one build in one mode: { requests, rps, kb_per_request, top: [{ site, bytes_per_request }] }. */
async function measure(b, mode) {
  const name = `${b.label}-${mode}`;
  const config = writeConfig(join(work, `config-alloc.yaml`), mockPort, [0]);
  const profilePath = join(work, `alloc-${name.replace(/[^\w.+-]/g, '_')}.heapprofile`);
  rmSync(profilePath, { force: true });
  const port = await freePort();
  const child = start(1, process.execPath, [...b.flags, '--import', join(root, 'scripts', 'bench', 'alloc-preload.mjs'), b.main, '--config', config], {
    env: { PORT: String(port), HOST: '127.0.0.1', ALLOC_OUT: profilePath },
    log: join(work, `gateway-alloc-${name.replace(/[^\w.+-]/g, '_')}.log`),
  });
  const arm = { name: 'gw', url: `http://127.0.0.1:${port}`, headers: { authorization: `Bearer ${BENCH_KEY}` } };
  await waitHttp(`${arm.url}/healthz`, 20_000);
  const args = (s) => [
    ...targetFlags([arm]),
    '--mode',
    mode,
    '--concurrency',
    o.concurrency,
    '--chunks',
    String(CHUNKS),
    '--delay',
    '0',
    '--include-usage',
    '--duration',
    String(s),
    '--rounds',
    '1',
    '--warmup',
    '1',
    '--quiet',
  ];
  runHarness(harness, args(3), join(work, 'alloc-warm.json'));
  await sleep(300);
  const before = await requestsServed(arm.url);
  process.kill(child.pid, 'SIGWINCH');
  await sleep(300);
  const r = runHarness(harness, args(Number(o.duration)), join(work, 'alloc-load.json')).scenarios[0].results.gw;
  await sleep(300);
  process.kill(child.pid, 'SIGWINCH');
  const requests = (await requestsServed(arm.url)) - before;
  for (let i = 0; i < 100 && !existsSync(profilePath); i++) await sleep(100);
  await child.stop();
  if (requests <= 0) throw new Error(`${name}: switchyard_requests_total did not move while sampling`);
  if (!existsSync(profilePath)) throw new Error(`${name}: no heap profile written`);
  const { total, self } = summarise(JSON.parse(readFileSync(profilePath, 'utf8')));
  const top = [...self]
    .sort((x, y) => y[1] - x[1])
    .slice(0, Number(o.top))
    .map(([site, bytes]) => ({ site, bytes_per_request: Math.round(bytes / requests) }));
  return { requests, rps: Math.round(r.rps), errors: r.errors, kb_per_request: Math.round((total / requests / 1024) * 10) / 10, top };
}

const report = { tool: 'switchyard scripts/bench-alloc.mjs', started_at: new Date().toISOString(), options: o, builds: {} };
for (const mode of modes) {
  for (const b of builds) {
    log(`${b.label} (${b.sha}), ${mode}, ${o.concurrency} clients, ${o.duration} s`);
    const m = await measure(b, mode);
    (report.builds[b.label] ??= { sha: b.sha, node_flags: b.flags, modes: {} }).modes[mode] = m;
    console.log(`\n${b.label} ${mode}: ${m.kb_per_request} KB per request (${m.requests} requests sampled, ${m.rps} req/s, ${m.errors} errors)`);
    for (const t of m.top) console.log(`  ${String(t.bytes_per_request).padStart(7)} B  ${t.site}`);
  }
}
writeFileSync(o.out, `${JSON.stringify(report, null, 2)}\n`);
log(`report: ${o.out}`);
await stopAll();
process.exit(0);
