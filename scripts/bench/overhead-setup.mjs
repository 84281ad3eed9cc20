// bench:overhead's groundwork: the harness copy, CPU pinning, child processes, the bench
// config, and the builds under test (the current one and --compare revisions).
import { execFileSync, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { cpSync, existsSync, mkdirSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { freePort, waitHttp } from './procs.mjs';

export { freePort, waitHttp };
export const BENCH_KEY = 'sk-bench-overhead-key';
export const CHUNKS = 20;
/** The streams-memory scenario: 20 chunks 100 ms apart, so a stream stays open ~2 s. */
export const LONG_STREAM_DELAY_MS = 100;
export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/**
 * The load harness to use: `override` (--harness), else ../shared/bench beside the checkout
 * at `root`, else its unmodified copy in scripts/bench-harness/. Exits with a message naming
 * what was looked for (code 2) when that directory has no run.mjs; `tool` prefixes it.
 */
export function findHarness(root, override, tool) {
  const dir = override ?? [join(root, '..', 'shared', 'bench'), join(root, 'scripts', 'bench-harness')].find((d) => existsSync(join(d, 'run.mjs')));
  if (!dir || !existsSync(join(dir, 'run.mjs'))) {
    console.error(`${tool}: no load harness at ${override ?? '../shared/bench or scripts/bench-harness'} (run.mjs missing); pass --harness <dir>.`);
    process.exit(2);
  }
  return dir;
}

/**
 * Copies the harness from `source` into `<work>/harness` and installs its dependencies
 * (once per source: a copy made from another source, e.g. an earlier `--harness`, is
 * replaced; the source is never modified). Returns the copy's directory.
 */
export function prepareHarness(source, work) {
  const harness = join(work, 'harness');
  const stamp = join(harness, '.copied-from');
  const from = resolve(source);
  const current = existsSync(stamp) ? readFileSync(stamp, 'utf8') : null;
  if (current !== from || !existsSync(join(harness, 'node_modules', 'undici'))) {
    rmSync(harness, { recursive: true, force: true });
    cpSync(source, harness, { recursive: true });
    execFileSync('npm', ['install', '--no-audit', '--no-fund', '--ignore-scripts'], { cwd: harness, stdio: 'inherit' });
    writeFileSync(stamp, from);
  }
  return harness;
}

export const canPin = (() => {
  try {
    execFileSync('taskset', ['-c', '0', 'true']);
    return true;
  } catch {
    return false;
  }
})();

/** `[cmd, args]` run on CPU list `cpus` (e.g. "1" or "0-1") when taskset exists. taskset execs, so the pid stays the command's. */
export const pinned = (cpus, cmd, args) => (canPin && cpus != null ? ['taskset', ['-c', String(cpus), cmd, ...args]] : [cmd, args]);

const children = [];
/**
 * Spawns `cmd args` on `cpus`, output to `log` (a path; else ignored). The child gets
 * `.exited` (a promise of its exit) and `.stop()` (SIGTERM, SIGKILL after 5 s).
 */
export function start(cpus, cmd, args, { env = {}, log } = {}) {
  const [c, a] = pinned(cpus, cmd, args);
  const out = log ? openSync(log, 'w') : 'ignore';
  const child = spawn(c, a, { stdio: ['ignore', out, out], env: { ...process.env, ...env } });
  child.exited = new Promise((r) => child.once('exit', r));
  child.stop = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    await Promise.race([child.exited, sleep(5_000)]);
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  };
  children.push(child);
  return child;
}
/** Stops every child started here (in parallel). */
export const stopAll = () => Promise.all(children.map((c) => c.stop()));
process.on('exit', () => children.forEach((c) => c.exitCode === null && c.signalCode === null && c.kill('SIGTERM')));
process.on('SIGINT', () => process.exit(130));
// SIGTERM too: node does not run 'exit' handlers when a signal kills it, so the children would be left running.
process.on('SIGTERM', () => process.exit(143));

/**
 * The node flags of a build's own `npm start`: the tokens between `node` and the script in
 * package.json's `scripts.start` (e.g. "node --max-semi-space-size=64 dist/main.js" gives
 * ["--max-semi-space-size=64"]). [] when there is no start script or no node in it.
 */
export function startFlags(packageJsonPath) {
  const start = JSON.parse(readFileSync(packageJsonPath, 'utf8')).scripts?.start ?? '';
  const tokens = start.trim().split(/\s+/);
  const i = tokens.indexOf('node');
  if (i < 0) return [];
  const flags = [];
  for (const t of tokens.slice(i + 1)) {
    if (!t.startsWith('-')) break;
    flags.push(t);
  }
  return flags;
}

/** The checkout's git state: { rev (short sha of HEAD), src_dirty (uncommitted changes under src/) }. */
export function gitState(root) {
  const rev = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: root, encoding: 'utf8' }).trim();
  const dirty = execFileSync('git', ['status', '--porcelain', '--', 'src'], { cwd: root, encoding: 'utf8' }).trim() !== '';
  return { rev, src_dirty: dirty };
}

