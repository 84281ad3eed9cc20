#!/usr/bin/env node
// npm run bench:overhead — Switchyard's added latency and throughput against going direct,
// measured with the neutral harness in ../shared/bench, or its unmodified copy in
// scripts/bench-harness/ when that is absent (copied to .bench/, never modified).
//
// Pinned as the harness README advises on a small box: the mock upstream and the load
// driver share CPU 0, the gateway gets CPU 1 alone, so both arms see the same loader and
// mock and only the gateway's work differs.
//
//   node scripts/bench-overhead.mjs [--quick] [--aa] [--compare <git rev>] [--out docs/bench/overhead.json]
//
// --quick    short rounds (smoke run, numbers not for publishing)
// --aa       also run the A/A noise floor (direct vs direct)
// --compare  also measure an earlier build (built from that commit into .bench/rev-<rev>),
//            as a third target in the same run: the cost of what changed since, measured
//            under identical conditions. Both gateways take turns on CPU 1.
// --redis    also measure the current build with its state in Redis (a redis-server the
//            script starts on CPU 0 with the driver), as another target.
// --tracing  also measure the current build with OpenTelemetry tracing on (OTEL_EXPORTER_OTLP_ENDPOINT
//            pointed at a local OTLP/HTTP sink the script starts on CPU 0, which answers 200 and
//            counts what it gets), as another target: the cost of tracing on, next to it off.
// --rounds N, --mode stream|nonstream|both, --delays 0,5
//            more rounds of fewer scenarios, for a closer look at one difference.
import { spawn, execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { cpSync, existsSync, mkdirSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const { values: o } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    aa: { type: 'boolean', default: false },
    out: { type: 'string', default: join(root, '.bench', 'overhead.json') },
    harness: { type: 'string' },
    compare: { type: 'string' },
    redis: { type: 'boolean', default: false },
    tracing: { type: 'boolean', default: false },
    concurrency: { type: 'string', default: '1,16,64' },
    rounds: { type: 'string', default: '3' },
    mode: { type: 'string', default: 'both' },
    delays: { type: 'string', default: '0,5' },
  },
});

// The shared harness next to the repository when it is there, else the copy in the repo.
const harnessSource = o.harness ?? [join(root, '..', 'shared', 'bench'), join(root, 'scripts', 'bench-harness')].find((d) => existsSync(join(d, 'run.mjs')));
if (!harnessSource || !existsSync(join(harnessSource, 'run.mjs'))) {
  console.error(`bench:overhead: no load harness at ${o.harness ?? '../shared/bench or scripts/bench-harness'} (run.mjs missing); pass --harness <dir>.`);
  process.exit(2);
}
const work = join(root, '.bench');
const harness = join(work, 'harness');
mkdirSync(work, { recursive: true });
if (!existsSync(join(harness, 'node_modules', 'undici'))) {
  rmSync(harness, { recursive: true, force: true });
  cpSync(harnessSource, harness, { recursive: true });
  execFileSync('npm', ['install', '--no-audit', '--no-fund', '--ignore-scripts'], { cwd: harness, stdio: 'inherit' });
}

const freePort = () =>
  new Promise((res) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => res(port));
    });
  });

const canPin = (() => {
  try {
    execFileSync('taskset', ['-c', '0', 'true']);
    return true;
  } catch {
    return false;
  }
})();
const pinned = (cpu, cmd, args) => (canPin ? ['taskset', ['-c', String(cpu), cmd, ...args]] : [cmd, args]);

const children = [];
function start(cpu, cmd, args, opts = {}) {
  const [c, a] = pinned(cpu, cmd, args);
  const child = spawn(c, a, { stdio: ['ignore', opts.log ?? 'ignore', opts.log ?? 'inherit'], env: { ...process.env, ...opts.env } });
  children.push(child);
  return child;
}
const stopAll = () => children.forEach((c) => c.kill('SIGTERM'));
process.on('exit', stopAll);
process.on('SIGINT', () => process.exit(130));

