/**
 * Deployment files (Dockerfile, .dockerignore, docker-compose.yml, docker/**), checked
 * without a Docker engine or a Kubernetes API server:
 * - the Dockerfile's stages, COPY sources (present and not excluded by .dockerignore), user,
 *   health check, ports, signal and entry point; the runtime stage's file layout is rebuilt
 *   in a temp dir from the compiled sources and started with the image's ENTRYPOINT, cwd and
 *   env, and the image's HEALTHCHECK command is run against it;
 * - docker-compose.yml's services, bind mounts, env, health checks and stop grace period;
 * - Prometheus scrape targets (and `promtool check config` when promtool is installed);
 * - Grafana provisioning and the dashboard: every PromQL metric name exists in a real
 *   gateway's /metrics, every label it groups or filters by exists on those metrics, and
 *   (with promtool) every expression parses;
 * - the switchyard configs (compose and the k8s ConfigMap) pass the gateway's own validation;
 * - the Kubernetes manifests' probes, ports, security context, secrets, annotations and the
 *   shutdown arithmetic (grace period > preStop + drain), and kubectl's parse.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, posix } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { parse as parseYaml, parseAllDocuments } from 'yaml';
import { parseTestConfig } from '../helpers/config.js';
import type { FakeUpstream } from '../helpers/fake-upstream.js';
import { fixtureJson } from '../helpers/recordings.js';
import { startWithUpstream, waitFor, type TestGateway } from '../helpers/gateway.js';

const here = dirname(fileURLToPath(import.meta.url));
/** The repository root, from the compiled `.test-build/test/integration`. */
const ROOT = join(here, '..', '..', '..');
const read = (rel: string): string => readFileSync(join(ROOT, rel), 'utf8');

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
function obj(v: unknown, what: string): Obj {
  assert.ok(isObj(v), `${what} is a mapping`);
  return v;
}
function arr(v: unknown, what: string): unknown[] {
  assert.ok(Array.isArray(v), `${what} is a list`);
  return v;
}
/** Which of the given commands are on PATH. */
function have(cmd: string): boolean {
  return spawnSync(cmd, ['--version'], { stdio: 'ignore' }).error === undefined;
}

// ---------------------------------------------------------------------------------------
// Dockerfile

interface Instruction {
  op: string;
  args: string;
  line: number;
}
interface Stage {
  name: string;
  base: string;
  body: Instruction[];
}

