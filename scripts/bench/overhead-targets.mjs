// Issue 33's targets for a bench:overhead report, each stated against a reference measured in
// the same run (node-floor: Fastify + undici relaying with no gateway work; the memory arm; one
// worker; the previous build), so the verdict does not move with the machine's speed.
const f2 = (x) => (x == null ? '–' : Number(x).toFixed(2));
const f0 = (x) => (x == null ? '–' : Math.round(Number(x)).toLocaleString('en-US'));
const mark = (ok) => (ok == null ? 'n/a' : ok ? 'pass' : '**fail**');
/** "No throughput lost" within this share (the closed loop's round-to-round spread is a few %). */
export const NO_LOSS_RATIO = 0.97;
const FLOOR = 'node-floor';
/** Added p50 at 1 client, as a multiple of node-floor's: memory mode, Redis mode. */
const ADDED = { switchyard: 1.6, 'switchyard+redis': 2.5 };

function scenarios(r, pred) {
  return r.closed_loop?.scenarios?.filter(pred) ?? [];
}

/** Rows [target, arm, measured, verdict] for every issue-33 target the report covers. */
export function targetRows(r) {
  const rows = [];
  for (const s of scenarios(r, (x) => x.concurrency === 1)) {
    const json = s.mode === 'nonstream';
    const what = json ? 'added p50, JSON' : `added TTFB p50, SSE (delay ${s.delay} ms)`;
    const of = (v) => (json ? v?.added_latency_ms?.p50 : v?.added_ttfb_ms?.p50);
    const floor = of(s.vs_baseline?.[FLOOR]);
    for (const [arm, times] of Object.entries(ADDED)) {
      const mine = of(s.vs_baseline?.[arm]);
      if (mine == null || floor == null) continue;
      rows.push([`${what}, 1 client ≤ ${times}× node-floor's`, arm, `${f2(mine)} vs ${f2(floor)} ms = ${f2(mine / floor)}×`, mark(mine <= times * floor)]);
    }
  }
  for (const s of scenarios(r, (x) => x.concurrency === 16)) {
    const m = s.results.switchyard?.rps;
    const red = s.results['switchyard+redis']?.rps;
    const floor = s.results[FLOOR]?.rps;
    if (m && floor)
      rows.push([`req/s at 16 clients ≥ 0.6× node-floor's, ${s.label}`, 'switchyard', `${f0(m)} vs ${f0(floor)} = ${f2(m / floor)}×`, mark(m >= 0.6 * floor)]);
    if (m && red) rows.push([`Redis ≥ 0.85× memory req/s, ${s.label}`, 'switchyard+redis', `${f0(red)} vs ${f0(m)} = ${f2(red / m)}×`, mark(red >= 0.85 * m)]);
  }
  for (const [arm, c] of Object.entries(r.commands_per_request ?? {})) {
    for (const mode of ['json', 'stream'])
      rows.push([
        `≤ 2 Redis commands per request, plain key (${mode}; the run's one first view read allowed)`,
        arm,
        `${f2(c[mode].per_request)} (${c[mode].commands} for ${c.requests}; background ${f2(c.background.per_s)}/s)`,
        mark(c[mode].commands <= 2 * c.requests + 1),
      ]);
  }
  const floorWorst = r.open_loop?.arms?.[FLOOR]?.worst_round_p99_ms;
  for (const [arm, a] of Object.entries(r.open_loop?.arms ?? {})) {
    if (!arm.startsWith('switchyard') || floorWorst == null) continue;
    rows.push([
      `every open-loop round's p99 (the first after ${r.open_loop.idle_s} s idle included) ≤ node-floor's worst + 20 ms`,
      arm,
      `worst ${f2(a.worst_round_p99_ms)} ms (round ${a.worst_round}) vs ${f2(floorWorst)} ms; ${a.errors} errors`,
      mark(a.worst_round_p99_ms <= floorWorst + 20 && a.errors === 0),
    ]);
  }
  const cpu = r.workers?.cpu;
  if (cpu) {
    const [one, many, floorOne, floorMany] = Object.values(cpu.arms);
    // The stack's own ratio at the same load, when the run measured node-floor under node:cluster.
    const floor = floorMany ? ` (node-floor: ${f2(floorMany.cpu_ms_per_request)} vs ${f2(floorOne.cpu_ms_per_request)} ms = ${f2(cpu.floor_ratio)}×)` : '';
    rows.push([
      `CPU per request, ${r.workers.workers} workers ≤ 1.15× one worker (open loop ${cpu.rate} req/s)`,
      'workers (Redis)',
      `${f2(many.cpu_ms_per_request)} vs ${f2(one.cpu_ms_per_request)} ms = ${f2(cpu.ratio)}×${floor}`,
      mark(cpu.ratio <= 1.15),
    ]);
    // No target of its own: what the 16-client req/s ratio reads on a day node-floor is bound by
    // the load generator (CPU 0) rather than by itself; CPU per request at one offered load is not.
    if (floorOne)
      rows.push([
        `CPU per request, one worker against node-floor in one process (open loop ${cpu.rate} req/s; no target)`,
        'workers (Redis)',
        `${f2(one.cpu_ms_per_request)} vs ${f2(floorOne.cpu_ms_per_request)} ms = ${f2(one.cpu_ms_per_request / floorOne.cpu_ms_per_request)}×`,
        '–',
      ]);
  }
  for (const [arm, s] of Object.entries(r.streams_memory ?? {})) {
    const full = s.streams >= 1000 ? '' : ` (only ${s.streams} streams)`;
    const back = s.after.end_above_idle_mb;
    rows.push([
      `1,000 streams: peak RSS ≤ 200 MB, within 50 MB of idle ${s.after.seconds} s after${full}`,
      arm,
      `peak ${f0(s.peak_rss_mb)} MB (idle ${f0(s.idle_rss_mb)}); +${f0(back)} MB after`,
      mark(s.peak_rss_mb <= 200 && back != null && back <= 50),
    ]);
  }
  const cmpName = Object.keys(r.arms ?? {}).find((n) => n.startsWith('switchyard@') && !n.endsWith('+redis'));
  for (const s of cmpName ? scenarios(r, (x) => x.concurrency === 16) : []) {
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