async function waitHttp(url, ms = 10_000) {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    try {
      const r = await fetch(url);
      if (r.status < 500) return;
    } catch {
      // not up yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${url} did not come up`);
}

const CHUNKS = 20;
const DELAYS = o.delays.split(',').map(Number);
const mockPort = await freePort();
const gwPort = await freePort();
const benchKey = 'sk-bench-overhead-key';

// One public model per harness scenario: the harness puts the scenario in the model name,
// and the gateway sends that same name upstream.
const models = DELAYS.map((d) => `gpt-mock-chunks${CHUNKS}-delay${d}-ttft0-latency0`)
  .map((name) => `  - name: ${name}\n    price: { input: 1, output: 2 }\n    targets: [{ upstream: mock, model: ${name} }]`)
  .join('\n');
const configPath = join(work, 'switchyard.bench.yaml');
writeFileSync(
  configPath,
  `server:\n  log_level: info\nupstreams:\n  - id: mock\n    provider: openai-compatible\n    base_url: http://127.0.0.1:${mockPort}/v1\n    api_key: bench-upstream-key\n    max_concurrency: 256\nmodels:\n${models}\nkeys:\n  - name: bench\n    key_sha256: ${createHash('sha256').update(benchKey).digest('hex')}\n`,
);

/** Builds the gateway as of `rev` into .bench/rev-<rev> (once) and returns its main.js. */
function buildRev(rev) {
  const sha = execFileSync('git', ['rev-parse', '--short', rev], { cwd: root, encoding: 'utf8' }).trim();
  const dir = join(work, `rev-${sha}`);
  if (!existsSync(join(dir, 'dist', 'main.js'))) {
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir, { recursive: true });
    execFileSync('sh', ['-c', `git -C "${root}" archive ${sha} | tar -x -C "${dir}"`], { stdio: 'inherit' });
    execFileSync('npm', ['ci', '--no-audit', '--no-fund', '--ignore-scripts'], { cwd: dir, stdio: 'inherit' });
    execFileSync('npm', ['run', 'build'], { cwd: dir, stdio: 'inherit' });
  }
  return { sha, main: join(dir, 'dist', 'main.js') };
}

