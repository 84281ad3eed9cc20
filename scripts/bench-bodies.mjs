#!/usr/bin/env node
// npm run bench:bodies — peak memory (RSS high-water mark, Linux /proc) of one gateway process
// while N large chat prompts arrive at once, with the large-body guard off and at a cap, side
// by side in one run. The upstream is a local HTTP server in this process that reads each body
// and answers after HOLD_MS, so every body is in flight at the same time. Prints a Markdown table.
//   --bodies 8 --mb 27 --cap-mib 128
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { freePort, start, stop, waitHttp } from './bench/procs.mjs';

const { values } = parseArgs({
  options: { bodies: { type: 'string', default: '8' }, mb: { type: 'string', default: '27' }, 'cap-mib': { type: 'string', default: '128' } },
});
const BODIES = Number(values.bodies);
const MB = Number(values.mb);
const CAP = Number(values['cap-mib']) * 1024 * 1024;
const HOLD_MS = 2000;
const KEY = 'sk-bench-bodies';

const rss = (pid, field) => Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) / 1024;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const upstream = createServer((req, res) => {
  req.resume();
  req.on('end', () =>
    setTimeout(() => {
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
    }, HOLD_MS),
  );
});
await new Promise((r) => upstream.listen(0, '127.0.0.1', r));
const upUrl = `http://127.0.0.1:${upstream.address().port}`;

const words = ['alpha', 'beta', 'gamma', 'delta', 'epsilon', 'zeta'];
const parts = [];
for (let i = 0, n = 0; n < MB * 1024 * 1024; i++) {
  const w = `${words[i % 6]}${i % 97}`;
  parts.push(w);
  n += w.length + 1;
}
const body = JSON.stringify({ model: 'm', messages: [{ role: 'user', content: parts.join(' ') }] });

async function arm(cap) {
  const dir = mkdtempSync(join(tmpdir(), 'switchyard-bodies-'));
  const config = join(dir, 'c.yaml');
  writeFileSync(
    config,
    `server: { body_limit_bytes: 33554432, max_body_bytes_in_flight: ${cap}, log_level: info }
upstreams:
  - { id: u, provider: openai-compatible, base_url: "${upUrl}/v1", api_key: "\${BENCH_KEY}", max_concurrency: 100 }
models:
  - { name: m, price: { input: 1, output: 1 }, targets: [{ upstream: u, model: x }] }
keys:
  - { name: bench, key_sha256: "${createHash('sha256').update(KEY).digest('hex')}" }
`,
  );
  const port = await freePort();
  const child = start(dir, 'gateway', process.execPath, ['dist/main.js', '--config', config], { PORT: String(port), BENCH_KEY: 'x' });
  const url = `http://127.0.0.1:${port}`;
  await waitHttp(`${url}/healthz`);
  await sleep(500);
  const idle = rss(child.pid, 'VmRSS');
  const statuses = await Promise.all(
    Array.from({ length: BODIES }, () =>
      fetch(`${url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' }, body }).then(
        async (r) => (await r.arrayBuffer(), r.status),
        () => 'error',
      ),
    ),
  );
  const peak = rss(child.pid, 'VmHWM');
  await stop(child);
  rmSync(dir, { recursive: true, force: true });
  const count = (s) => statuses.filter((x) => x === s).length;
  return { cap, idle, peak, ok: count(200), refused: count(503), other: BODIES - count(200) - count(503) };
}

let rows;
try {
  rows = [await arm(0), await arm(CAP)];
} finally {
  upstream.close();
}
console.log(`${BODIES} concurrent ${MB} MB chat prompts, upstream holding each ${HOLD_MS} ms (node ${process.version})\n`);
console.log('| max_body_bytes_in_flight | idle RSS | peak RSS | 200 | 503 server_overloaded | other |');
console.log('|---|---|---|---|---|---|');
for (const r of rows)
  console.log(
    `| ${r.cap === 0 ? '0 (off)' : `${r.cap / 1048576} MiB`} | ${r.idle.toFixed(0)} MB | ${r.peak.toFixed(0)} MB | ${r.ok} | ${r.refused} | ${r.other} |`,
  );
const perBody = rows.map((r) => (r.peak - r.idle) / Math.max(1, r.ok) / MB);
console.log(`\nmemory per body in flight: ${perBody.map((x) => `${x.toFixed(1)} x`).join(', ')} its size`);
