/**
 * `server.workers: 2` with a real redis-server: the real process (`node .test-build/src/main.js`)
 * forks two workers on one port. Requests on new connections are answered by both worker
 * processes (their pids in the `request finished` lines); `/metrics` on either reports the
 * sum of both (N requests sent, N counted; the store-mode gauge stays 0/1); SIGHUP to the
 * primary reloads both, and so does POST /admin/reload on the shared admin port; a worker killed with SIGKILL is replaced and service goes on;
 * SIGTERM stops the workers and the primary exits 0. Without Redis the start is refused.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { hashKey } from '../../src/auth/keys.js';
import { FakeUpstream } from '../helpers/fake-upstream.js';
import { CLIENT_KEY, UPSTREAM_KEY, testConfigYaml, waitFor } from '../helpers/gateway.js';
import { metricSum, metricValue } from '../helpers/metrics-text.js';
import { freePort, RedisServer } from '../helpers/redis-server.js';

const here = dirname(fileURLToPath(import.meta.url));
const ROOT = join(here, '..', '..', '..');
const MAIN = join(ROOT, '.test-build', 'src', 'main.js');
/** A loaded 2-core machine starts three node processes slowly. */
const START_MS = 40_000;
const ADMIN_KEY = 'sk-admin-workers-test-0123456789';

interface Group {
  child: ChildProcess;
  stderr: string[];
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  logs(): Record<string, unknown>[];
}

