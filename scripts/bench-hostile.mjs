#!/usr/bin/env node
// npm run bench:hostile — what hostile traffic costs the gateway, and whether /healthz stays
// fast under it. Starts the built gateway (dist/, its defaults, one key) in front of a local
// fake upstream in this process, then:
//  1. /healthz timed for 2 s with nothing else going on (the reference);
//  2. each kind of request below, --n times at --concurrency, with the gateway's own CPU
//     (switchyard_process_cpu_seconds_total from /metrics) read before and after: CPU per
//     request, beside two references measured in the same run (GET /healthz, and a small chat
//     completion served by the upstream);
//  3. all the rejected kinds at once for --hostile-s seconds, plus --slowloris connections
//     trickling their headers a byte a second, while a worker thread (its own event loop)
//     times /healthz every 10 ms.
//   node scripts/bench-hostile.mjs [--n 1000] [--concurrency 16] [--hostile-s 10] [--slowloris 500] [--gateway dist/main.js]
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { setInterval, clearInterval } from 'node:timers';
import { gzipSync } from 'node:zlib';
import { healthzLine, timeHealthz } from './bench/healthz-poller.mjs';
import { freePort, start, stop, waitHttp } from './bench/procs.mjs';

const { values } = parseArgs({
  options: {
    n: { type: 'string', default: '1000' },
    concurrency: { type: 'string', default: '16' },
    'hostile-s': { type: 'string', default: '10' },
    slowloris: { type: 'string', default: '500' },
    gateway: { type: 'string', default: 'dist/main.js' },
  },
});
const N = Number(values.n);
const C = Number(values.concurrency);
const KEY = 'sk-bench-hostile-0123456789';

const upstream = createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(
      JSON.stringify({
        id: 'c',
        object: 'chat.completion',
        created: 1,
        model: 'm',
        choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }],
        usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
      }),
    );
  });
});
await new Promise((r) => upstream.listen(0, '127.0.0.1', r));

const dir = mkdtempSync(join(tmpdir(), 'switchyard-hostile-'));
const config = join(dir, 'c.yaml');
writeFileSync(
  config,
  `upstreams:
  - { id: u, provider: openai-compatible, base_url: "http://127.0.0.1:${upstream.address().port}/v1", api_key: "\${BENCH_KEY}" }
models:
  - { name: m, price: { input: 1, output: 1 }, targets: [{ upstream: u, model: x }] }
keys:
  - { name: bench, key_sha256: "${createHash('sha256').update(KEY).digest('hex')}" }
`,
);
const port = await freePort();
const child = start(dir, 'gateway', process.execPath, [values.gateway, '--config', config], { PORT: String(port), BENCH_KEY: 'x' });
const url = `http://127.0.0.1:${port}`;

const json = { 'content-type': 'application/json' };
const auth = { ...json, authorization: `Bearer ${KEY}` };
const chat = (model) => JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }] });
let nested = '"x"';
for (let i = 0; i < 5000; i++) nested = `[${nested}]`;
const bomb = gzipSync(Buffer.alloc(40 * 1024 * 1024, 0x20));

/** Each kind: a request as [path, init]. The first two are the references (not rejected). */
const KINDS = [
  ['GET /healthz (reference)', () => ['/healthz', {}]],
  ['served chat completion (reference)', () => ['/v1/chat/completions', { method: 'POST', headers: auth, body: chat('m') }]],
  ['no key', () => ['/v1/chat/completions', { method: 'POST', headers: json, body: chat('m') }]],
  ['wrong key', () => ['/v1/chat/completions', { method: 'POST', headers: { ...json, authorization: 'Bearer sk-wrong-0123456789' }, body: chat('m') }]],
  ['unknown model', () => ['/v1/chat/completions', { method: 'POST', headers: auth, body: chat('no-such-model') }]],
  ['invalid JSON', () => ['/v1/chat/completions', { method: 'POST', headers: auth, body: '{"model": "m", "messages": [' }]],
  [
    'content nested 5,000 deep (10 KB)',
    () => ['/v1/chat/completions', { method: 'POST', headers: auth, body: `{"model":"m","messages":[{"role":"user","content":${nested}}]}` }],
  ],
  ['384 KB model id (a ReDoS try)', () => ['/v1/chat/completions', { method: 'POST', headers: auth, body: chat(`gpt-5${'-'.repeat(384 * 1024)}codex`) }]],
  ['gzip bomb (40 KB -> 40 MB)', () => ['/v1/chat/completions', { method: 'POST', headers: { ...auth, 'content-encoding': 'gzip' }, body: bomb }]],
];

