#!/usr/bin/env node
// npm run bench:big-prompts — how long /healthz takes while large prompts arrive. Starts the
// built gateway (dist/) in front of a local fake upstream (in this process, answering at once),
// sends --prompts (2) chat prompts of --mb (24) MB at once on a key with a `tpm` limit (so the
// prompt is counted too), --rounds (3) times, while a worker thread (its own event loop, so the
// sending here does not skew it) GETs /healthz every 10 ms. Prints /healthz p50 / p99 / max.
// Before the prompts, /healthz is timed for 1 s with nothing else going on: the reference.
// --cpu-prof DIR: the gateway writes a V8 CPU profile there when it stops (node --cpu-prof).
// --gateway FILE: another build's main.js (the previous build, side by side), default dist/main.js.
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { freePort, start, stop, waitHttp } from './bench/procs.mjs';
import { healthzLine, timeHealthz } from './bench/healthz-poller.mjs';

const { values } = parseArgs({
  options: {
    prompts: { type: 'string', default: '2' },
    mb: { type: 'string', default: '24' },
    rounds: { type: 'string', default: '3' },
    'cpu-prof': { type: 'string' },
    gateway: { type: 'string', default: 'dist/main.js' },
  },
});
const PROMPTS = Number(values.prompts);
const MB = Number(values.mb);
const ROUNDS = Number(values.rounds);
const KEY = 'sk-bench-big-prompts';

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

// Varied words (the tokenizer's slow case), in many messages as an agent's history is.
const words = ['alpha', 'beta', 'gamma', 'delta', 'epsilon', 'zeta', 'eta', 'theta', 'iota', 'kappa', 'lambda', 'mu'];
const messages = [];
for (let n = 0, i = 0; n < MB * 1024 * 1024;) {
  const parts = [];
  for (let k = 0; k < 2000; k++, i++) parts.push(`${words[(i * 7 + (i >> 3)) % words.length]}${i % 97}`);
  const content = parts.join(' ');
  messages.push({ role: messages.length % 2 ? 'assistant' : 'user', content });
  n += content.length + 40;
}
const body = JSON.stringify({ model: 'm', messages });

const dir = mkdtempSync(join(tmpdir(), 'switchyard-big-'));
const config = join(dir, 'c.yaml');
writeFileSync(
  config,
  `server: { body_limit_bytes: 33554432, log_level: info }
upstreams:
  - { id: u, provider: openai-compatible, base_url: "http://127.0.0.1:${upstream.address().port}/v1", api_key: "\${BENCH_KEY}", max_concurrency: 100 }
models:
  - { name: m, price: { input: 1, output: 1 }, targets: [{ upstream: u, model: x }] }
keys:
  - { name: bench, key_sha256: "${createHash('sha256').update(KEY).digest('hex')}", limits: { tpm: 1000000000 } }
`,
);
const port = await freePort();
const child = start(
  dir,
  'gateway',
  process.execPath,
  [...(values['cpu-prof'] ? ['--cpu-prof', '--cpu-prof-dir', values['cpu-prof']] : []), values.gateway, '--config', config],
  { PORT: String(port), BENCH_KEY: 'x' },
);
const url = `http://127.0.0.1:${port}`;

let statuses = [];
let times = [];
let idle = [];
try {
  await waitHttp(`${url}/healthz`);
  idle = await timeHealthz(url, () => new Promise((res) => setTimeout(res, 1_000)));
  for (let r = 0; r < ROUNDS; r++) {
    const round = await timeHealthz(url, async () => {
      await new Promise((res) => setTimeout(res, 200));
      statuses.push(
        ...(await Promise.all(
          Array.from({ length: PROMPTS }, () =>
            fetch(`${url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' }, body }).then(
              async (res) => (await res.arrayBuffer(), res.status),
              () => 'error',
            ),
          ),
        )),
      );
    });
    times.push(...round);
  }
} finally {
  await stop(child);
  upstream.close();
  rmSync(dir, { recursive: true, force: true });
}
const line = (xs) => healthzLine(xs.sort((a, b) => a - b));
console.log(
  `${values.gateway}: ${ROUNDS} rounds of ${PROMPTS} concurrent ${(body.length / 1048576).toFixed(1)} MB chat prompts on a tpm key (node ${process.version})`,
);
console.log(`prompt statuses: ${statuses.join(' ')}`);
console.log(`/healthz every 10 ms, quiet (reference): ${line(idle)}`);
console.log(`/healthz every 10 ms, while the prompts arrive: ${line(times)}`);
