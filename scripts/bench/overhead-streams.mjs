// Memory under many open streams: a gateway's RSS idle, while `streams` streams are open at
// once (two batches back to back), and through the minute after the last one ended.
import { performance } from 'node:perf_hooks';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { rssMb, targetFlags } from './overhead-arms.mjs';
import { CHUNKS, LONG_STREAM_DELAY_MS, pinned, sleep } from './overhead-setup.mjs';

const r1 = (x) => Math.round(x * 10) / 10;

/** Runs the harness on CPU 0 without blocking; resolves with its exit code. */
function harnessAsync(harness, args, out, log) {
  const [c, a] = pinned(0, process.execPath, [join(harness, 'run.mjs'), ...args, '--out', out]);
  const child = spawn(c, a, { stdio: ['ignore', 'ignore', log ? 'inherit' : 'ignore'] });
  return new Promise((res) => child.once('exit', (code) => res(code)));
}

const mockStats = async (mockUrl, method = 'GET') =>
  (await fetch(`${mockUrl}/stats${method === 'POST' ? '/reset' : ''}`, { method, headers: { connection: 'close' } })).json();

/**
 * For one Switchyard `arm` (with `arm.pid`): RSS idle (median of 10 samples over 1 s), then
 * `streams` concurrent streams (harness --concurrency streams --mode stream, 20 chunks
 * 100 ms apart, so each stream lasts ~2 s and a 1 s round opens each worker's stream once),
 * two rounds back to back, RSS sampled every 100 ms; then RSS every 100 ms for `afterS` s.
 * `chunks`, `delayMs`, `batches` and `timeoutS` change the streams (bench:long-streams: fewer,
 * far longer ones, one batch).
 * Returns { idle_rss_mb, peak_rss_mb, peak_at_s, mock_peak_inflight, harness: {ok, errors,
 * streams_without_done, full_stream_ms}, after: { seconds, end_rss_mb, end_above_idle_mb,
 * within_50mb_after_s (null: never), curve: [[s, MB] every 1 s] }, load_curve: [[s, MB]] }.
 */
export async function streamsMemory(
  harness,
  work,
  arm,
  { streams, afterS, mockUrl, chunks = CHUNKS, delayMs = LONG_STREAM_DELAY_MS, batches = 2, timeoutS = 60 },
) {
  const idle = [];
  for (let i = 0; i < 10; i++) {
    idle.push(rssMb(arm.pid));
    await sleep(100);
  }
  const idleRss = idle.filter((x) => x != null).sort((a, b) => a - b)[Math.floor(idle.length / 2)];
  await mockStats(mockUrl, 'POST');
  const out = join(work, `streams-${arm.name.replace(/[^\w.+-]/g, '_')}.json`);
  const args = [
    ...targetFlags([arm]),
    '--mode',
    'stream',
    '--concurrency',
    String(streams),
    '--chunks',
    String(chunks),
    '--delay',
    String(delayMs),
    '--include-usage',
    '--duration',
    '1',
    '--rounds',
    String(batches),
    '--warmup',
    '0',
    '--timeout',
    String(timeoutS),
    '--quiet',
  ];
  const t0 = performance.now();
  const at = () => r1((performance.now() - t0) / 1000);
  let running = true;
  const load = [];
  const sampler = (async () => {
    while (running) {
      load.push([at(), rssMb(arm.pid)]);
      await sleep(100);
    }
  })();
  const code = await harnessAsync(harness, args, out, false);
  running = false;
  await sampler;
  const ended = performance.now();
  const after = [];
  while (performance.now() - ended < afterS * 1000) {
    after.push([r1((performance.now() - ended) / 1000), rssMb(arm.pid)]);
    await sleep(100);
  }
  const peak = [...load, ...after].reduce((p, x) => (x[1] > p[1] ? x : p), [0, 0]);
  const within = after.find(([, mb]) => mb != null && mb <= idleRss + 50);
  const end = after.at(-1)?.[1] ?? null;
  const rep = code === 0 ? JSON.parse(readFileSync(out, 'utf8')).scenarios[0].results[arm.name] : null;
  const stats = await mockStats(mockUrl);
  return {
    streams,
    batches,
    idle_rss_mb: idleRss,
    peak_rss_mb: peak[1],
    peak_at_s: peak[0],
    mock_peak_inflight: stats.peakInflight,
    harness: rep
      ? { exit: code, ok: rep.ok, errors: rep.errors, status: rep.status, streams_without_done: rep.streams_without_done, full_stream_ms: rep.full_stream_ms }
      : { exit: code },
    after: {
      seconds: afterS,
      end_rss_mb: end,
      end_above_idle_mb: end == null ? null : r1(end - idleRss),
      within_50mb_after_s: within ? within[0] : null,
      curve: after.filter((_, i) => i % 10 === 0 || i === after.length - 1),
    },
    load_curve: load,
  };
}