start(0, process.execPath, [join(harness, 'mock-upstream.mjs'), '--port', String(mockPort)]);
const gwLog = openSync(join(work, 'gateway.log'), 'w');
start(1, process.execPath, [join(root, 'dist', 'main.js'), '--config', configPath], { env: { PORT: String(gwPort), HOST: '127.0.0.1' }, log: gwLog });
await waitHttp(`http://127.0.0.1:${mockPort}/health`);
await waitHttp(`http://127.0.0.1:${gwPort}/healthz`);
const extraTargets = [];
if (o.compare) {
  const { sha, main } = buildRev(o.compare);
  const port = await freePort();
  start(1, process.execPath, [main, '--config', configPath], { env: { PORT: String(port), HOST: '127.0.0.1' }, log: openSync(join(work, `gateway-${sha}.log`), 'w') });
  await waitHttp(`http://127.0.0.1:${port}/healthz`);
  extraTargets.push('--target', `switchyard@${sha}=http://127.0.0.1:${port}`, '--header', `switchyard@${sha}=authorization:Bearer ${benchKey}`);
}
if (o.redis) {
  const redisPort = await freePort();
  start(0, 'redis-server', ['--port', String(redisPort), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no']);
  const redisConfig = join(work, 'switchyard.bench-redis.yaml');
  writeFileSync(redisConfig, readFileSync(configPath, 'utf8').replace(/^server:/m, `store:\n  redis_url: redis://127.0.0.1:${redisPort}\nserver:`));
  const port = await freePort();
  start(1, process.execPath, [join(root, 'dist', 'main.js'), '--config', redisConfig], { env: { PORT: String(port), HOST: '127.0.0.1' }, log: openSync(join(work, 'gateway-redis.log'), 'w') });
  await waitHttp(`http://127.0.0.1:${port}/healthz`);
  for (let i = 0; i < 50; i++) {
    const ready = await (await fetch(`http://127.0.0.1:${port}/readyz`)).text();
    if (ready.includes('"mode":"redis"')) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  extraTargets.push('--target', `switchyard+redis=http://127.0.0.1:${port}`, '--header', `switchyard+redis=authorization:Bearer ${benchKey}`);
}

// A minimal OTLP/HTTP receiver: reads each export, answers 200, counts exports, bytes and
// spans (GET /stats). Spans are counted by their names' bytes in the protobuf body: every
// span here is named `chat gpt-mock-…` (a call's and its attempt's alike).
const SINK = `
const http = require('node:http');
const NAME = Buffer.from('chat gpt-mock-');
let exports = 0, bytes = 0, spans = 0;
http.createServer((req, res) => {
  if (req.method === 'GET') { res.end(JSON.stringify({ exports, bytes, spans })); return; }
  const parts = [];
  req.on('error', () => {});
  req.on('data', (c) => parts.push(c));
  req.on('end', () => {
    const body = Buffer.concat(parts);
    exports++;
    bytes += body.length;
    for (let i = body.indexOf(NAME); i >= 0; i = body.indexOf(NAME, i + NAME.length)) spans++;
    res.writeHead(200, { 'content-type': req.headers['content-type'] || 'application/x-protobuf' });
    res.end();
  });
}).listen(Number(process.argv[1]), '127.0.0.1');
`;
let sinkUrl = null;
if (o.tracing) {
  const sinkPort = await freePort();
  start(0, process.execPath, ['-e', SINK, String(sinkPort)]);
  sinkUrl = `http://127.0.0.1:${sinkPort}`;
  await waitHttp(`${sinkUrl}/stats`);
  const port = await freePort();
  // The SDK's defaults otherwise (http/protobuf, batch span processor, parentbased_always_on: every request traced).
  start(1, process.execPath, [join(root, 'dist', 'main.js'), '--config', configPath], {
    env: { PORT: String(port), HOST: '127.0.0.1', OTEL_EXPORTER_OTLP_ENDPOINT: sinkUrl },
    log: openSync(join(work, 'gateway-tracing.log'), 'w'),
  });
  await waitHttp(`http://127.0.0.1:${port}/healthz`);
  extraTargets.push('--target', `switchyard+tracing=http://127.0.0.1:${port}`, '--header', `switchyard+tracing=authorization:Bearer ${benchKey}`);
}

const timing = o.quick ? ['--duration', '2', '--rounds', '2', '--warmup', '1'] : ['--duration', '5', '--rounds', o.rounds, '--warmup', '1'];
const common = ['--concurrency', o.concurrency, '--mode', o.mode, '--chunks', String(CHUNKS), '--delay', DELAYS.join(','), '--include-usage', ...timing];

function run(args, out) {
  const [c, a] = pinned(0, process.execPath, [join(harness, 'run.mjs'), ...args, ...common, '--out', out]);
  execFileSync(c, a, { stdio: ['ignore', 'ignore', 'inherit'] });
  return out;
}

const reports = [];
if (o.aa) {
  reports.push(run(['--target', `direct=http://127.0.0.1:${mockPort}`, '--target', `direct-again=http://127.0.0.1:${mockPort}`], join(work, 'aa.json')));
}
mkdirSync(dirname(resolve(o.out)), { recursive: true });
reports.push(
  run(
    [
      '--target',
      `direct=http://127.0.0.1:${mockPort}`,
      ...extraTargets,
      '--target',
      `switchyard=http://127.0.0.1:${gwPort}`,
      '--header',
      `switchyard=authorization:Bearer ${benchKey}`,
    ],
    resolve(o.out),
  ),
);
/** The sink's counters (a fresh connection: a pooled one may have been closed while idle). */
async function sinkCounters() {
  for (let i = 0; ; i++) {
    try {
      return await (await fetch(`${sinkUrl}/stats`, { headers: { connection: 'close' } })).json();
    } catch (err) {
      if (i >= 2) throw err;
    }
  }
}
const sinkStats = sinkUrl ? await sinkCounters() : null;
stopAll();
if (sinkStats) process.stdout.write(`tracing sink: ${sinkStats.exports} OTLP exports, ${sinkStats.spans} spans, ${(sinkStats.bytes / 1e6).toFixed(1)} MB\n`);
const table = execFileSync(process.execPath, [join(harness, 'report.mjs'), ...reports], { encoding: 'utf8' });
process.stdout.write(`${canPin ? 'pinned: mock + driver on CPU 0, gateway on CPU 1' : 'not pinned (taskset unavailable)'}\n\n${table}`);