/**
 * The build under test at `root` (dist/ as built by `npm run bench:overhead`), or, with
 * `rev`, that commit built once into <work>/rev-<sha>. Returns { label, sha, dir, main, flags, git }.
 */
export function build(root, work, rev) {
  if (!rev) {
    const git = gitState(root);
    return { label: 'switchyard', sha: git.rev, dir: root, main: join(root, 'dist', 'main.js'), flags: startFlags(join(root, 'package.json')), git };
  }
  const sha = execFileSync('git', ['rev-parse', '--short', rev], { cwd: root, encoding: 'utf8' }).trim();
  const dir = join(work, `rev-${sha}`);
  if (!existsSync(join(dir, 'dist', 'main.js'))) {
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir, { recursive: true });
    execFileSync('sh', ['-c', `git -C "${root}" archive ${sha} | tar -x -C "${dir}"`], { stdio: 'inherit' });
    execFileSync('npm', ['ci', '--no-audit', '--no-fund', '--ignore-scripts'], { cwd: dir, stdio: 'inherit' });
    execFileSync('npm', ['run', 'build'], { cwd: dir, stdio: 'inherit' });
  }
  return {
    label: `switchyard@${sha}`,
    sha,
    dir,
    main: join(dir, 'dist', 'main.js'),
    flags: startFlags(join(dir, 'package.json')),
    git: { rev: sha, src_dirty: false },
  };
}

/**
 * Writes the bench config: one public model per harness scenario (the harness puts the
 * scenario in the model name and the gateway sends that name upstream), for `delays` and the
 * long-stream delay. `extra` is { redisUrl, workers } for Redis / multi-worker variants, and
 * `chunks` (default CHUNKS) the scenario's chunks per answer.
 * The upstream's max_concurrency is the account's size, set high so 1,000 streams are not queued.
 */
export function writeConfig(path, mockPort, delays, { redisUrl, workers, chunks = CHUNKS } = {}) {
  const names = [...new Set([...delays, LONG_STREAM_DELAY_MS])].map((d) => `gpt-mock-chunks${chunks}-delay${d}-ttft0-latency0`);
  const models = names.map((n) => `  - name: ${n}\n    price: { input: 1, output: 2 }\n    targets: [{ upstream: mock, model: ${n} }]`).join('\n');
  const store = redisUrl ? `store:\n  redis_url: ${redisUrl}\n` : '';
  const server = `server:\n  log_level: info\n${workers ? `  workers: ${workers}\n` : ''}`;
  const hash = createHash('sha256').update(BENCH_KEY).digest('hex');
  writeFileSync(
    path,
    `${store}${server}upstreams:\n  - id: mock\n    provider: openai-compatible\n    base_url: http://127.0.0.1:${mockPort}/v1\n    api_key: bench-upstream-key\n    max_concurrency: 2048\nmodels:\n${models}\nkeys:\n  - name: bench\n    key_sha256: ${hash}\n`,
  );
  return path;
}

/** Whether `main` (a build's dist/main.js) accepts the config at `path` (check-config exits 0). */
export function acceptsConfig(main, path) {
  try {
    execFileSync(process.execPath, [main, 'check-config', '--config', path], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/**
 * Runs the harness's run.mjs on CPU 0 with `args`, its JSON report to `out`; returns the
 * parsed report. The progress table goes to our stderr. Throws when the harness fails.
 */
export function runHarness(harness, args, out) {
  const [c, a] = pinned(0, process.execPath, [join(harness, 'run.mjs'), ...args, '--out', out]);
  execFileSync(c, a, { stdio: ['ignore', 'ignore', 'inherit'] });
  return JSON.parse(readFileSync(out, 'utf8'));
}

/** runHarness, without blocking this process (so it can watch the target meanwhile); rejects when the harness fails. */
export function runHarnessAsync(harness, args, out) {
  const [c, a] = pinned(0, process.execPath, [join(harness, 'run.mjs'), ...args, '--out', out]);
  return new Promise((resolveRun, reject) => {
    const child = spawn(c, a, { stdio: ['ignore', 'ignore', 'inherit'] });
    child.on('error', reject);
    child.on('exit', (code) => (code === 0 ? resolveRun(JSON.parse(readFileSync(out, 'utf8'))) : reject(new Error(`harness exited ${code}`))));
  });
}