async function cpuSeconds() {
  const text = await (await fetch(`${url}/metrics`)).text();
  return Number(/^switchyard_process_cpu_seconds_total (\S+)/m.exec(text)[1]);
}

/** Sends `n` requests of `make` at `c` at a time; returns a status histogram. */
async function run(make, n, c) {
  const statuses = {};
  let next = 0;
  await Promise.all(
    Array.from({ length: c }, async () => {
      while (next < n) {
        next++;
        const [path, init] = make();
        const s = await fetch(url + path, init).then(
          async (r) => (await r.arrayBuffer(), r.status),
          () => 'error',
        );
        statuses[s] = (statuses[s] ?? 0) + 1;
      }
    }),
  );
  return statuses;
}

/** Opens `n` connections that send a request line and then a header byte a second. */
function slowloris(n) {
  const sockets = [];
  for (let i = 0; i < n; i++) {
    const s = connect(port, '127.0.0.1', () => s.write('POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n'));
    s.on('error', () => {});
    sockets.push(s);
  }
  const timer = setInterval(() => sockets.forEach((s) => s.writable && s.write('X')), 1_000);
  return () => {
    clearInterval(timer);
    sockets.forEach((s) => s.destroy());
  };
}

const line = healthzLine;
try {
  await waitHttp(`${url}/healthz`);
  // Warm up the paths once.
  for (const [, make] of KINDS) await run(make, 20, 4);
  const quiet = await timeHealthz(url, () => new Promise((r) => setTimeout(r, 2_000)));
  console.log(`${values.gateway} (node ${process.version}), ${N} requests per kind at ${C} at a time (gzip bomb: ${Math.ceil(N / 10)})`);
  console.log('| request | statuses | gateway CPU per request |');
  console.log('|---|---|---|');
  for (const [name, make] of KINDS) {
    const n = name.startsWith('gzip bomb') ? Math.ceil(N / 10) : N;
    const c0 = await cpuSeconds();
    const statuses = await run(make, n, C);
    const c1 = await cpuSeconds();
    const shown = Object.entries(statuses)
      .map(([s, k]) => `${s}×${k}`)
      .join(' ');
    console.log(`| ${name} | ${shown} | ${(((c1 - c0) / n) * 1e6).toFixed(0)} µs |`);
  }
  const end = Date.now() + Number(values['hostile-s']) * 1_000;
  const close = slowloris(Number(values.slowloris));
  const hostile = await timeHealthz(url, async () => {
    await Promise.all(
      KINDS.slice(2).map(async ([name, make]) => {
        while (Date.now() < end) await run(make, name.startsWith('gzip bomb') ? 1 : 10, name.startsWith('gzip bomb') ? 1 : 2);
      }),
    );
  });
  close();
  console.log(`/healthz every 10 ms, quiet (reference): ${line(quiet)}`);
  console.log(
    `/healthz every 10 ms, during ${values['hostile-s']} s of every rejected kind at once + ${values.slowloris} slowloris connections: ${line(hostile)}`,
  );
  const alive = await fetch(`${url}/healthz`).then(
    (r) => r.status,
    () => 'down',
  );
  console.log(`gateway after: /healthz ${alive}`);
} finally {
  await stop(child);
  upstream.close();
  rmSync(dir, { recursive: true, force: true });
}
