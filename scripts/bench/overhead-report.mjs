#!/usr/bin/env node
// The markdown summary of a bench:overhead report: issue 16's targets next to the measured
// values, each marked pass / fail (or n/a when the run did not measure it).
//
//   node scripts/bench/overhead-report.mjs [.bench/overhead.json]
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const f2 = (x) => (x == null ? '–' : Number(x).toFixed(2));
const f0 = (x) => (x == null ? '–' : Math.round(Number(x)).toLocaleString('en-US'));
const mark = (ok) => (ok == null ? 'n/a' : ok ? 'pass' : '**fail**');
/** Issue 16 counts "no throughput lost" within this share (the closed loop's round-to-round spread is a few %). */
const NO_LOSS_RATIO = 0.97;

function scenario(report, mode, c, delay) {
  return report.closed_loop?.scenarios?.find((s) => s.mode === mode && s.concurrency === c && (delay == null || s.delay === delay));
}

/** Rows [target, arm, measured, verdict] for every target of issue 16 the report covers. */
export function targetRows(r) {
  const rows = [];
  const ns1 = scenario(r, 'nonstream', 1);
  for (const arm of ['switchyard', 'switchyard+redis']) {
    const v = ns1?.vs_baseline?.[arm];
    if (v)
      rows.push([
        'added p50, JSON, 1 client ≤ 0.3 ms',
        arm,
        `${f2(v.added_latency_ms.p50)} ms (paired rounds median ${f2(v.added_latency_paired_rounds_ms.p50_median)})`,
        mark(v.added_latency_ms.p50 <= 0.3),
      ]);
  }
  for (const s of r.closed_loop?.scenarios?.filter((x) => x.mode === 'stream' && x.concurrency === 1) ?? []) {
    for (const arm of ['switchyard', 'switchyard+redis']) {
      const v = s.vs_baseline?.[arm];
      if (v)
        rows.push([`added stream TTFB p50, 1 client, delay ${s.delay} ms ≤ 0.35 ms`, arm, `${f2(v.added_ttfb_ms.p50)} ms`, mark(v.added_ttfb_ms.p50 <= 0.35)]);
    }
  }
  for (const s of r.closed_loop?.scenarios?.filter((x) => x.concurrency === 16) ?? []) {
    const m = s.results.switchyard?.rps;
    const red = s.results['switchyard+redis']?.rps;
    if (m && red)
      rows.push([`Redis ≥ 0.8× memory req/s, ${s.label}`, 'switchyard+redis', `${f0(red)} vs ${f0(m)} req/s = ${f2(red / m)}×`, mark(red / m >= 0.8)]);
  }
  for (const [arm, c] of Object.entries(r.commands_per_request ?? {})) {
    for (const mode of ['json', 'stream'])
      rows.push([
        `≤ 3 Redis commands per request (${mode})`,
        arm,
        `${f2(c[mode].per_request)} (${c[mode].commands} for ${c.requests}; background ${f2(c.background.per_s)}/s)`,
        mark(c[mode].per_request <= 3),
      ]);
  }
  for (const [arm, a] of Object.entries(r.open_loop?.arms ?? {})) {
    if (!arm.startsWith('switchyard')) continue;
    rows.push([
      `every open-loop round p99 ≤ 50 ms (${r.open_loop.round_s} s rounds at ${f0(r.open_loop.rate)} req/s)`,
      arm,
      `worst ${f2(a.worst_round_p99_ms)} ms (round ${a.worst_round}); ${a.errors} errors`,
      mark(a.worst_round_p99_ms <= 50 && a.errors === 0),
    ]);
  }
  for (const [arm, s] of Object.entries(r.streams_memory ?? {})) {
    const full = s.streams >= 1000 ? '' : ` (only ${s.streams} streams)`;
    rows.push([
      `1,000 streams: peak RSS ≤ 250 MB${full}`,
      arm,
      `${f0(s.peak_rss_mb)} MB (idle ${f0(s.idle_rss_mb)} MB; mock saw ${s.mock_peak_inflight} at once)`,
      mark(s.peak_rss_mb <= 250),
    ]);
    const endOk = s.after.end_above_idle_mb != null && s.after.end_above_idle_mb <= 50;
    rows.push([
      `1,000 streams: within 50 MB of idle ${s.after.seconds} s after${full}`,
      arm,
      `${f0(s.after.end_rss_mb)} MB (+${f0(s.after.end_above_idle_mb)}); within 50 MB after ${s.after.within_50mb_after_s ?? 'never'} s`,
      mark(endOk),
    ]);
  }
  for (const s of r.workers?.scenarios ?? []) {
    rows.push([
      `${r.workers.workers} workers ≥ 1.7× one worker, nonstream ${s.concurrency} clients`,
      'workers (Redis)',
      `${f0(s.n_rps)} vs ${f0(s.one_rps)} req/s = ${f2(s.ratio)}×`,
      mark(s.ratio >= 1.7),
    ]);
  }
  const cpu = r.workers?.cpu;
  if (cpu) {
    const [one, many] = Object.values(cpu.arms);
    rows.push([
      `CPU per request, ${r.workers.workers} workers ≤ 1.15× one worker, open loop ${cpu.rate} req/s`,
      'workers (Redis)',
      `${f2(many.cpu_ms_per_request)} vs ${f2(one.cpu_ms_per_request)} ms = ${f2(cpu.ratio)}×`,
      mark(cpu.ratio <= 1.15),
    ]);
  }
  const cmpName = Object.keys(r.arms ?? {}).find((n) => n.startsWith('switchyard@') && !n.endsWith('+redis'));
  for (const s of cmpName ? (r.closed_loop?.scenarios?.filter((x) => x.concurrency === 16) ?? []) : []) {
    for (const [cur, prev] of [
      ['switchyard', cmpName],
      ['switchyard+redis', `${cmpName}+redis`],
    ]) {
      const a = s.results[cur];
      const b = s.results[prev];
      if (a && b)
        rows.push([
          `no throughput lost at 16 clients vs ${prev} (≥ ${NO_LOSS_RATIO}×), ${s.label}`,
          cur,
          `${f0(a.rps)} vs ${f0(b.rps)} req/s = ${f2(a.rps / b.rps)}× (cv ${f0(a.rps_cv_pct)} % / ${f0(b.rps_cv_pct)} %)`,
          mark(a.rps / b.rps >= NO_LOSS_RATIO),
        ]);
    }
  }
  return rows;
}

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
  lines.push('', '### Issue 16 targets', '', '| target | arm | measured | verdict |', '|---|---|---|---|');
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
