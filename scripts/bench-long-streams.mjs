#!/usr/bin/env node
// npm run bench:long-streams — peak RSS while many long answers stream at once (200 streams of
// 2,000 chunks by default, about 500 KB of event JSON each), for the current build and, with
// --compare, an earlier one, alternated. What it shows: whether a stream's memory follows what
// it is sending now or everything it has sent (the text kept for a usage estimate,
// src/pipeline/generated-text.ts). The 20-chunk streams of bench:overhead are too short to.
//
// The neutral harness's mock upstream and driver on CPU 0, each gateway alone on CPU 1 with
// its own `npm start` flags, memory mode, a fresh process per round; measured as bench:overhead
// measures its 1,000 streams (scripts/bench/overhead-streams.mjs: idle RSS, the median of 10
// samples over 1 s, then RSS every 100 ms until the last stream ended), one batch.
//
//   node scripts/bench-long-streams.mjs [--compare <git rev>] [--streams 200] [--chunks 2000]
//        [--delay 1] [--rounds 2] [--out .bench/long-streams.json]
//
// Prints one line per build and round: idle and peak RSS (MB), streams ok / errors, full
// stream p50 (ms); writes them as JSON to --out.
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { startSwitchyard, stopArm } from './bench/overhead-arms.mjs';
import { build, findHarness, freePort, prepareHarness, start, stopAll, waitHttp } from './bench/overhead-setup.mjs';
import { streamsMemory } from './bench/overhead-streams.mjs';

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
const mockUrl = `http://127.0.0.1:${mockPort}`;
await waitHttp(`${mockUrl}/health`);
const streams = { streams: Number(o.streams), chunks: Number(o.chunks), delayMs: Number(o.delay), batches: 1, timeoutS: 300, afterS: 0, mockUrl };

const results = [];
for (let round = 1; round <= Number(o.rounds); round++) {
  for (const b of builds) {
    const arm = await startSwitchyard({ work, b, name: b.label, mockPort, delays: [streams.delayMs], chunks: streams.chunks });
    const m = await streamsMemory(harness, work, arm, streams);
    await stopArm(arm);
    const row = {
      build: b.label,
      sha: b.sha,
      round,
      idle_rss_mb: m.idle_rss_mb,
      peak_rss_mb: m.peak_rss_mb,
      ok: m.harness.ok ?? null,
      errors: m.harness.errors ?? null,
      full_stream_p50_ms: m.harness.full_stream_ms?.p50 ?? null,
    };
    results.push(row);
    console.log(
      `${row.build} round ${round}: idle ${row.idle_rss_mb} MB, peak ${row.peak_rss_mb} MB, ${row.ok} ok / ${row.errors} errors, full stream p50 ${Math.round(row.full_stream_p50_ms ?? 0)} ms`,
    );
  }
}
await stopAll();
writeFileSync(resolve(root, o.out), JSON.stringify({ tool: 'scripts/bench-long-streams.mjs', at: new Date().toISOString(), options: o, results }, null, 2));