function spawnMain(configFile: string, env: Record<string, string> = {}): Group {
  const child = spawn(process.execPath, [MAIN, '--config', configFile], {
    cwd: ROOT,
    env: { PATH: process.env['PATH'] ?? '', HOST: '127.0.0.1', PORT: '0', TEST_UPSTREAM_KEY: UPSTREAM_KEY, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: Record<string, unknown>[] = [];
  const stderr: string[] = [];
  let partial = '';
  child.stdout!.setEncoding('utf8').on('data', (d: string) => {
    const parts = (partial + d).split('\n');
    partial = parts.pop()!;
    for (const l of parts) {
      try {
        lines.push(JSON.parse(l) as Record<string, unknown>);
      } catch {
        // not a log line
      }
    }
  });
  child.stderr!.setEncoding('utf8').on('data', (d: string) => stderr.push(d));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  return { child, stderr, exited, logs: () => lines };
}

/** One request on a connection of its own (round-robin hands connections to the workers in turn). */
function http(url: string, opts: { method?: string; body?: unknown; id?: string; key?: string } = {}): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const payload = opts.body === undefined ? undefined : JSON.stringify(opts.body);
    const headers: Record<string, string> = {
      authorization: `Bearer ${opts.key ?? CLIENT_KEY}`,
      ...(payload ? { 'content-type': 'application/json' } : {}),
      ...(opts.id ? { 'x-request-id': opts.id } : {}),
    };
    const req = request(url, { method: opts.method ?? 'GET', agent: false, headers }, (res) => {
      let body = '';
      res.setEncoding('utf8').on('data', (d: string) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(payload);
  });
}

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

const msg = (l: Record<string, unknown>, text: string): boolean => typeof l['msg'] === 'string' && l['msg'].includes(text);

describe('server.workers: 2 (real processes, real Redis)', () => {
  let dir: string;
  let redis: RedisServer;
  let upstream: FakeUpstream;
  let group: Group;
  let url: string;
  let adminUrl: string;
  let pids: number[];
  let sent = 0;

  /** Sends `n` chat requests, each on its own connection; returns the pids that answered them. */
  async function chats(n: number): Promise<Set<number>> {
    const ids: string[] = [];
    for (let i = 0; i < n; i++) {
      const id = `wk-${sent++}`;
      ids.push(id);
      const r = await http(`${url}/v1/chat/completions`, { method: 'POST', id, body: { model: 'gpt-test', messages: [{ role: 'user', content: 'hi' }] } });
      assert.equal(r.status, 200, r.body);
    }
    const lines = await waitFor(
      () => {
        const got = group.logs().filter((l) => l['msg'] === 'request finished' && ids.includes(String(l['request_id'])));
        return got.length === n && got;
      },
      5_000,
      `${n} request finished lines`,
    );
    return new Set(lines.map((l) => Number(l['pid'])));
  }

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'switchyard-workers-'));
    redis = await RedisServer.start();
    upstream = await new FakeUpstream().start();
    upstream.on(() => ({
      status: 200,
      body: {
        id: 'c1',
        object: 'chat.completion',
        created: 1,
        model: 'upstream-model-x',
        choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }],
        usage: { prompt_tokens: 3, completion_tokens: 1, total_tokens: 4 },
      },
    }));
    // The admin port is not 0: in a cluster every listen on port 0 of one host shares one port.
    const adminPort = await freePort();
    const yaml =
      testConfigYaml(upstream.url, { server: '  workers: 2\n  drain_ms: 2000' }) +
      `store: { redis_url: "redis://127.0.0.1:${redis.port}", key_prefix: workers-test }\nadmin: { port: ${adminPort}, key_sha256: ${hashKey(ADMIN_KEY)} }\n`;
    adminUrl = `http://127.0.0.1:${adminPort}`;
    const file = join(dir, 'switchyard.yaml');
    writeFileSync(file, yaml);
    group = spawnMain(file);
    let exit: unknown = null;
    void group.exited.then((e) => (exit = e));
    const started = await waitFor(
      () => {
        if (exit) throw new Error(`gateway exited ${JSON.stringify(exit)} before starting: ${group.stderr.join('')}`);
        // A worker's own lines are written in batches (up to 1 s late): wait for its listening line too.
        const listening = group.logs().some((l) => msg(l, 'switchyard listening on'));
        return listening && group.logs().find((l) => l['msg'] === '2 workers started');
      },
      START_MS,
      'the workers to start',
    );
    pids = started['worker_pids'] as number[];
    assert.equal(pids.length, 2);
    assert.notEqual(pids[0], pids[1]);
    assert.ok(!pids.includes(group.child.pid!), 'the primary serves nothing');
    url = String(group.logs().find((l) => msg(l, 'switchyard listening on'))!['address']);
  });

  after(async () => {
    if (group.child.exitCode === null && group.child.signalCode === null) group.child.kill('SIGKILL');
    for (const p of pids ?? []) if (alive(p)) process.kill(p, 'SIGKILL');
    await upstream.close();
    await redis.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  test('both worker processes answer, and /metrics on either sums both', async () => {
    const answered = await chats(8);
    assert.deepEqual([...answered].sort(), [...pids].sort(), 'each worker answered some of the requests');
    // Scrapes land on both workers (new connections): each reports the group's total.
    for (let i = 0; i < 4; i++) {
      const m = await http(`${url}/metrics`);
      assert.equal(m.status, 200, m.body);
      assert.equal(metricSum(m.body, 'switchyard_requests_total', { model: 'gpt-test', status: '200' }), 8);
      assert.equal(metricSum(m.body, 'switchyard_request_duration_seconds_count', { model: 'gpt-test' }), 8);
      // A 0/1 state gauge is the max of the workers', not their sum.
      assert.equal(metricValue(m.body, 'switchyard_store_mode', { mode: 'redis' }), 1);
      assert.equal(metricValue(m.body, 'switchyard_requests_in_flight', { model: 'gpt-test' }) ?? 0, 0);
    }
  });

  /** Waits for a `config reloaded` line from each worker after the first `before` such lines. */
  async function bothReloaded(before: number): Promise<void> {
    const reloaded = await waitFor(
      () => {
        const l = group
          .logs()
          .filter((x) => x['msg'] === 'config reloaded')
          .slice(before);
        return l.length >= 2 && l;
      },
      10_000,
      'both workers to reload',
    );
    assert.deepEqual([...new Set(reloaded.map((l) => Number(l['pid'])))].sort(), [...pids].sort());
  }

  test('SIGHUP to the primary reloads every worker', async () => {
    const before = group.logs().filter((l) => l['msg'] === 'config reloaded').length;
    group.child.kill('SIGHUP');
    await bothReloaded(before);
  });

  test('POST /admin/reload on the shared admin port reloads every worker', async () => {
    const before = group.logs().filter((l) => l['msg'] === 'config reloaded').length;
    const r = await http(`${adminUrl}/admin/reload`, { method: 'POST', key: ADMIN_KEY });
    assert.equal(r.status, 200, r.body);
    assert.equal((JSON.parse(r.body) as { status: string }).status, 'reloaded');
    await bothReloaded(before);
  });

  test('a worker killed with SIGKILL is replaced; requests keep being served', async () => {
    const victim = pids[0]!;
    process.kill(victim, 'SIGKILL');
    const restarted = await waitFor(() => group.logs().find((l) => msg(l, 'restarted')), START_MS, 'the worker to be replaced');
    const exitLine = group.logs().find((l) => msg(l, 'exited unexpectedly'));
    assert.equal(exitLine?.['worker_pid'], victim);
    assert.equal(exitLine?.['signal'], 'SIGKILL');
    const fresh = Number(restarted['worker_pid']);
    assert.ok(fresh !== victim && alive(fresh));
    pids = [pids[1]!, fresh];
    const answered = await chats(6);
    assert.deepEqual([...answered].sort(), [...pids].sort(), 'the survivor and the replacement answer');
  });

  test('SIGTERM: the workers drain and exit, then the primary exits 0', async () => {
    group.child.kill('SIGTERM');
    const exit = await Promise.race([group.exited, new Promise<null>((r) => setTimeout(() => r(null), 15_000))]);
    assert.deepEqual(exit, { code: 0, signal: null }, group.stderr.join(''));
    await waitFor(() => pids.every((p) => !alive(p)), 5_000, 'the workers to be gone');
    const closed = group.logs().filter((l) => l['msg'] === 'closed');
    assert.deepEqual([...new Set(closed.map((l) => Number(l['pid'])))].sort(), [...pids].sort(), 'each worker drained and closed');
  });
});

describe('server.workers without Redis', () => {
  test('serve exits 1 at start, naming what to set', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'switchyard-workers-'));
    try {
      const file = join(dir, 'switchyard.yaml');
      writeFileSync(file, testConfigYaml('http://127.0.0.1:9', { server: '  workers: 2' }));
      const p = spawnMain(file);
      const exit = await p.exited;
      assert.deepEqual(exit, { code: 1, signal: null });
      const err = p.stderr.join('');
      assert.match(err, /server\/workers: 2 needs a shared store: set store\.redis_url \(or REDIS_URL/);
      assert.equal(p.logs().length, 0, 'no worker was started');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
