#!/usr/bin/env node
// The markdown summary of a bench:overhead report: issue 33's targets (overhead-targets.mjs)
// next to the measured values, each marked pass / fail (or n/a when the run did not measure it).
//
//   node scripts/bench/overhead-report.mjs [.bench/overhead.json]
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { targetRows } from './overhead-targets.mjs';

export { targetRows };

const f2 = (x) => (x == null ? '–' : Number(x).toFixed(2));
const f0 = (x) => (x == null ? '–' : Math.round(Number(x)).toLocaleString('en-US'));
/** The whole markdown summary of report `r` (the object bench-overhead.mjs writes). */
export function render(r) {
  const lines = ['## bench:overhead summary', ''];
  const g = r.git?.current;
  lines.push(
    `build ${g?.rev}${g?.src_dirty ? ' (src/ dirty)' : ''}${r.git?.compare ? `, compare ${r.git.compare.rev}` : ''}; ${r.quick ? '**--quick smoke run, not for publishing**; ' : ''}${r.pinning}`,
  );
  lines.push('', '| arm | kind | store | node flags | CPUs |', '|---|---|---|---|---|');
  for (const a of Object.values(r.arms ?? {}))
    lines.push(`| ${a.name} | ${a.kind} | ${a.store ?? '–'} | ${a.node_flags == null ? '–' : a.node_flags.join(' ') || '(none)'} | ${a.cpus} |`);
  for (const n of r.notes ?? []) lines.push('', `note: ${n}`);
  lines.push('', '### Issue 33 targets', '', '| target | arm | measured | verdict |', '|---|---|---|---|');
  for (const row of targetRows(r)) lines.push(`| ${row.join(' | ')} |`);
  if (r.open_loop) {
    lines.push(
      '',
      `### Open loop after ${r.open_loop.idle_s} s idle: ${f0(r.open_loop.rate)} req/s (${r.open_loop.capacity_source}: ${f0(r.open_loop.capacity_rps)} req/s)`,
      '',
    );
    lines.push('| arm | idle before (s) | per-round p99 (ms) | per-round p50 (ms) | achieved req/s | errors |', '|---|---|---|---|---|---|');
    for (const [n, a] of Object.entries(r.open_loop.arms)) {
      lines.push(
        `| ${n} | ${a.idle_s_before} | ${a.rounds.map((x) => f2(x.p99_ms)).join(' / ')} | ${a.rounds.map((x) => f2(x.p50_ms)).join(' / ')} | ${a.rounds.map((x) => f0(x.rps)).join(' / ')} | ${a.errors} |`,
      );
    }
  }
  if (r.streams_memory) {
    lines.push(
      '',
      '### Streams memory (VmRSS)',
      '',
      '| arm | streams × batches | idle MB | peak MB | end MB | within 50 MB after (s) | ok / errors |',
      '|---|---|---|---|---|---|---|',
    );
    for (const [n, s] of Object.entries(r.streams_memory)) {
      lines.push(
        `| ${n} | ${s.streams} × ${s.batches} | ${f0(s.idle_rss_mb)} | ${f0(s.peak_rss_mb)} | ${f0(s.after.end_rss_mb)} (${s.after.seconds} s after) | ${s.after.within_50mb_after_s ?? 'never'} | ${s.harness.ok ?? '?'} / ${s.harness.errors ?? '?'} |`,
      );
    }
  }
  if (r.commands_per_request && Object.keys(r.commands_per_request).length) {
    lines.push('', '### Redis commands per request (top-level, not inside Lua)', '');
    for (const [n, c] of Object.entries(r.commands_per_request)) {
      for (const mode of ['json', 'stream'])
        lines.push(
          `- ${n} ${mode}: ${f2(c[mode].per_request)} per request: ${Object.entries(c[mode].by_command)
            .map(([k, v]) => `${k} ${v}`)
            .join(', ')}`,
        );
    }
  }
  lines.push('', '### Workers', '', r.workers?.skipped ? `skipped: ${r.workers.skipped}` : `pinning: ${r.workers?.pinning}`);
  return `${lines.join('\n')}\n`;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const file = resolve(process.argv[2] ?? '.bench/overhead.json');
  process.stdout.write(render(JSON.parse(readFileSync(file, 'utf8'))));
}
