/**
 * A real Prometheus server for tests: writes a prometheus.yml scraping one target every
 * second into a temp dir, starts `prometheus` on a free loopback port, and queries its
 * HTTP API. Also runs `promtool check metrics`. Both binaries come from Debian's
 * `prometheus` package; a missing binary is an error naming the package, not a skip.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { accessSync, constants, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';

const INSTALL_HINT =
  'install it with `apt-get install -y --no-install-recommends prometheus` (Debian/Ubuntu package `prometheus`, which ships both prometheus and promtool)';

/** The absolute path of `name` on PATH, or throws naming the package. */
export function requireBinary(name: 'prometheus' | 'promtool'): string {
  for (const dir of (process.env['PATH'] ?? '').split(delimiter)) {
    if (!dir) continue;
    const path = join(dir, name);
    try {
      accessSync(path, constants.X_OK);
      return path;
    } catch {
      // not in this directory
    }
  }
  throw new Error(`\`${name}\` not found on PATH: ${INSTALL_HINT}`);
}

/** A free TCP port on 127.0.0.1 (released before returning; a tiny race is acceptable in tests). */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

export interface PromSample {
  metric: Record<string, string>;
  value: number;
}

export interface PrometheusServer {
  url: string;
  /** Instant query through `/api/v1/query`: the vector's samples (a scalar is one sample with no labels). */
  query(expr: string): Promise<PromSample[]>;
  /** Polls `expr` until `ok(samples)` holds or `ms` passes; returns the last samples. */
  waitFor(expr: string, ok: (s: PromSample[]) => boolean, ms?: number): Promise<PromSample[]>;
  /** Everything prometheus wrote to stdout/stderr (log level warn). */
  output(): string;
  close(): Promise<void>;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Starts Prometheus scraping `http://<target>/metrics` (target = host:port) as job `job`, and waits for `/-/ready`. */
export async function startPrometheus(target: string, job: string, readyMs = 15000): Promise<PrometheusServer> {
  const bin = requireBinary('prometheus');
  const dir = mkdtempSync(join(tmpdir(), 'switchyard-prom-'));
  const configFile = join(dir, 'prometheus.yml');
  writeFileSync(
    configFile,
    `global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: ${job}
    metrics_path: /metrics
    static_configs:
      - targets: ['${target}']
`,
  );
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  let out = '';
  const child: ChildProcess = spawn(
    bin,
    [`--config.file=${configFile}`, `--storage.tsdb.path=${join(dir, 'data')}`, `--web.listen-address=127.0.0.1:${port}`, '--log.level=warn'],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  child.stdout?.on('data', (c: Buffer) => (out += c.toString('utf8')));
  child.stderr?.on('data', (c: Buffer) => (out += c.toString('utf8')));
  let exited: number | string | null = null;
  const exitedP = new Promise<void>((resolve) =>
    child.once('exit', (code, signal) => {
      exited = code ?? signal ?? 'unknown';
      resolve();
    }),
  );
  child.once('error', (err) => (out += `spawn error: ${err.message}\n`));

  const close = async () => {
    if (exited === null) {
      child.kill('SIGTERM');
      const t = setTimeout(() => child.kill('SIGKILL'), 5000);
      await exitedP;
      clearTimeout(t);
    }
    rmSync(dir, { recursive: true, force: true });
  };

  const end = Date.now() + readyMs;
  for (;;) {
    if (exited !== null) {
      await close();
      throw new Error(`prometheus exited (${String(exited)}) before it was ready:\n${out}`);
    }
    const ready = await fetch(`${url}/-/ready`).then(
      (r) => r.ok,
      () => false,
    );
    if (ready) break;
    if (Date.now() > end) {
      await close();
      throw new Error(`prometheus was not ready within ${readyMs} ms:\n${out}`);
    }
    await sleep(100);
  }

  const query = async (expr: string): Promise<PromSample[]> => {
    const res = await fetch(`${url}/api/v1/query?query=${encodeURIComponent(expr)}`);
    const body = (await res.json()) as {
      status: string;
      error?: string;
      data?: { resultType: string; result: unknown };
    };
    if (res.status !== 200 || body.status !== 'success' || !body.data)
      throw new Error(`query ${expr}: HTTP ${res.status} ${body.error ?? JSON.stringify(body)}`);
    const { resultType, result } = body.data;
    if (resultType === 'scalar') return [{ metric: {}, value: Number((result as [number, string])[1]) }];
    if (resultType !== 'vector') throw new Error(`query ${expr}: unexpected result type ${resultType}`);
    return (result as { metric: Record<string, string>; value: [number, string] }[]).map((s) => ({ metric: s.metric, value: Number(s.value[1]) }));
  };

  const waitFor = async (expr: string, ok: (s: PromSample[]) => boolean, ms = 10000): Promise<PromSample[]> => {
    const stop = Date.now() + ms;
    for (;;) {
      const s = await query(expr);
      if (ok(s)) return s;
      if (Date.now() > stop) throw new Error(`timed out after ${ms} ms waiting on ${expr}; last result ${JSON.stringify(s)}\nprometheus output:\n${out}`);
      await sleep(200);
    }
  };

  return { url, query, waitFor, output: () => out, close };
}

export interface PromtoolResult {
  status: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `promtool check metrics` with `text` on stdin. */
export function promtoolCheckMetrics(text: string): PromtoolResult {
  const bin = requireBinary('promtool');
  const r = spawnSync(bin, ['check', 'metrics'], { input: text, encoding: 'utf8', timeout: 10000 });
  if (r.error) throw r.error;
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}
