#!/usr/bin/env node
// npm run bench:long-streams — peak RSS while many long answers stream at once (200 streams of
// 2,000 chunks by default, about 500 KB of event JSON each), for the current build and, with
// --compare, an earlier one, alternated. What it shows: whether a stream's memory follows what
// it is sending now or everything it has sent (the text kept for a usage estimate,
// src/pipeline/generated-text.ts). The 20-chunk streams of bench:overhead are too short to.
//
// The neutral harness's mock upstream and driver on CPU 0, each gateway alone on CPU 1 with
// its own `npm start` flags, memory mode, a fresh process per round. RSS from /proc every
// 100 ms from before the streams open until the last one ended.
//
//   node scripts/bench-long-streams.mjs [--compare <git rev>] [--streams 200] [--chunks 2000]
//        [--delay 1] [--rounds 2] [--out .bench/long-streams.json]
//
// Prints one line per build and round: idle and peak RSS (MB), streams ok / errors, full
// stream p50 (ms); writes them as JSON to --out.
import { createHash } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { rssMb } from './bench/overhead-arms.mjs';
import { BENCH_KEY, build, findHarness, freePort, prepareHarness, runHarnessAsync, sleep, start, stopAll, waitHttp } from './bench/overhead-setup.mjs';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const { values: o } = parseArgs({
  options: {
    compare: { type: 'string' },
    streams: { type: 'string', default: '200' },
    chunks: { type: 'string', default: '2000' },
    delay: { type: 'string', default: '1' },
    rounds: { type: 'string', default: '2' },
    harness: { type: 'string' },
    out: { type: 'string', default: '.bench/long-streams.json' },
  },
});
const work = join(root, '.bench');
mkdirSync(work, { recursive: true });
const harness = prepareHarness(findHarness(root, o.harness, 'bench:long-streams'), work);
const builds = [build(root, work), ...(o.compare ? [build(root, work, o.compare)] : [])];

const mockPort = await freePort();
start(0, process.execPath, [join(harness, 'mock-upstream.mjs'), '--port', String(mockPort), '--quiet'], { log: join(work, 'mock.log') });
await waitHttp(`http://127.0.0.1:${mockPort}/health`);
// The harness appends the scenario to the model name; the mock reads it back from there.
const model = `gpt-mock-chunks${o.chunks}-delay${o.delay}-ttft0-latency0`;
const config = join(work, 'long-streams.yaml');
writeFileSync(
  config,
  `server:\n  log_level: info\nupstreams:\n  - id: mock\n    provider: openai-compatible\n    base_url: http://127.0.0.1:${mockPort}/v1\n    api_key: bench-upstream-key\n    max_concurrency: 2048\n` +
    `models:\n  - name: ${model}\n    price: { input: 1, output: 2 }\n    targets: [{ upstream: mock, model: ${model} }]\n` +
    `keys:\n  - name: bench\n    key_sha256: ${createHash('sha256').update(BENCH_KEY).digest('hex')}\n`,
);

const results = [];
for (let round = 1; round <= Number(o.rounds); round++) {
  for (const b of builds) {
    const port = await freePort();
    const child = start(1, process.execPath, [...b.flags, b.main, '--config', config], {
      env: { PORT: String(port), HOST: '127.0.0.1' },
      log: join(work, `long-streams-${b.sha}.log`),
    });
    const url = `http://127.0.0.1:${port}`;
    await waitHttp(`${url}/healthz`, 20_000);
    await sleep(1000);
    const idle = rssMb(child.pid);
    let peak = idle ?? 0;
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        peak = Math.max(peak, rssMb(child.pid) ?? 0);
        await sleep(100);
      }
    })();
    const args = ['--target', `gw=${url}`, '--header', `gw=authorization:Bearer ${BENCH_KEY}`, '--mode', 'stream', '--concurrency', o.streams];
    args.push('--chunks', o.chunks, '--delay', o.delay, '--include-usage', '--duration', '1', '--rounds', '1', '--warmup', '0', '--timeout', '300', '--quiet');
    const report = await runHarnessAsync(harness, args, join(work, 'long-streams-run.json'));
    sampling = false;
    await sampler;
    const res = report.scenarios[0].results.gw;
    const row = {
      build: b.label ?? b.sha,
      sha: b.sha,
      round,
      idle_rss_mb: idle,
      peak_rss_mb: peak,
      ok: res.ok,
      errors: res.errors,
      full_stream_p50_ms: res.full_stream_ms?.p50 ?? null,
    };
    results.push(row);
    console.log(
      `${row.build} round ${round}: idle ${idle} MB, peak ${peak} MB, ${row.ok} ok / ${row.errors} errors, full stream p50 ${Math.round(row.full_stream_p50_ms ?? 0)} ms`,
    );
    await child.stop();
  }
}
await stopAll();
writeFileSync(resolve(root, o.out), JSON.stringify({ tool: 'scripts/bench-long-streams.mjs', at: new Date().toISOString(), options: o, results }, null, 2));