/** Instructions with line continuations joined and comments dropped. */
function dockerInstructions(text: string): Instruction[] {
  const out: Instruction[] = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const start = i;
    let cur = lines[i]!;
    if (/^\s*(#|$)/.test(cur)) continue;
    while (/\\\s*$/.test(cur) && i + 1 < lines.length) {
      i++;
      const next = lines[i]!;
      if (/^\s*#/.test(next)) continue;
      cur = cur.replace(/\\\s*$/, ' ') + next.trim();
    }
    const m = /^\s*([A-Za-z]+)\s+(.*)$/.exec(cur);
    assert.ok(m, `Dockerfile line ${start + 1} is an instruction: ${cur}`);
    out.push({ op: m[1]!.toUpperCase(), args: m[2]!.trim(), line: start + 1 });
  }
  return out;
}

function dockerStages(ins: Instruction[]): { args: Map<string, string>; stages: Stage[] } {
  const args = new Map<string, string>();
  const stages: Stage[] = [];
  for (const i of ins) {
    if (i.op === 'ARG' && stages.length === 0) {
      const [k, v] = i.args.split('=', 2);
      args.set(k!.trim(), (v ?? '').trim());
    } else if (i.op === 'FROM') {
      const m = /^(\S+)\s+AS\s+(\S+)$/i.exec(i.args);
      assert.ok(m, `FROM at line ${i.line} names its stage (FROM <image> AS <name>)`);
      const base = m[1]!.replace(/\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?/g, (_s, n: string) => args.get(n) ?? '');
      stages.push({ name: m[2]!, base, body: [] });
    } else {
      assert.ok(stages.length > 0, `${i.op} at line ${i.line} comes after a FROM`);
      stages.at(-1)!.body.push(i);
    }
  }
  return { args, stages };
}

/** COPY's flags and paths (shell form; JSON form too). */
function copyArgs(i: Instruction): { from?: string; sources: string[]; dest: string } {
  const parts = i.args.startsWith('[') ? (JSON.parse(i.args) as string[]) : i.args.split(/\s+/);
  const flags = parts.filter((p) => p.startsWith('--'));
  const paths = parts.filter((p) => !p.startsWith('--'));
  const from = flags.find((f) => f.startsWith('--from='))?.slice('--from='.length);
  assert.ok(paths.length >= 2, `COPY at line ${i.line} has a source and a destination`);
  return { ...(from ? { from } : {}), sources: paths.slice(0, -1), dest: paths.at(-1)! };
}

/** .dockerignore as (pattern regex, negated) pairs; the last match decides. */
function dockerignore(text: string): { re: RegExp; negate: boolean; pattern: string }[] {
  return text
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('#'))
    .map((raw) => {
      const negate = raw.startsWith('!');
      const pattern = posix.normalize((negate ? raw.slice(1) : raw).replace(/^\/+/, '')).replace(/\/+$/, '');
      let re = '';
      for (let k = 0; k < pattern.length; k++) {
        const c = pattern[k]!;
        if (c === '*' && pattern[k + 1] === '*') {
          re += '.*';
          k++;
          if (pattern[k + 1] === '/') {
            re = re.slice(0, -2) + '(?:.*/)?';
            k++;
          }
        } else if (c === '*') re += '[^/]*';
        else if (c === '?') re += '[^/]';
        else re += c.replace(/[.+^${}()|[\]\\]/g, '\\$&');
      }
      return { re: new RegExp(`^${re}$`), negate, pattern: raw };
    });
}

/** Whether `rel` (or a parent folder of it) is excluded from the build context. */
function ignored(rules: ReturnType<typeof dockerignore>, rel: string): string | null {
  const parts = posix.normalize(rel).replace(/\/+$/, '').split('/');
  let hit: string | null = null;
  for (let n = 1; n <= parts.length; n++) {
    const prefix = parts.slice(0, n).join('/');
    for (const r of rules) if (r.re.test(prefix)) hit = r.negate ? null : r.pattern;
    if (hit) return hit;
  }
  return hit;
}

describe('Dockerfile', () => {
  const text = read('Dockerfile');
  const ins = dockerInstructions(text);
  const { stages } = dockerStages(ins);
  const build = stages.find((s) => s.name === 'build');
  const runtime = stages.find((s) => s.name === 'runtime');
  const pkg = JSON.parse(read('package.json')) as { files: string[]; engines: { node: string }; bin: Record<string, string>; scripts: Record<string, string> };
  const ops = (s: Stage | undefined, op: string) => (s?.body ?? []).filter((i) => i.op === op);

  test('has a build stage and a final runtime stage on one pinned Node LTS slim image', () => {
    assert.deepEqual(
      stages.map((s) => s.name),
      ['build', 'runtime'],
    );
    for (const s of stages) {
      const m = /^node:(\d+)-slim(@sha256:[0-9a-f]{64})?$/.exec(s.base);
      assert.ok(m, `stage ${s.name} is FROM node:<major>-slim, got ${s.base}`);
      const major = Number(m[1]);
      assert.equal(major % 2, 0, 'an even (LTS) Node major');
      const min = Number(/>=\s*(\d+)/.exec(pkg.engines.node)?.[1]);
      assert.ok(major >= 22 && major >= min, `Node ${major} is supported (engines ${pkg.engines.node}; 20 is end-of-life)`);
    }
    assert.equal(build!.base, runtime!.base, 'build and runtime use the same Node');
  });

  test('build stage installs dev dependencies and compiles; runtime installs production dependencies only', () => {
    const buildRuns = ops(build, 'RUN').map((i) => i.args);
    assert.ok(
      buildRuns.some((r) => /\bnpm ci\b/.test(r) && !/--omit=dev|--production/.test(r)),
      'build: npm ci with dev dependencies',
    );
    assert.ok(
      buildRuns.some((r) => /\bnpm run build\b/.test(r)),
      'build: npm run build',
    );
    const runRuns = ops(runtime, 'RUN').map((i) => i.args);
    assert.ok(
      runRuns.some((r) => /\bnpm ci\b/.test(r) && /--omit=dev/.test(r) && /--ignore-scripts/.test(r)),
      'runtime: npm ci --omit=dev --ignore-scripts',
    );
    assert.ok(!runRuns.some((r) => /npm run build|\btsc\b/.test(r)), 'runtime does not compile');
  });

  test('every COPY source exists in the repo and is in the build context, or comes from the build stage', () => {
    const rules = dockerignore(read('.dockerignore'));
    const buildWorkdir = ops(build, 'WORKDIR').at(-1)?.args;
    assert.ok(buildWorkdir, 'build stage sets WORKDIR');
    for (const s of stages) {
      for (const i of ops(s, 'COPY').concat(ops(s, 'ADD'))) {
        assert.equal(i.op, 'COPY', `line ${i.line}: COPY, not ADD`);
        const c = copyArgs(i);
        for (const src of c.sources) {
          if (c.from) {
            assert.equal(c.from, 'build', `line ${i.line}: copies from the build stage`);
            // Produced by `npm run build`: tsconfig.json's outDir, under the build WORKDIR.
            const outDir = (JSON.parse(read('tsconfig.json')) as { compilerOptions: { outDir: string } }).compilerOptions.outDir;
            assert.equal(src, posix.join(buildWorkdir, outDir), `line ${i.line}: ${src} is the compiled output`);
          } else {
            assert.ok(existsSync(join(ROOT, src)), `line ${i.line}: COPY source ${src} exists`);
            assert.equal(ignored(rules, src), null, `line ${i.line}: ${src} is excluded by .dockerignore`);
          }
        }
      }
    }
  });

  test('.dockerignore keeps local build output, dependencies and git out of the context', () => {
    const rules = dockerignore(read('.dockerignore'));
    for (const p of ['node_modules', 'src/node_modules', '.test-build', 'dist', '.git', 'test', '.env']) {
      assert.ok(ignored(rules, p), `${p} is excluded`);
    }
  });

  test('runtime stage ships package.json, dist, config and the runtime data that package.json "files" lists', () => {
    const copied = new Set(ops(runtime, 'COPY').flatMap((i) => copyArgs(i).sources.map((s) => (copyArgs(i).from ? posix.relative(ops(build, 'WORKDIR').at(-1)!.args, s) : s))));
    // package.json marks the package root that src/util/package-root.ts looks for.
    assert.ok(copied.has('package.json'), 'package.json');
    assert.ok(copied.has('package-lock.json'), 'package-lock.json (npm ci)');
    for (const f of pkg.files.filter((f) => f !== 'README.md' && f !== 'docs')) assert.ok(copied.has(f), `${f} (package.json files)`);
    // The simulator reads its recordings from <package root>/src/providers/simulator/recordings.
    assert.match(read('src/providers/simulator/recordings.ts'), /join\(packageRoot\(\), 'src', 'providers', 'simulator', 'recordings'\)/);
    assert.ok(copied.has('src/providers/simulator/recordings'));
  });

  test('runtime stage: non-root USER, HOST/PORT env, ports, HEALTHCHECK on /healthz, SIGTERM, node dist/main.js', () => {
    const user = ops(runtime, 'USER').at(-1)?.args;
    assert.ok(user, 'runtime sets USER');
    assert.ok(!/^(root|0)(:|$)/.test(user), `USER ${user} is not root`);
    const env = ops(runtime, 'ENV')
      .map((i) => i.args)
      .join(' ');
    assert.match(env, /\bHOST=0\.0\.0\.0\b/);
    assert.match(env, /\bPORT=8080\b/);
    const exposed = ops(runtime, 'EXPOSE').flatMap((i) => i.args.split(/\s+/));
    assert.ok(exposed.includes('8080') && exposed.includes('9901'), `EXPOSE 8080 9901, got ${exposed.join(' ')}`);
    const hc = ops(runtime, 'HEALTHCHECK').at(-1)?.args;
    assert.ok(hc, 'HEALTHCHECK');
    assert.match(hc, /CMD\s+\[/, 'HEALTHCHECK CMD in exec form');
    assert.match(hc, /\/healthz/);
    assert.ok(!/\bcurl\b|\bwget\b/.test(hc), 'no curl/wget in a slim image');
    assert.equal(ops(runtime, 'STOPSIGNAL').at(-1)?.args, 'SIGTERM');
    const entry = ops(runtime, 'ENTRYPOINT').at(-1)?.args;
    assert.ok(entry, 'ENTRYPOINT');
    const argv = JSON.parse(entry) as string[];
    assert.equal(argv[0], 'node', 'exec form, node as PID 1');
    assert.equal(argv.at(-1), 'dist/main.js');
    // The heap flags are the same as `npm start`'s (package.json), so the image and a plain start behave alike.
    // `exec`: npm's SIGTERM goes to the shell it runs the script in; exec makes that shell node.
    const start = /^exec\s+node\s+(.*)\s+dist\/main\.js$/.exec(pkg.scripts['start'] ?? '');
    assert.ok(start, `npm start is "exec node <flags> dist/main.js", got ${pkg.scripts['start']}`);
    assert.deepEqual(argv.slice(1, -1), start[1]!.split(/\s+/), 'the ENTRYPOINT passes npm start\'s node flags');
    assert.equal(ops(runtime, 'WORKDIR').at(-1)?.args, '/app');
  });

  test('the ENTRYPOINT file is what `npm run build` makes of src/main.ts', () => {
    const ts = JSON.parse(read('tsconfig.json')) as { compilerOptions: { rootDir: string; outDir: string }; include: string[] };
    assert.equal(ts.compilerOptions.rootDir, 'src');
    assert.equal(ts.compilerOptions.outDir, 'dist');
    assert.ok(ts.include.includes('src'));
    assert.ok(existsSync(join(ROOT, 'src', 'main.ts')), 'src/main.ts -> dist/main.js');
    assert.ok(existsSync(join(ROOT, '.test-build', 'src', 'main.js')), 'and it compiles (the test build of the same file)');
    assert.equal(pkg.bin['switchyard'], 'dist/main.js');
  });
});

// ---------------------------------------------------------------------------------------
// The runtime image's layout, without Docker: package.json + package-lock.json, the
// compiled JS as dist/, config/ and the recordings, started like the ENTRYPOINT does.

async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as { port: number }).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

describe('runtime layout (the runtime stage rebuilt in a temp dir)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'switchyard-image-'));
  let child: ChildProcess | undefined;
  let port = 0;
  let stderr = '';
  let stdout = '';
  const { stages } = dockerStages(dockerInstructions(read('Dockerfile')));
  const runtime = stages.find((s) => s.name === 'runtime')!;
  const healthcheck = JSON.parse(/CMD\s+(\[.*\])$/.exec(runtime.body.find((i) => i.op === 'HEALTHCHECK')!.args)![1]!) as string[];
  const runHealthcheck = (p: number) => spawnSync(process.execPath, healthcheck.slice(1), { env: { ...process.env, PORT: String(p) }, timeout: 10_000 }).status;

  before(async () => {
    // Same files as the runtime stage's COPY lines; the compiled JS comes from the test build
    // of src/ (tsc with the same options; rootDir differs only), dependencies from the repo.
    for (const i of runtime.body.filter((x) => x.op === 'COPY')) {
      const c = copyArgs(i);
      for (const src of c.sources) {
        if (c.from) cpSync(join(ROOT, '.test-build', 'src'), join(dir, 'dist'), { recursive: true });
        else cpSync(join(ROOT, src), join(dir, c.dest.endsWith('/') || c.dest === './' ? src : c.dest.replace(/^\.\//, '')), { recursive: true });
      }
    }
    symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'), 'dir');
    port = await freePort();
    const env: NodeJS.ProcessEnv = { PATH: process.env['PATH'], HOME: dir, HOST: '127.0.0.1', PORT: String(port) };
    const entry = JSON.parse(runtime.body.find((i) => i.op === 'ENTRYPOINT')!.args) as string[];
    child = spawn(process.execPath, entry.slice(1), { cwd: dir, env, stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    await waitFor(() => /switchyard listening on/.test(stdout) || child!.exitCode !== null, 15_000, 'gateway start');
    assert.match(stdout, /switchyard listening on/, `started (stderr: ${stderr})`);
  });
  after(async () => {
    if (child && child.exitCode === null) {
      child.kill('SIGKILL');
      await new Promise((r) => child!.once('exit', r));
    }
    rmSync(dir, { recursive: true, force: true });
  });

  test('the layout has the files the Dockerfile copies', () => {
    for (const f of ['package.json', 'package-lock.json', 'dist/main.js', 'config/switchyard.yaml', 'src/providers/simulator/recordings']) {
      assert.ok(existsSync(join(dir, f)), f);
    }
  });

  test('the HEALTHCHECK command passes against it and fails on a closed port', async () => {
    assert.equal(runHealthcheck(port), 0);
    assert.equal(runHealthcheck(await freePort()), 1);
  });

  test('serves a chat completion from the simulator recordings with the default config and no keys', async () => {
    const res = await fetch(`http://127.0.0.1:${port}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: 'Bearer sk-switchyard-demo', 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'deepseek-v3.2', messages: [{ role: 'user', content: 'hi' }] }),
    });
    assert.equal(res.status, 200, await res.clone().text());
    const body = (await res.json()) as { choices: { message: { content: string } }[] };
    assert.ok(body.choices[0]!.message.content.length > 0);
    assert.match(stdout, new RegExp(`"config":"${join(dir, 'config', 'switchyard.yaml').replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}"`), 'the default config is read from WORKDIR/config');
  });

  test('exits 0 on SIGTERM (the STOPSIGNAL)', async () => {
    const exited = new Promise<number | null>((r) => child!.once('exit', (code) => r(code)));
    child!.kill('SIGTERM');
    assert.equal(await exited, 0, stderr);
  });
});

// ---------------------------------------------------------------------------------------
// docker-compose.yml

interface Mount {
  source: string;
  target: string;
  readOnly: boolean;
}

function composeMounts(svc: Obj): Mount[] {
  return ((svc['volumes'] as unknown[] | undefined) ?? []).flatMap((v): Mount[] => {
    if (typeof v === 'string') {
      const [source, target, mode] = v.split(':');
      return source && target && /^[./]/.test(source) ? [{ source, target, readOnly: mode === 'ro' }] : [];
    }
    const m = obj(v, 'volume');
    return m['type'] === 'bind' ? [{ source: String(m['source']), target: String(m['target']), readOnly: m['read_only'] === true }] : [];
  });
}

function seconds(d: unknown): number {
  const m = /^(?:(\d+)m)?(?:(\d+(?:\.\d+)?)s)?$/.exec(String(d));
  assert.ok(m && (m[1] || m[2]), `duration ${String(d)}`);
  return Number(m[1] ?? 0) * 60 + Number(m[2] ?? 0);
}

/** Variables a switchyard config reads in `api_key: ${VAR}`. */
function apiKeyVars(yamlText: string): string[] {
  return [...yamlText.matchAll(/api_key:\s*\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g)].map((m) => m[1]!);
}

/** `server.drain_ms` of a switchyard config (the schema default when absent). */
function drainMs(yamlText: string): number {
  const server = (parseYaml(yamlText) as { server?: { drain_ms?: number } }).server;
  return server?.drain_ms ?? 25_000;
}

/**
 * The gateway's hard shutdown limit past the drain: src/main.ts gives close-with-grace
 * `drain_ms + SHUTDOWN_MARGIN_MS` (closing pools and Redis) before it exits 1.
 */
function shutdownMarginMs(): number {
  const main = read('src/main.ts');
  assert.match(main, /closeWithGrace\(\{ delay: drainMs \+ SHUTDOWN_MARGIN_MS/, 'main.ts: close-with-grace delay is drain_ms + SHUTDOWN_MARGIN_MS');
  const m = /const SHUTDOWN_MARGIN_MS = ([\d_]+);/.exec(main);
  assert.ok(m, 'main.ts defines SHUTDOWN_MARGIN_MS');
  return Number(m[1]!.replace(/_/g, ''));
}

const compose = obj(parseYaml(read('docker-compose.yml'), { merge: true }), 'docker-compose.yml');
const services = obj(compose['services'], 'services');
const SWITCHYARDS = ['switchyard-1', 'switchyard-2'];

describe('docker-compose.yml', () => {
  test('has two switchyard replicas, redis, postgres, prometheus and grafana', () => {
    assert.deepEqual(Object.keys(services).sort(), ['grafana', 'postgres', 'prometheus', 'redis', ...SWITCHYARDS].sort());
    assert.match(String(obj(services['postgres'], 'postgres')['image']), /^postgres:\d+/);
    assert.equal(obj(services['redis'], 'redis')['image'], 'redis:7-alpine');
    assert.match(String(obj(services['prometheus'], 'prometheus')['image']), /^prom\/prometheus:/);
    assert.match(String(obj(services['grafana'], 'grafana')['image']), /^grafana\/grafana:/);
  });

  test('every bind-mounted host path exists', () => {
    for (const [name, svc] of Object.entries(services)) {
      for (const m of composeMounts(obj(svc, name))) assert.ok(existsSync(join(ROOT, m.source)), `${name}: ${m.source} exists`);
    }
  });

  test('each switchyard replica: built from the Dockerfile, one read-only config, Redis, provider keys from the host, health check, drain fits the stop grace period', () => {
    const configText = read('docker/switchyard.yaml');
    const spoolVolumes = new Set<string>();
    for (const name of SWITCHYARDS) {
      const svc = obj(services[name], name);
      const build = obj(svc['build'], `${name}.build`);
      assert.equal(build['context'], '.');
      assert.ok(existsSync(join(ROOT, String(build['dockerfile'] ?? 'Dockerfile'))));
      const env = obj(svc['environment'], `${name}.environment`);
      assert.equal(env['REDIS_URL'], 'redis://redis:6379');
      assert.equal(env['HOST'], '0.0.0.0');
      const mounts = composeMounts(svc);
      const cfg = mounts.find((m) => m.target === env['SWITCHYARD_CONFIG']);
      assert.ok(cfg, `${name}: SWITCHYARD_CONFIG is a mounted file`);
      assert.equal(posix.normalize(cfg.source), 'docker/switchyard.yaml');
      assert.ok(cfg.readOnly, 'mounted read-only');
      for (const v of apiKeyVars(configText)) assert.equal(env[v], `\${${v}:-}`, `${name}: ${v} passed from the host, empty when unset`);
      assert.deepEqual(obj(svc['depends_on'], 'depends_on')['redis'], { condition: 'service_healthy' });
      assert.deepEqual(obj(svc['depends_on'], 'depends_on')['postgres'], { condition: 'service_healthy' });
      // The ledger: DATABASE_URL names the postgres service with its user, password and database.
      const pgEnv = obj(obj(services['postgres'], 'postgres')['environment'], 'postgres.environment');
      const db = new URL(String(env['DATABASE_URL']).replace('${POSTGRES_PASSWORD:-switchyard}', 'pw'));
      assert.equal(db.hostname, 'postgres');
      assert.equal(db.username, pgEnv['POSTGRES_USER']);
      assert.equal(db.pathname, `/${String(pgEnv['POSTGRES_DB'])}`);
      assert.equal(String(env['DATABASE_URL']).includes(String(pgEnv['POSTGRES_PASSWORD'])), true, 'the same password variable');
      // Its spool sits on a named volume of the replica's own (the root filesystem is read-only).
      const spool = (parseYaml(configText) as { ledger: { spool_path: string } }).ledger.spool_path;
      const vols = ((svc['volumes'] as unknown[]) ?? []).filter((v): v is string => typeof v === 'string' && !/^[./]/.test(v));
      const named = vols.map((v) => v.split(':')).find(([, target]) => spool.startsWith(`${target}/`));
      assert.ok(named && obj(compose['volumes'], 'volumes')[named[0]!] !== undefined, `${name}: a named volume holds ${spool}`);
      spoolVolumes.add(named![0]!);
      const hc = obj(svc['healthcheck'], 'healthcheck');
      assert.match(JSON.stringify(hc['test']), /\/healthz/);
      assert.ok(!/\bcurl\b|\bwget\b/.test(JSON.stringify(hc['test'])));
      const ports = arr(svc['ports'], 'ports').map(String);
      assert.ok(
        ports.every((p) => p.startsWith('127.0.0.1:') && p.endsWith(':8080')),
        `${name}: host ports on loopback only (the demo key is public): ${ports.join(', ')}`,
      );
      const worst = (drainMs(configText) + shutdownMarginMs()) / 1000;
      assert.ok(seconds(svc['stop_grace_period']) > worst, `${name}: stop_grace_period > server.drain_ms + shutdown margin (${worst} s)`);
    }
    assert.equal(spoolVolumes.size, SWITCHYARDS.length, 'one spool volume per replica');
    assert.match(read('Dockerfile'), /mkdir -p \/var\/lib\/switchyard && chown node:node \/var\/lib\/switchyard/);
    // Both replicas share state: the config says so.
    assert.equal((parseYaml(configText) as { store: { replicas: number } }).store.replicas, SWITCHYARDS.length);
  });

  test('redis has a redis-cli ping health check', () => {
    const hc = obj(obj(services['redis'], 'redis')['healthcheck'], 'healthcheck');
    assert.deepEqual(hc['test'], ['CMD', 'redis-cli', 'ping']);
  });

  test('docker/switchyard.yaml passes the gateway config validation (no keys, and with keys)', () => {
    const text = read('docker/switchyard.yaml');
    const noKeys = parseTestConfig(text, {}, 'docker/switchyard.yaml');
    assert.ok(noKeys.models.size > 0, 'models served by the simulator');
    assert.equal(noKeys.store.replicas, 2);
    const keys = Object.fromEntries(apiKeyVars(text).map((v) => [v, 'sk-test']));
    const live = parseTestConfig(text, { ...keys, REDIS_URL: 'redis://redis:6379' }, 'docker/switchyard.yaml');
    assert.equal(live.store.redis_url, 'redis://redis:6379');
    assert.ok(live.upstreamStatus.some((u) => u.mode === 'live'));
  });
});

// ---------------------------------------------------------------------------------------
// Prometheus and Grafana

describe('prometheus.yml', () => {
  const prom = obj(parseYaml(read('docker/prometheus/prometheus.yml')), 'prometheus.yml');

  test('scrapes /metrics of both switchyard replicas on their container port', () => {
    const job = arr(prom['scrape_configs'], 'scrape_configs')
      .map((j) => obj(j, 'job'))
      .find((j) => j['job_name'] === 'switchyard');
    assert.ok(job, 'a switchyard job');
    assert.equal(job['metrics_path'] ?? '/metrics', '/metrics');
    const targets = arr(job['static_configs'], 'static_configs').flatMap((s) => arr(obj(s, 'static_config')['targets'], 'targets'));
    const expected = SWITCHYARDS.map((name) => `${name}:${String(obj(obj(services[name], name)['environment'], 'env')['PORT'] ?? 8080)}`);
    assert.deepEqual([...targets].sort(), expected.sort());
  });

  test('the compose service mounts it where --config.file points', () => {
    const svc = obj(services['prometheus'], 'prometheus');
    const file = arr(svc['command'], 'command')
      .map(String)
      .find((c) => c.startsWith('--config.file='))
      ?.slice('--config.file='.length);
    assert.ok(file);
    const m = composeMounts(svc).find((x) => x.target === file);
    assert.equal(m?.source && posix.normalize(m.source), 'docker/prometheus/prometheus.yml');
  });

  test('promtool check config', (t) => {
    if (!have('promtool')) {
      t.skip('promtool is not installed');
      return;
    }
    const r = spawnSync('promtool', ['check', 'config', join(ROOT, 'docker/prometheus/prometheus.yml')], { encoding: 'utf8' });
    assert.equal(r.status, 0, r.stdout + r.stderr);
  });
});

interface Panel {
  id?: number;
  type: string;
  title: string;
  datasource?: { type: string; uid: string };
  targets?: { expr: string; refId: string; datasource?: { uid: string } }[];
  panels?: Panel[];
}

const dashboard = JSON.parse(read('docker/grafana/dashboards/switchyard.json')) as { uid: string; title: string; panels: Panel[] };
const allPanels = dashboard.panels.flatMap((p) => [p, ...(p.panels ?? [])]);
const queries = allPanels.flatMap((p) => (p.targets ?? []).map((t) => ({ panel: p.title, ...t })));

const KEYWORDS = new Set(['by', 'without', 'on', 'ignoring', 'group_left', 'group_right', 'bool', 'and', 'or', 'unless', 'offset', 'inf', 'nan', 'atan2']);
/** Labels Prometheus adds to every scraped series (target labels of prometheus.yml). */
const TARGET_LABELS = new Set(['instance', 'job', 'deployment']);
/** Non-gateway series a panel may use. */
const PROMETHEUS_SERIES: Record<string, string[]> = { up: [] };

/** Metric names a PromQL expression selects. */
function promqlMetrics(expr: string): string[] {
  const e = expr
    .replace(/"(?:[^"\\]|\\.)*"/g, '""')
    .replace(/\{[^}]*\}/g, ' ')
    .replace(/\[[^\]]*\]/g, ' ')
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' ');
  const out: string[] = [];
  for (const m of e.matchAll(/[a-zA-Z_:][a-zA-Z0-9_:]*/g)) {
    const before = e[m.index - 1];
    if (before && /[0-9.]/.test(before)) continue; // exponent of a number
    if (e.slice(m.index + m[0].length).trimStart().startsWith('(')) continue; // function / aggregation
    if (KEYWORDS.has(m[0].toLowerCase())) continue;
    out.push(m[0]);
  }
  return out;
}

/** Label names an expression groups by or matches on. */
function promqlLabels(expr: string): string[] {
  const e = expr.replace(/"(?:[^"\\]|\\.)*"/g, '""');
  const out: string[] = [];
  for (const m of e.matchAll(/\b(?:by|without|on|ignoring)\s*\(([^)]*)\)/g)) out.push(...m[1]!.split(',').map((s) => s.trim()).filter(Boolean));
  for (const m of e.matchAll(/\{([^}]*)\}/g)) for (const l of m[1]!.matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=~|!~|!=|=)/g)) out.push(l[1]!);
  return out;
}

describe('Grafana provisioning and dashboard', () => {
  let upstream: FakeUpstream;
  let gw: TestGateway;
  /** Metric family name -> type, from a real gateway's /metrics. */
  const families = new Map<string, string>();

  before(async () => {
    ({ upstream, gw } = await startWithUpstream());
    upstream.on(() => ({ status: 200, body: fixtureJson('openai-chat-gpt5.json') }));
    await gw.client().chat.completions.create({ model: 'gpt-test', messages: [{ role: 'user', content: 'hi' }] });
    await waitFor(() => gw.finished().length === 1, 2000, 'request finished');
    const text = await gw.metricsText();
    for (const m of text.matchAll(/^# TYPE (\S+) (\S+)$/gm)) families.set(m[1]!, m[2]!);
  });
  after(async () => {
    await gw?.close();
    await upstream?.close();
  });

  const datasources = obj(parseYaml(read('docker/grafana/provisioning/datasources/prometheus.yml')), 'datasources file');
  const providers = obj(parseYaml(read('docker/grafana/provisioning/dashboards/switchyard.yml')), 'dashboards file');
  const grafana = obj(services['grafana'], 'grafana');

  test('the datasource is the compose Prometheus, with a fixed uid', () => {
    assert.equal(datasources['apiVersion'], 1);
    const ds = arr(datasources['datasources'], 'datasources').map((d) => obj(d, 'datasource'));
    assert.equal(ds.length, 1);
    assert.equal(ds[0]!['type'], 'prometheus');
    const url = new URL(String(ds[0]!['url']));
    assert.ok(url.hostname in services, `${url.hostname} is a compose service`);
    assert.equal(url.hostname, 'prometheus');
    assert.equal(url.port, '9090');
    assert.ok(ds[0]!['uid'], 'a fixed uid the dashboard refers to');
  });

  test('grafana mounts the provisioning folder and the dashboards folder the provider reads', () => {
    assert.equal(providers['apiVersion'], 1);
    const p = arr(providers['providers'], 'providers').map((x) => obj(x, 'provider'));
    assert.equal(p[0]!['type'], 'file');
    const path = obj(p[0]!['options'], 'options')['path'];
    const mounts = composeMounts(grafana);
    const dash = mounts.find((m) => m.target === path);
    assert.ok(dash, `provider path ${String(path)} is mounted`);
    assert.equal(posix.normalize(dash.source), 'docker/grafana/dashboards');
    assert.ok(existsSync(join(ROOT, dash.source, 'switchyard.json')));
    const prov = mounts.find((m) => m.target === '/etc/grafana/provisioning');
    assert.ok(prov, 'provisioning mounted at /etc/grafana/provisioning');
    for (const sub of ['datasources', 'dashboards']) assert.ok(statSync(join(ROOT, prov.source, sub)).isDirectory(), sub);
    for (const sub of ['datasources', 'dashboards']) {
      for (const f of readdirSync(join(ROOT, prov.source, sub))) assert.ok(isObj(parseYaml(readFileSync(join(ROOT, prov.source, sub, f), 'utf8'))), `${sub}/${f} parses`);
    }
  });

  test('every panel uses the provisioned datasource; ids are unique', () => {
    const uid = obj(arr(datasources['datasources'], 'datasources')[0], 'datasource')['uid'];
    assert.equal(dashboard.uid, 'switchyard');
    const ids = allPanels.map((p) => p.id);
    assert.equal(new Set(ids).size, ids.length, 'unique panel ids');
    for (const p of allPanels.filter((x) => x.type !== 'row')) {
      assert.equal(p.datasource?.uid, uid, `${p.title}: datasource`);
      assert.ok((p.targets ?? []).length > 0, `${p.title}: has queries`);
      for (const t of p.targets ?? []) if (t.datasource) assert.equal(t.datasource.uid, uid, `${p.title} ${t.refId}: datasource`);
    }
  });

  test('covers requests, errors, latency, TTFT, windows, sheds, retries, fallbacks, spend and the store mode', () => {
    const used = new Set(queries.flatMap((q) => promqlMetrics(q.expr)));
    for (const m of [
      'switchyard_requests_total',
      'switchyard_upstream_errors_total',
      'switchyard_request_duration_seconds_bucket',
      'switchyard_time_to_first_token_seconds_bucket',
      'switchyard_deep_in_flight',
      'switchyard_sheds_total',
      'switchyard_retries_total',
      'switchyard_fallbacks_total',
      'switchyard_spend_usd_total',
      'switchyard_store_mode',
    ]) {
      assert.ok(used.has(m), m);
    }
    for (const q of queries.filter((x) => /_bucket\b/.test(x.expr))) {
      assert.match(q.expr, /histogram_quantile\(\s*0?\.\d+\s*,\s*sum by \((le\b[^)]*|[^)]*\ble)\)/, `${q.panel}: histogram_quantile over sum by (le, ...)`);
    }
  });

  test("every metric a query selects is in the gateway's real /metrics output", () => {
    assert.ok(families.has('switchyard_requests_total'), 'the scrape worked');
    for (const q of queries) {
      const names = promqlMetrics(q.expr);
      assert.ok(names.length > 0, `${q.panel}: selects a metric: ${q.expr}`);
      for (const n of names) {
        if (n in PROMETHEUS_SERIES) continue;
        const base = n.replace(/_(bucket|sum|count)$/, '');
        const ok =
          families.has(n) ||
          (n.endsWith('_bucket') && families.get(base) === 'histogram') ||
          (/_(sum|count)$/.test(n) && ['histogram', 'summary'].includes(families.get(base) ?? ''));
        assert.ok(ok, `${q.panel}: ${n} is not exported by the gateway (${q.expr})`);
      }
    }
  });

  test('every label a query groups by or matches on exists on the metrics it selects', () => {
    for (const q of queries) {
      const allowed = new Set(TARGET_LABELS);
      for (const n of promqlMetrics(q.expr)) {
        if (n in PROMETHEUS_SERIES) {
          for (const l of PROMETHEUS_SERIES[n]!) allowed.add(l);
          continue;
        }
        const base = families.has(n) ? n : n.replace(/_(bucket|sum|count)$/, '');
        if (n.endsWith('_bucket')) allowed.add('le');
        const metric = gw.metrics.registry.getSingleMetric(base) as unknown as { labelNames?: readonly string[] } | undefined;
        assert.ok(metric, `${base} is registered`);
        for (const l of metric.labelNames ?? []) allowed.add(l);
      }
      for (const l of promqlLabels(q.expr)) assert.ok(allowed.has(l), `${q.panel}: label "${l}" is not on ${promqlMetrics(q.expr).join(', ')} (${q.expr})`);
    }
  });

  test('every query parses as PromQL (promtool check rules)', (t) => {
    if (!have('promtool')) {
      t.skip('promtool is not installed');
      return;
    }
    const dir = mkdtempSync(join(tmpdir(), 'switchyard-promql-'));
    try {
      const rules = queries.map((q, i) => ({
        record: `dashboard:query_${i}`,
        // Grafana's interval variables, as Grafana would substitute them.
        expr: q.expr.replace(/\$__rate_interval|\$__interval/g, '1m').replace(/\$__range/g, '1h'),
      }));
      assert.ok(!rules.some((r) => r.expr.includes('$')), 'no other template variables');
      const file = join(dir, 'rules.json');
      writeFileSync(file, JSON.stringify({ groups: [{ name: 'dashboard', rules }] }));
      const r = spawnSync('promtool', ['check', 'rules', file], { encoding: 'utf8' });
      assert.equal(r.status, 0, r.stdout + r.stderr);
      assert.match(r.stdout, new RegExp(`SUCCESS: ${rules.length} rules found`));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

// ---------------------------------------------------------------------------------------
// Kubernetes

const K8S = 'docker/k8s';
const k8sFiles = readdirSync(join(ROOT, K8S)).filter((f) => /\.ya?ml$/.test(f));
const k8sDocs = new Map<string, Obj[]>(
  k8sFiles.map((f) => {
    const docs = parseAllDocuments(read(`${K8S}/${f}`));
    for (const d of docs) assert.deepEqual(d.errors, [], `${f} parses`);
    return [f, docs.map((d) => obj(d.toJS(), f)).filter((d) => Object.keys(d).length > 0)];
  }),
);
const k8sAll = [...k8sDocs.values()].flat();
const kind = (k: string, name?: string) => k8sAll.filter((d) => d['kind'] === k && (!name || obj(d['metadata'], 'metadata')['name'] === name));

const configMap = kind('ConfigMap')[0]!;
const configMapYaml = String(obj(configMap['data'], 'data')['switchyard.yaml']);
const secret = kind('Secret')[0]!;

interface Container {
  name: string;
  image: string;
  restartPolicy?: string;
  ports?: { name?: string; containerPort: number }[];
  env?: { name: string; value?: string; valueFrom?: { secretKeyRef?: { name: string; key: string; optional?: boolean } } }[];
  volumeMounts?: { name: string; mountPath: string; readOnly?: boolean }[];
  livenessProbe?: { httpGet?: { path: string; port: string | number } };
  readinessProbe?: { httpGet?: { path: string; port: string | number } };
  startupProbe?: { httpGet?: { path: string; port: string | number } };
  lifecycle?: { preStop?: { exec?: { command: string[] }; sleep?: { seconds: number } } };
  resources?: { requests?: Obj; limits?: Obj };
  securityContext?: Obj;
}
interface PodSpec {
  terminationGracePeriodSeconds?: number;
  securityContext?: Obj;
  containers: Container[];
  initContainers?: Container[];
  volumes?: { name: string; configMap?: { name: string }; emptyDir?: unknown; persistentVolumeClaim?: unknown }[];
}
function podOf(d: Obj): { spec: PodSpec; annotations: Obj; labels: Obj } {
  const tpl = obj(obj(d['spec'], 'spec')['template'], 'template');
  const meta = obj(tpl['metadata'], 'template.metadata');
  return { spec: tpl['spec'] as PodSpec, annotations: (meta['annotations'] as Obj | undefined) ?? {}, labels: obj(meta['labels'], 'labels') };
}
const gatewayContainer = (spec: PodSpec): Container => {
  const c = [...spec.containers, ...(spec.initContainers ?? [])].find((x) => x.name === 'switchyard');
  assert.ok(c, 'a switchyard container');
  return c;
};

function preStopSeconds(c: Container): number {
  const p = c.lifecycle?.preStop;
  if (!p) return 0;
  if (p.sleep) return p.sleep.seconds;
  const cmd = p.exec?.command ?? [];
  assert.equal(cmd[0], 'sleep', 'preStop is a sleep');
  return Number(cmd[1]);
}

describe('Kubernetes manifests', () => {
  test('files: configmap, secret example, deployment, service, sidecar, redis', () => {
    assert.deepEqual(k8sFiles.sort(), ['configmap.yaml', 'deployment.yaml', 'redis.yaml', 'secret.example.yaml', 'service.yaml', 'sidecar.yaml']);
    for (const d of k8sAll) {
      assert.ok(d['apiVersion'] && d['kind'], 'apiVersion and kind');
      assert.ok(obj(d['metadata'], 'metadata')['name'], 'metadata.name');
    }
    assert.equal(kind('Deployment').length, 2);
    assert.equal(kind('Service').length, 2);
  });

  test("the Secret example's REDIS_URL is served by redis.yaml: a Service of that name and port selecting the Redis pods", () => {
    const url = new URL(String(obj(secret['stringData'], 'stringData')['REDIS_URL']));
    const svc = kind('Service', url.hostname)[0];
    assert.ok(svc, `a Service named ${url.hostname}`);
    const s = obj(svc['spec'], 'spec');
    assert.equal(Number(obj(arr(s['ports'], 'ports')[0], 'port')['port']), Number(url.port || 6379));
    const sts = kind('StatefulSet', 'redis')[0]!;
    const { spec, labels } = podOf(sts);
    for (const [k, v] of Object.entries(obj(s['selector'], 'selector'))) assert.equal(labels[k], v, `selector ${k}`);
    const redis = spec.containers[0]!;
    assert.match(redis.image, /^redis:\d+\.\d+\.\d+/, 'a pinned Redis image');
    assert.ok(redis.resources?.limits?.['memory'], 'a memory limit');
    const args = (redis as unknown as { args: string[] }).args.join(' ');
    assert.match(args, /--maxmemory-policy noeviction/, 'Redis never evicts a budget counter');
    assert.equal((redis.securityContext ?? {})['readOnlyRootFilesystem'], true);
  });

  test('memory limits fit the large bodies the ConfigMap lets run at once (docs/deploy.md, "Memory")', () => {
    const server = (parseYaml(configMapYaml) as { server: { body_limit_bytes: number; max_body_bytes_in_flight: number } }).server;
    const cap = server.max_body_bytes_in_flight;
    assert.ok(cap >= server.body_limit_bytes, 'one body at the limit fits the cap');
    // ~125 MiB idle (160 with headroom) plus about 4.4 x each large body while it runs (measured).
    const MiB = 1024 * 1024;
    const need = 160 * MiB + 4.4 * cap;
    const bytes = (q: string) => Number(/^(\d+)(Mi|Gi)$/.exec(q)![1]) * (q.endsWith('Gi') ? 1024 : 1) * MiB;
    for (const name of ['switchyard', 'agent']) {
      const c = gatewayContainer(podOf(kind('Deployment', name)[0]!).spec);
      const limit = bytes(String(c.resources?.limits?.['memory']));
      assert.ok(limit >= need, `${name}: limit ${limit / MiB} MiB >= ${Math.ceil(need / MiB)} MiB`);
    }
  });

  test("the ConfigMap's switchyard.yaml passes the gateway config validation", () => {
    const noKeys = parseTestConfig(configMapYaml, {}, 'configmap.yaml');
    assert.ok(noKeys.models.size > 0);
    const keys = Object.fromEntries(apiKeyVars(configMapYaml).map((v) => [v, 'sk-test']));
    const live = parseTestConfig(configMapYaml, { ...keys, REDIS_URL: 'redis://redis:6379' }, 'configmap.yaml');
    assert.ok(live.upstreamStatus.some((u) => u.mode === 'live'));
  });

  test('the Secret example holds only placeholders, marked as such', () => {
    const text = read(`${K8S}/secret.example.yaml`);
    assert.match(text, /EXAMPLE ONLY/);
    assert.match(text, /PLACEHOLDER/);
    const data = obj(secret['stringData'], 'stringData');
    for (const v of apiKeyVars(configMapYaml)) assert.equal(data[v], '', `${v} is an empty placeholder (upstream off)`);
  });

  for (const [file, name] of [
    ['deployment.yaml', 'switchyard'],
    ['sidecar.yaml', 'agent'],
  ] as const) {
    describe(`${file}: Deployment ${name}`, () => {
      const dep = k8sDocs.get(file)!.find((d) => d['kind'] === 'Deployment')!;
      const { spec, annotations } = podOf(dep);
      const c = gatewayContainer(spec);
      const http = (c.ports ?? []).find((p) => p.name === 'http');
      const resolvePort = (p: string | number | undefined) => (typeof p === 'number' ? p : (c.ports ?? []).find((x) => x.name === p)?.containerPort);
      const env = new Map((c.env ?? []).map((e) => [e.name, e]));

      test('container port 8080 with HOST=0.0.0.0 and PORT matching', () => {
        assert.equal(http?.containerPort, 8080);
        assert.equal(env.get('HOST')?.value, '0.0.0.0');
        assert.equal(Number(env.get('PORT')?.value ?? 8080), http.containerPort);
      });

      test('liveness probes /healthz and readiness /readyz on the container port', () => {
        assert.equal(c.livenessProbe?.httpGet?.path, '/healthz');
        assert.equal(resolvePort(c.livenessProbe?.httpGet?.port), 8080);
        assert.equal(c.readinessProbe?.httpGet?.path, '/readyz');
        assert.equal(resolvePort(c.readinessProbe?.httpGet?.port), 8080);
        if (c.startupProbe) assert.equal(resolvePort(c.startupProbe.httpGet?.port), 8080);
      });

      test('the ledger: DATABASE_URL from the Secret, its spool on a writable volume', () => {
        const db = env.get('DATABASE_URL')?.valueFrom?.secretKeyRef;
        assert.deepEqual(db, { name: 'switchyard-secrets', key: 'DATABASE_URL', optional: true });
        assert.ok('DATABASE_URL' in obj(secret['stringData'], 'stringData'), 'the example Secret has the key');
        const spool = (parseYaml(configMapYaml) as { ledger: { spool_path: string } }).ledger.spool_path;
        const mount = (c.volumeMounts ?? []).find((m) => spool.startsWith(`${m.mountPath}/`));
        assert.ok(mount && !mount.readOnly, `${spool} is on a writable mount (the root filesystem is read-only)`);
        const vol = (spec.volumes ?? []).find((v) => v.name === mount.name);
        assert.ok(vol && (vol.emptyDir !== undefined || vol.persistentVolumeClaim !== undefined), `volume ${mount.name} is an emptyDir or a claim`);
      });

      test('resource requests and limits', () => {
        for (const k of ['requests', 'limits'] as const) {
          assert.ok(c.resources?.[k]?.['cpu'], `${k}.cpu`);
          assert.ok(c.resources?.[k]?.['memory'], `${k}.memory`);
        }
      });

      test('non-root, read-only root filesystem, all capabilities dropped (every container)', () => {
        const pod = spec.securityContext ?? {};
        for (const x of [...spec.containers, ...(spec.initContainers ?? [])]) {
          const sc = x.securityContext ?? {};
          assert.equal(sc['runAsNonRoot'] ?? pod['runAsNonRoot'], true, `${x.name}: runAsNonRoot`);
          const uid = sc['runAsUser'] ?? pod['runAsUser'];
          assert.ok(typeof uid === 'number' && uid > 0, `${x.name}: numeric non-root runAsUser (the image's USER is a name)`);
          assert.equal(sc['readOnlyRootFilesystem'], true, `${x.name}: readOnlyRootFilesystem`);
          assert.equal(sc['allowPrivilegeEscalation'], false, `${x.name}: allowPrivilegeEscalation`);
          assert.deepEqual(obj(sc['capabilities'], 'capabilities')['drop'], ['ALL'], `${x.name}: drop ALL`);
        }
      });

      test('config from the ConfigMap, keys and REDIS_URL from the Secret', () => {
        const mount = (c.volumeMounts ?? []).find((m) => `${m.mountPath}/switchyard.yaml` === env.get('SWITCHYARD_CONFIG')?.value);
        assert.ok(mount, 'SWITCHYARD_CONFIG is in a mounted volume');
        assert.equal(mount.readOnly, true);
        const vol = (spec.volumes ?? []).find((v) => v.name === mount.name);
        assert.equal(vol?.configMap?.name, obj(configMap['metadata'], 'metadata')['name']);
        const secretName = obj(secret['metadata'], 'metadata')['name'];
        const data = obj(secret['stringData'], 'stringData');
        for (const v of [...apiKeyVars(configMapYaml), 'REDIS_URL']) {
          const ref = env.get(v)?.valueFrom?.secretKeyRef;
          assert.ok(ref, `${v} from a secretKeyRef`);
          assert.equal(ref.name, secretName, `${v} from the Secret`);
          assert.equal(ref.key, v);
          assert.ok(ref.key in data, `${v} is in the Secret example`);
          assert.equal(ref.optional, true, `${v}: optional (absent = upstream off / in-memory store)`);
        }
        for (const x of [...spec.containers, ...(spec.initContainers ?? [])]) {
          for (const e of x.env ?? []) if (e.valueFrom?.secretKeyRef) assert.ok(e.valueFrom.secretKeyRef.key in data, `${x.name}: ${e.name}'s key is in the Secret`);
        }
      });

      test('Prometheus scrape annotations point at /metrics on the container port', () => {
        assert.equal(annotations['prometheus.io/scrape'], 'true');
        assert.equal(Number(annotations['prometheus.io/port']), http?.containerPort);
        assert.equal(annotations['prometheus.io/path'], '/metrics');
      });

      test('terminationGracePeriodSeconds > preStop sleep + server.drain_ms + shutdown margin', () => {
        const grace = spec.terminationGracePeriodSeconds;
        assert.equal(grace, 30);
        const drain = drainMs(configMapYaml) / 1000;
        const margin = shutdownMarginMs() / 1000;
        const total = preStopSeconds(c) + drain + margin;
        assert.ok(grace! > total, `grace ${grace} s > preStop ${preStopSeconds(c)} s + drain ${drain} s + margin ${margin} s`);
      });
    });
  }

  test('standalone: 2 replicas = store.replicas, preStop sleep, a Service selecting its pods on the http port', () => {
    const dep = kind('Deployment', 'switchyard')[0]!;
    const replicas = obj(dep['spec'], 'spec')['replicas'];
    assert.equal(replicas, 2);
    assert.equal((parseYaml(configMapYaml) as { store: { replicas: number } }).store.replicas, replicas);
    const { spec, labels } = podOf(dep);
    assert.ok(preStopSeconds(gatewayContainer(spec)) > 0, 'preStop sleep before SIGTERM');
    const svc = kind('Service', 'switchyard')[0]!;
    const s = obj(svc['spec'], 'spec');
    const selector = obj(s['selector'], 'selector');
    for (const [k, v] of Object.entries(selector)) assert.equal(labels[k], v, `selector ${k}`);
    const agentLabels = podOf(kind('Deployment', 'agent')[0]!).labels;
    assert.ok(!Object.entries(selector).every(([k, v]) => agentLabels[k] === v), 'the Service does not select the agent pods');
    const port = obj(arr(s['ports'], 'ports')[0], 'port');
    const target = port['targetPort'];
    const c = gatewayContainer(spec);
    assert.equal(typeof target === 'number' ? target : c.ports?.find((p) => p.name === target)?.containerPort, 8080);
  });

  test('sidecar: native sidecar, and the agent talks to http://127.0.0.1:<gateway port>/v1', () => {
    const { spec } = podOf(kind('Deployment', 'agent')[0]!);
    const gwc = gatewayContainer(spec);
    assert.ok((spec.initContainers ?? []).includes(gwc), 'switchyard is an initContainer …');
    assert.equal(gwc.restartPolicy, 'Always', '… with restartPolicy: Always (native sidecar: starts before, stops after the agent)');
    const agent = spec.containers.find((c) => c.name === 'agent');
    assert.ok(agent);
    const base = agent.env?.find((e) => e.name === 'OPENAI_BASE_URL')?.value;
    assert.equal(base, `http://127.0.0.1:${gwc.ports![0]!.containerPort}/v1`);
  });

  test('kubectl parses every manifest (kubectl <cmd> --local, no API server)', (t) => {
    if (!have('kubectl')) {
      t.skip('kubectl is not installed');
      return;
    }
    const kc = isolatedKubeconfig();
    try {
      const r = spawnSync('kubectl', ['annotate', '--local', '-f', join(ROOT, K8S), 'switchyard.test/parsed=true', '-o', 'name'], { encoding: 'utf8', env: { ...process.env, KUBECONFIG: kc.file }, timeout: 60_000 });
      assert.equal(r.status, 0, r.stderr);
      const expected = k8sAll.map((d) => `${String(d['kind']).toLowerCase()}/${String(obj(d['metadata'], 'metadata')['name'])}`);
      const got = r.stdout
        .trim()
        .split('\n')
        .map((l) => l.replace(/^([a-z]+)\.[a-z.]+\//, '$1/'));
      assert.deepEqual(got.sort(), expected.sort());
    } finally {
      kc.cleanup();
    }
  });

  test('kubectl apply --dry-run=client --validate=false', (t) => {
    if (!have('kubectl')) {
      t.skip('kubectl is not installed');
      return;
    }
    // Never the ambient kubeconfig (nor kubectl's default http://localhost:8080, which may be
    // a gateway): a cluster only when SWITCHYARD_TEST_KUBECONFIG names one.
    const kc = process.env['SWITCHYARD_TEST_KUBECONFIG'] ? { file: process.env['SWITCHYARD_TEST_KUBECONFIG'], cleanup: () => {} } : isolatedKubeconfig();
    try {
      const r = spawnSync('kubectl', ['apply', '--dry-run=client', '--validate=false', '-f', join(ROOT, K8S)], { encoding: 'utf8', env: { ...process.env, KUBECONFIG: kc.file }, stdio: ['ignore', 'pipe', 'pipe'], timeout: 60_000 });
      if (r.status !== 0 && /connect|dial tcp|server API group list|unable to recognize/i.test(r.stderr)) {
        t.skip('kubectl needs an API server for apply --dry-run=client (set SWITCHYARD_TEST_KUBECONFIG to run it against a cluster)');
        return;
      }
      assert.equal(r.status, 0, r.stderr);
      assert.equal(r.stdout.trim().split('\n').length, k8sAll.length, r.stdout);
    } finally {
      kc.cleanup();
    }
  });
});

/** A kubeconfig whose only cluster is unreachable, so kubectl never talks to anything. */
function isolatedKubeconfig(): { file: string; cleanup: () => void } {
  const dir = mkdtempSync(join(tmpdir(), 'switchyard-kube-'));
  mkdirSync(dir, { recursive: true });
  const file = join(dir, 'config');
  writeFileSync(
    file,
    [
      'apiVersion: v1',
      'kind: Config',
      'clusters: [{ name: none, cluster: { server: "https://127.0.0.1:1" } }]',
      'contexts: [{ name: none, context: { cluster: none, user: none } }]',
      'current-context: none',
      // A token, so kubectl does not prompt for a username.
      'users: [{ name: none, user: { token: none } }]',
      '',
    ].join('\n'),
  );
  return { file, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}
