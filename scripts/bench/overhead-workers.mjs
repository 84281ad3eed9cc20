// The workers arm: one worker against two (`server.workers`), both on Redis, in one harness
// run. Only for builds whose config schema has server.workers (check-config says so).
import { join } from 'node:path';
import { startNodeFloor } from './node-floor.mjs';
import { startSwitchyard, stopArm, targetFlags } from './overhead-arms.mjs';
import { CHUNKS, acceptsConfig, runHarness, writeConfig } from './overhead-setup.mjs';
import { treeCpuSeconds } from './proc-cpu.mjs';

/** The offered load of the CPU leg, as a share of one worker's req/s at 16 clients. */
const CPU_LOAD_SHARE = 0.5;
/** Seconds of paced load per arm in the CPU leg (after 1 s of warm-up). */
const CPU_LEG_S = 15;

/** Requests the mock upstream has seen so far (its own counter, GET /stats). */
async function mockRequests(mockPort) {
  const r = await fetch(`http://127.0.0.1:${mockPort}/stats`);
  return (await r.json()).requests;
}

/**
 * Gateway CPU per request at one offered load: each arm alone gets `rate` req/s (open loop,
 * nonstream); the CPU seconds of its whole process tree (primary and workers, /proc) over the
 * run, divided by the requests that reached the mock upstream meanwhile. Independent of how
 * many cores the box has: what a second worker costs per request.
 * `arms`: one worker and N workers, then optionally node-floor with one process and with N.
 * Returns { rate, seconds, arms: { name: { cpu_s, requests, cpu_ms_per_request } }, ratio, floor_ratio }.
 */
async function cpuPerRequest(harness, work, arms, { rate, mockPort }) {
  const out = { rate, seconds: CPU_LEG_S, arms: {} };
  for (const arm of arms) {
    const cpu0 = treeCpuSeconds(arm.pid);
    const req0 = await mockRequests(mockPort);
    const args = [...targetFlags([arm]), '--rate', String(rate), '--mode', 'nonstream', '--concurrency', '256', '--chunks', String(CHUNKS)];
    runHarness(harness, [...args, '--duration', String(CPU_LEG_S), '--rounds', '1', '--warmup', '1', '--quiet'], join(work, `workers-cpu-${arm.name}.json`));
    const cpuS = treeCpuSeconds(arm.pid) - cpu0;
    const requests = (await mockRequests(mockPort)) - req0 - 1;
    out.arms[arm.name] = { cpu_s: Math.round(cpuS * 100) / 100, requests, cpu_ms_per_request: Math.round((cpuS / requests) * 1e6) / 1e3 };
  }
  const ratio = (one, many) => Math.round((out.arms[many.name].cpu_ms_per_request / out.arms[one.name].cpu_ms_per_request) * 1000) / 1000;
  out.ratio = ratio(arms[0], arms[1]);
  // The stack's own cost of a second process at the same load (node-floor under node:cluster, when measured).
  if (arms.length === 4) out.floor_ratio = ratio(arms[2], arms[3]);
  return out;
}

/** The pinning of this arm, stated in the report: two workers on a 2-core box share a core with the loader. */
export const WORKERS_PINNING = 'gateway processes on CPUs 0-1 (taskset -c 0-1, i.e. unpinned on this 2-core box); loader + mock + redis-servers on CPU 0';

/**
 * Runs the workers arm for build `b`: skipped ({ skipped: reason }) when check-config rejects
 * `server.workers: N`. Else starts `workers: 1` and `workers: N` gateways, each on its own
 * redis-server, and measures req/s at nonstream, 16 and 64 clients; then the CPU per request
 * of each at one offered load (half of one worker's req/s at 16 clients: `cpuPerRequest`).
 * Returns { workers: N, pinning, node_flags, scenarios: [{ concurrency, one_rps, n_rps, ratio }], cpu, harness_out }.
 */
export async function workersArm({ harness, work, b, n, mockPort, delays, timing }) {
  const probe = writeConfig(join(work, 'config-workers-probe.yaml'), mockPort, delays, { redisUrl: 'redis://127.0.0.1:6379', workers: n });
  if (!acceptsConfig(b.main, probe)) return { skipped: `${b.label} does not accept server.workers (check-config failed on ${probe})` };
  const one = await startSwitchyard({ work, b, name: 'workers-1', mockPort, delays, redis: true, workers: 1, cpus: '0-1' });
  const many = await startSwitchyard({ work, b, name: `workers-${n}`, mockPort, delays, redis: true, workers: n, cpus: '0-1' });
  const floors = [];
  try {
    const out = join(work, 'workers.json');
    const r = runHarness(harness, [...targetFlags([one, many]), '--mode', 'nonstream', '--concurrency', '16,64', '--chunks', String(CHUNKS), ...timing], out);
    const scenarios = r.scenarios.map((s) => {
      const a = s.results[one.name].rps;
      const m = s.results[many.name].rps;
      return {
        concurrency: s.concurrency,
        one_rps: a,
        n_rps: m,
        ratio: Math.round((m / a) * 1000) / 1000,
        errors: s.results[one.name].errors + s.results[many.name].errors,
        rounds: { one: s.results[one.name].rounds.rps, n: s.results[many.name].rounds.rps },
      };
    });
    const at16 = scenarios.find((x) => x.concurrency === 16)?.one_rps ?? 1_000;
    // node-floor with one process and with N, on the same CPUs, for the same CPU leg: how much
    // of the ratio is the stack's own (each process batches fewer requests per loop turn).
    floors.push(await startNodeFloor(work, mockPort, b.flags, { name: 'node-floor-1', workers: 1, cpus: '0-1' }));
    floors.push(await startNodeFloor(work, mockPort, b.flags, { name: `node-floor-${n}`, workers: n, cpus: '0-1' }));
    const cpu = await cpuPerRequest(harness, work, [one, many, ...floors], { rate: Math.round(at16 * CPU_LOAD_SHARE), mockPort });
    return { workers: n, pinning: WORKERS_PINNING, node_flags: b.flags, build: b.sha, scenarios, cpu, harness_out: out };
  } finally {
    await stopArm(one);
    await stopArm(many);
    for (const f of floors) await f.child.stop();
  }
}
