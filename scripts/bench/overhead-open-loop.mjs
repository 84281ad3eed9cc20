// Idle, then open-loop load: every target sits idle (no requests at all) for idle_s, then
// each in turn gets paced load at a fixed rate, one harness run per target, so each one's
// first rounds after the idle spell are seen on their own.
import { performance } from 'node:perf_hooks';
import { join } from 'node:path';
import { targetFlags } from './overhead-arms.mjs';
import { watchGateway } from './gateway-timeline.mjs';
import { CHUNKS, runHarness, runHarnessAsync, sleep } from './overhead-setup.mjs';

/**
 * The current build's memory-mode capacity (req/s, nonstream, 16 clients) from the
 * closed-loop report, or null when that scenario was not run.
 */
export function capacityFromClosedLoop(report, armName = 'switchyard') {
  const sc = report?.scenarios?.find((s) => s.mode === 'nonstream' && s.concurrency === 16);
  return sc?.results?.[armName]?.rps ?? null;
}

/** Measures that capacity in a short closed-loop run (nonstream, 16 clients, one target). */
export function measureCapacity(harness, work, arm, { duration = 5 } = {}) {
  const args = [
    ...targetFlags([arm]),
    '--mode',
    'nonstream',
    '--concurrency',
    '16',
    '--chunks',
    String(CHUNKS),
    '--duration',
    String(duration),
    '--rounds',
    '1',
    '--warmup',
    '1',
    '--quiet',
  ];
  const r = runHarness(harness, args, join(work, 'capacity.json'));
  return r.scenarios[0].results[arm.name].rps;
}

/**
 * Leaves every target idle for `idleS` seconds, then runs each of `arms` in turn at `rate`
 * req/s total (harness --rate, nonstream, `rounds` rounds of `roundS` seconds after 1 s of warm-up;
 * 256 in-flight slots so a stall shows as latency, not as a lower rate).
 * Returns { rate, idle_s, round_s, rounds, arms: { name: { idle_s_before, rounds: [{ p50_ms,
 * p99_ms, rps, errors }], worst_round_p99_ms, worst_round, errors, status } } }.
 * Per-round errors are not in the harness's rounds; the total is per arm. A Switchyard arm
 * also has `gateway_timeline`: per second, its GC pause ms and longest event-loop delay ms
 * (scripts/bench/gateway-timeline.mjs).
 */
export async function openLoop(harness, work, arms, { rate, idleS, roundS, rounds, log = () => {} }) {
  log(`open loop: all targets idle for ${idleS} s, then ${rounds} x ${roundS} s at ${rate} req/s per target`);
  const idleSince = performance.now();
  await sleep(idleS * 1000);
  const out = { rate, idle_s: idleS, round_s: roundS, rounds, arms: {} };
  for (const arm of arms) {
    const idleBefore = (performance.now() - idleSince) / 1000;
    const args = [
      ...targetFlags([arm]),
      '--rate',
      String(rate),
      '--mode',
      'nonstream',
      '--concurrency',
      '256',
      '--chunks',
      String(CHUNKS),
      '--duration',
      String(roundS),
      '--rounds',
      String(rounds),
      // One second of unrecorded load first: the driver is a fresh process each run, and a cold
      // driver alone put going direct at p99 368 ms in its first round (14 ms after 1 s of
      // warm-up, 2026-12-02). The target's own idle-to-load change still falls in round 1.
      '--warmup',
      '1',
    ];
    // A Switchyard arm is watched from its own /metrics meanwhile: GC pauses and event-loop
    // delay per second (the driver's warm-up second first), to explain a slow round.
    const watch = arm.kind === 'switchyard' ? watchGateway(arm.url) : null;
    let r;
    let timeline = null;
    try {
      r = await runHarnessAsync(harness, args, join(work, `open-loop-${arm.name.replace(/[^\w.+-]/g, '_')}.json`));
    } finally {
      timeline = watch ? await watch.stop() : null;
    }
    const res = r.scenarios[0].results[arm.name];
    const perRound = res.rounds.p99_ms.map((p99, i) => ({ p50_ms: res.rounds.p50_ms[i], p99_ms: p99, rps: res.rounds.rps[i] }));
    const worst = perRound.reduce((w, x, i) => (x.p99_ms > perRound[w].p99_ms ? i : w), 0);
    out.arms[arm.name] = {
      idle_s_before: Math.round(idleBefore),
      rounds: perRound,
      worst_round: worst + 1,
      worst_round_p99_ms: perRound[worst].p99_ms,
      latency_ms: res.latency_ms,
      errors: res.errors,
      status: res.status,
      ...(timeline ? { gateway_timeline: timeline } : {}),
    };
    log(`  ${arm.name}: idle ${Math.round(idleBefore)} s before, round p99 ${perRound.map((x) => x.p99_ms).join(' / ')} ms, errors ${res.errors}`);
    if (timeline) {
      const first = timeline.slice(0, 4).map((x) => `gc ${x.gc_ms} ms, lag ${x.lag_max_ms} ms`);
      log(`    first seconds: ${first.join(' | ')}`);
    }
  }
  return out;
}
