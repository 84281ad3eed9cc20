// The workers arm: one worker against two (`server.workers`), both on Redis, in one harness
// run. Only for builds whose config schema has server.workers (check-config says so).
import { join } from 'node:path';
import { startSwitchyard, stopArm, targetFlags } from './overhead-arms.mjs';
import { CHUNKS, acceptsConfig, runHarness, writeConfig } from './overhead-setup.mjs';

/** The pinning of this arm, stated in the report: two workers on a 2-core box share a core with the loader. */
export const WORKERS_PINNING = 'gateway processes on CPUs 0-1 (taskset -c 0-1, i.e. unpinned on this 2-core box); loader + mock + redis-servers on CPU 0';

/**
 * Runs the workers arm for build `b`: skipped ({ skipped: reason }) when check-config rejects
 * `server.workers: N`. Else starts `workers: 1` and `workers: N` gateways, each on its own
 * redis-server, and measures req/s at nonstream, 16 and 64 clients.
 * Returns { workers: N, pinning, node_flags, scenarios: [{ concurrency, one_rps, n_rps, ratio }], harness_out }.
 */
export async function workersArm({ harness, work, b, n, mockPort, delays, timing }) {
  const probe = writeConfig(join(work, 'config-workers-probe.yaml'), mockPort, delays, { redisUrl: 'redis://127.0.0.1:6379', workers: n });
  if (!acceptsConfig(b.main, probe)) return { skipped: `${b.label} does not accept server.workers (check-config failed on ${probe})` };
  const one = await startSwitchyard({ work, b, name: 'workers-1', mockPort, delays, redis: true, workers: 1, cpus: '0-1' });
  const many = await startSwitchyard({ work, b, name: `workers-${n}`, mockPort, delays, redis: true, workers: n, cpus: '0-1' });
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
    return { workers: n, pinning: WORKERS_PINNING, node_flags: b.flags, build: b.sha, scenarios, harness_out: out };
  } finally {
    await stopArm(one);
    await stopArm(many);
  }
}
