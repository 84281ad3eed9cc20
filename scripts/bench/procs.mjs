// Child processes, ports and a throwaway redis-server for the benchmark scripts.
import { spawn, execFileSync } from 'node:child_process';
import { openSync } from 'node:fs';
import { createConnection, createServer } from 'node:net';
import { join } from 'node:path';

const children = [];

/** Spawns `cmd args` with stdout/stderr to `<logDir>/<name>.log`; the child gets `.exited`. */
export function start(logDir, name, cmd, args, env = {}) {
  const log = openSync(join(logDir, `${name}.log`), 'w');
  const child = spawn(cmd, args, { stdio: ['ignore', log, log], env: { ...process.env, ...env } });
  child.exited = new Promise((r) => child.once('exit', r));
  children.push(child);
  return child;
}

/** SIGTERM, then SIGKILL after 5 s. */
export async function stop(child) {
  if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
  await Promise.race([child.exited, new Promise((r) => setTimeout(r, 5_000))]);
  if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
}

const stopAll = () => children.forEach((c) => c.exitCode === null && c.signalCode === null && c.kill('SIGTERM'));
process.on('exit', stopAll);
process.on('SIGINT', () => process.exit(130));

export const freePort = () =>
  new Promise((res) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => res(port));
    });
  });

/** Resolves once `url` answers below 500; throws after `ms`. */
export async function waitHttp(url, ms = 15_000) {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    try {
      const r = await fetch(url);
      await r.arrayBuffer();
      if (r.status < 500) return;
    } catch {
      // not up yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${url} did not come up`);
}

/** Sends one inline Redis command; resolves with the first reply line (null on error). */
export function redisCommand(port, command) {
  return new Promise((res) => {
    let buf = '';
    const s = createConnection({ port, host: '127.0.0.1' }, () => s.write(`${command}\r\n`));
    s.setTimeout(1_000, () => s.destroy());
    s.on('data', (d) => {
      buf += d.toString();
      if (buf.includes('\r\n')) {
        s.destroy();
        res(buf);
      }
    });
    s.on('error', () => res(null));
    s.on('close', () => res(buf || null));
  });
}

export function hasRedis() {
  try {
    execFileSync('redis-server', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/** Starts a redis-server without persistence on a free port; resolves with { child, port, url }. */
export async function startRedis(logDir) {
  const port = await freePort();
  const child = start(logDir, 'redis', 'redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no']);
  const end = Date.now() + 10_000;
  while (!(await redisCommand(port, 'PING'))?.startsWith('+PONG')) {
    if (Date.now() > end) throw new Error('redis-server did not come up');
    await new Promise((r) => setTimeout(r, 100));
  }
  return { child, port, url: `redis://127.0.0.1:${port}` };
}

/** The value of each `name{upstream="..."}` sample in a Prometheus text page, by upstream. */
export function gaugeByUpstream(text, name) {
  const out = {};
  const re = new RegExp(`^${name}\\{[^}]*upstream="([^"]+)"[^}]*\\} (\\S+)$`, 'gm');
  for (const m of text.matchAll(re)) out[m[1]] = Number(m[2]);
  return out;
}

/** Sums `name{...label="v"...}` samples by that label's value. */
export function counterByLabel(text, name, label) {
  const out = {};
  const re = new RegExp(`^${name}\\{([^}]*)\\} (\\S+)$`, 'gm');
  for (const m of text.matchAll(re)) {
    const v = new RegExp(`${label}="([^"]+)"`).exec(m[1])?.[1];
    if (v !== undefined) out[v] = (out[v] ?? 0) + Number(m[2]);
  }
  return out;
}
