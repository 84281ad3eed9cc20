// bench:overhead's targets: Switchyard builds (memory or Redis state) and their redis-servers.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { redisCommand } from './procs.mjs';
import { BENCH_KEY, freePort, sleep, start, waitHttp, writeConfig } from './overhead-setup.mjs';

/**
 * Starts a redis-server without persistence on CPU 0 (with the driver and the mock).
 * Returns { child, port, url }. Throws when it does not answer PING within 10 s.
 */
export async function startRedisServer(work, name) {
  const port = await freePort();
  const child = start(0, 'redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], {
    log: join(work, `${name}.log`),
  });
  const end = Date.now() + 10_000;
  while (!(await redisCommand(port, 'PING'))?.startsWith('+PONG')) {
    if (Date.now() > end) throw new Error(`${name}: redis-server did not come up`);
    await sleep(100);
  }
  return { child, port, url: `redis://127.0.0.1:${port}` };
}

/**
 * Starts one Switchyard arm: build `b` (from overhead-setup's build()) with that build's own
 * `npm start` node flags, on `cpus` (CPU 1 alone by default), state in memory or, with
 * `redis`, in its own redis-server. `env` adds environment variables (e.g. OTLP); `chunks`
 * the model's chunks per answer (writeConfig).
 * Returns the arm: { name, kind, build, store, node_flags, cpus, url, headers, pid, child, redis }.
 * `pid` is node's own (taskset execs), so /proc/<pid>/status is the gateway's.
 */
export async function startSwitchyard({ work, b, name, mockPort, delays, chunks, redis = false, workers, cpus = 1, env = {} }) {
  const redisServer = redis ? await startRedisServer(work, `redis-${name}`) : null;
  const config = writeConfig(join(work, `config-${name}.yaml`), mockPort, delays, { redisUrl: redisServer?.url, workers, chunks });
  const port = await freePort();
  const child = start(cpus, process.execPath, [...b.flags, b.main, '--config', config], {
    env: { PORT: String(port), HOST: '127.0.0.1', ...env },
    log: join(work, `gateway-${name}.log`),
  });
  const url = `http://127.0.0.1:${port}`;
  await waitHttp(`${url}/healthz`, 20_000);
  if (redis) await waitRedisMode(url, name);
  return {
    name,
    kind: 'switchyard',
    build: b.sha,
    store: redis ? 'redis' : 'memory',
    workers: workers ?? null,
    node_flags: b.flags,
    cpus: String(cpus),
    config,
    url,
    headers: { authorization: `Bearer ${BENCH_KEY}` },
    pid: child.pid,
    child,
    redis: redisServer,
  };
}

/** Waits (up to 5 s) until /readyz says the store is in Redis mode; throws otherwise. */
async function waitRedisMode(url, name) {
  for (let i = 0; i < 50; i++) {
    const ready = await (await fetch(`${url}/readyz`)).text();
    if (ready.includes('"mode":"redis"')) return;
    await sleep(100);
  }
  throw new Error(`${name}: /readyz never reported "mode":"redis"`);
}

/** Stops an arm's process and its redis-server. */
export async function stopArm(arm) {
  await arm.child?.stop();
  await arm.redis?.child.stop();
}

/** The harness flags that make `arms` its targets (first = baseline): --target and --header. */
export function targetFlags(arms) {
  const flags = [];
  for (const a of arms) {
    flags.push('--target', `${a.name}=${a.url}`);
    for (const [k, v] of Object.entries(a.headers ?? {})) flags.push('--header', `${a.name}=${k}:${v}`);
  }
  return flags;
}

/** Resident set size of process `pid` in MB (VmRSS in /proc/<pid>/status); null when gone. */
export function rssMb(pid) {
  try {
    const m = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Math.round((Number(m[1]) / 1024) * 10) / 10 : null;
  } catch {
    return null;
  }
}

/** The JSON-safe description of an arm for the report (no child handles). */
export function describeArm(a) {
  const { child: _c, redis, headers: _h, config: _f, ...rest } = a;
  return { ...rest, redis_port: redis?.port ?? null };
}
