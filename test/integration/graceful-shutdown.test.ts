/**
 * The real process (`node .test-build/src/main.js`) on SIGTERM, against a fake upstream
 * streaming slowly: readiness fails and new requests get 503 `shutting_down` at once; a
 * stream in flight finishes within `server.drain_ms`, or is cut at it with a final error
 * event and its upstream request aborted; idle keep-alive connections do not hold the
 * exit; the process exits 0. In process: calls cut before their answer started get a 503.
 * And start-up: a bad config or a busy port exits 1 with a
 * clear message, an unreachable Redis does not stop it (degraded mode).
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { Agent, request, type IncomingHttpHeaders } from 'node:http';
import { createServer, type AddressInfo, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import OpenAI from 'openai';
import { FakeUpstream, type Step } from '../helpers/fake-upstream.js';
import { CLIENT_KEY, UPSTREAM_KEY, startGateway, testConfigYaml, waitFor } from '../helpers/gateway.js';

const here = dirname(fileURLToPath(import.meta.url));
/** The repository root, from the compiled `.test-build/test/integration`. */
const ROOT = join(here, '..', '..', '..');
const MAIN = join(ROOT, '.test-build', 'src', 'main.js');

/** An OpenAI chat stream of `n` content events `delayMs` apart, then a finish, usage and `[DONE]`. */
function slowStream(n: number, delayMs: number): Step[] {
  const chunk = (delta: Record<string, unknown>, finish: string | null): string =>
    `data: ${JSON.stringify({ id: 'chatcmpl-1', object: 'chat.completion.chunk', created: 1, model: 'upstream-model-x', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
  const steps: Step[] = [chunk({ role: 'assistant', content: '' }, null)];
  for (let i = 0; i < n; i++) steps.push({ delayMs }, chunk({ content: `t${i} ` }, null));
  steps.push(chunk({}, 'stop'));
  steps.push(
    `data: ${JSON.stringify({ id: 'chatcmpl-1', object: 'chat.completion.chunk', created: 1, model: 'upstream-model-x', choices: [], usage: { prompt_tokens: 5, completion_tokens: n, total_tokens: n + 5 } })}\n\n`,
  );
  steps.push('data: [DONE]\n\n');
  return steps;
}

const expectedText = (n: number): string => Array.from({ length: n }, (_, i) => `t${i} `).join('');

interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
  at: number;
}

/** A spawned gateway process. */
interface Proc {
  child: ChildProcess;
  url: string;
  stdout: string[];
  stderr: string[];
  exited: Promise<Exit>;
  /** Parsed JSON log lines so far. */
  logs(): Record<string, unknown>[];
}

let dir: string;
let configs = 0;

function writeConfig(yaml: string): string {
  const file = join(dir, `switchyard-${++configs}.yaml`);
  writeFileSync(file, yaml);
  return file;
}

/** Spawns main.js with a config file; PORT=0 unless given. */
function spawnMain(configFile: string, env: Record<string, string> = {}): Omit<Proc, 'url'> {
  const child = spawn(process.execPath, [MAIN, '--config', configFile], {
    cwd: ROOT,
    env: { PATH: process.env['PATH'] ?? '', HOST: '127.0.0.1', PORT: '0', TEST_UPSTREAM_KEY: UPSTREAM_KEY, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const stdout: string[] = [];
  const stderr: string[] = [];
  let partial = '';
  child.stdout!.setEncoding('utf8').on('data', (d: string) => {
    const lines = (partial + d).split('\n');
    partial = lines.pop()!;
    for (const l of lines) if (l.trim()) stdout.push(l);
  });
  child.stderr!.setEncoding('utf8').on('data', (d: string) => stderr.push(d));
  const exited = new Promise<Exit>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal, at: Date.now() })));
  const logs = (): Record<string, unknown>[] =>
    stdout.flatMap((l) => {
      try {
        return [JSON.parse(l) as Record<string, unknown>];
      } catch {
        return [];
      }
    });
  return { child, stdout, stderr, exited, logs };
}

const running: ChildProcess[] = [];

/** Spawns the gateway and waits for its "listening" log line (the logger flushes within 1 s). */
async function startMain(yaml: string): Promise<Proc> {
  const p = spawnMain(writeConfig(yaml));
  running.push(p.child);
  let exit: Exit | null = null;
  void p.exited.then((e) => (exit = e));
  const line = await waitFor(
    () => {
      if (exit) throw new Error(`gateway exited ${exit.code} before listening: ${p.stderr.join('')}`);
      return p.logs().find((l) => typeof l['msg'] === 'string' && l['msg'].startsWith('switchyard listening on'));
    },
    8000,
    'the gateway to listen',
  );
  return { ...p, url: String(line['address']) };
}

interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
}

/** One HTTP request over `agent` (keep-alive when it is), the whole body read. */
function http(url: string, opts: { method?: string; body?: unknown; agent?: Agent } = {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const payload = opts.body === undefined ? undefined : JSON.stringify(opts.body);
    const req = request(
      url,
      {
        method: opts.method ?? 'GET',
        agent: opts.agent ?? false,
        headers: { authorization: `Bearer ${CLIENT_KEY}`, ...(payload ? { 'content-type': 'application/json' } : {}) },
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8').on('data', (d: string) => (body += d));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}

/** Calls `fn` every 10 ms until it returns non-null or `ms` passes (then null). */
async function poll<T>(fn: () => Promise<T | null>, ms: number): Promise<T | null> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v !== null || Date.now() > end) return v;
    await new Promise((r) => setTimeout(r, 10));
  }
}

const chatBody = (stream: boolean) => ({ model: 'gpt-test', messages: [{ role: 'user', content: 'hi' }], stream });

/** A config for the fake upstream with extra `server:` lines and top-level blocks. */
function yamlFor(upstreamUrl: string, server: string, extra = ''): string {
  const base = testConfigYaml(upstreamUrl);
  assert.match(base, /^server:\n/m);
  return base.replace(/^server:\n/m, `server:\n${server}\n`) + extra;
}

describe('graceful shutdown of the real process', () => {
  let upstream: FakeUpstream;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'switchyard-shutdown-'));
    upstream = await new FakeUpstream().start();
  });
  after(async () => {
    for (const c of running) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    await upstream.close();
    rmSync(dir, { recursive: true, force: true });
  });

  test('SIGTERM mid-stream: readyz 503 and new requests 503 shutting_down at once; the stream finishes with [DONE]; exit 0', async () => {
    const N = 20;
    upstream.on(() => ({ status: 200, steps: slowStream(N, 100) }));
    const gw = await startMain(yamlFor(upstream.url, '  drain_ms: 10000'));
    const reqIndex = upstream.requests.length;
    assert.equal((await http(`${gw.url}/readyz`)).status, 200);

    // The stream rides a keep-alive connection, which stays open (idle) once it is done.
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    let raw = '';
    let doneAt = 0;
    let sigtermAt = 0;
    const streamed = new Promise<{ status: number; headers: IncomingHttpHeaders }>((resolve, reject) => {
      const req = request(
        `${gw.url}/v1/chat/completions`,
        { method: 'POST', agent, headers: { authorization: `Bearer ${CLIENT_KEY}`, 'content-type': 'application/json' } },
        (res) => {
          res.setEncoding('utf8').on('data', (d: string) => {
            raw += d;
            // SIGTERM once a few events are through.
            if (!sigtermAt && (raw.match(/"content":"t\d+ "/g) ?? []).length >= 3) {
              sigtermAt = Date.now();
              gw.child.kill('SIGTERM');
            }
          });
          res.on('end', () => {
            doneAt = Date.now();
            resolve({ status: res.statusCode ?? 0, headers: res.headers });
          });
          res.on('error', reject);
        },
      );
      req.on('error', reject);
      req.end(JSON.stringify(chatBody(true)));
    });

    await waitFor(() => sigtermAt, 3000, 'three events, then SIGTERM');
    // Readiness fails at once (the signal is handled within a few ms).
    const rz = await poll(async () => {
      const r = await http(`${gw.url}/readyz`);
      return r.status === 503 ? r : null;
    }, 1500);
    assert.ok(rz, 'readyz turned 503');
    assert.ok(Date.now() - sigtermAt < 1500, 'readyz failed within 1.5 s of SIGTERM');
    assert.equal((JSON.parse(rz.body) as { status: string }).status, 'shutting_down');

    // A new request: 503 with Connection: close and an OpenAI error body …
    const refused = await http(`${gw.url}/v1/chat/completions`, { method: 'POST', body: chatBody(false) });
    assert.equal(refused.status, 503);
    assert.equal(refused.headers['connection'], 'close');
    assert.equal(refused.headers['retry-after'], '1');
    assert.deepEqual(JSON.parse(refused.body), {
      error: { message: 'This gateway instance is shutting down; retry the request.', type: 'server_error', param: null, code: 'shutting_down' },
    });
    // … which the official client raises as a 503 with the code.
    const client = new OpenAI({ apiKey: CLIENT_KEY, baseURL: `${gw.url}/v1`, maxRetries: 0 });
    await assert.rejects(
      client.chat.completions.create({ model: 'gpt-test', messages: [{ role: 'user', content: 'hi' }] }),
      (err: unknown) => err instanceof OpenAI.InternalServerError && err.status === 503 && err.code === 'shutting_down',
    );
    assert.equal(upstream.requests.length, reqIndex + 1, 'refused requests never reached the upstream');
    // Liveness still answers while draining.
    assert.equal((await http(`${gw.url}/healthz`)).status, 200);

    // The stream in flight completes: every event, then [DONE].
    const res = await streamed;
    assert.equal(res.status, 200);
    const contents = [...raw.matchAll(/"content":"(t\d+ )"/g)].map((m) => m[1]).join('');
    assert.equal(contents, expectedText(N));
    assert.match(raw, /"finish_reason":"stop"/);
    assert.ok(raw.endsWith('data: [DONE]\n\n'), `stream ends with [DONE]: ${raw.slice(-80)}`);
    assert.doesNotMatch(raw, /"error"/);
    assert.ok(upstream.requests[reqIndex]!.finished, 'the upstream finished its stream');
    assert.equal(upstream.requests[reqIndex]!.abortedAt, null);

    // Then the process exits 0 promptly, although the stream's keep-alive connection is still
    // open (left to Node, it would hold server.close() for the 72 s keep-alive timeout).
    const exit = await gw.exited;
    agent.destroy();
    assert.equal(exit.code, 0, gw.stderr.join(''));
    assert.ok(exit.at - doneAt < 2500, `exited ${exit.at - doneAt} ms after the stream ended`);
    const closed = gw.logs().find((l) => l['msg'] === 'closed');
    assert.deepEqual(closed?.['drain'] && { ...(closed['drain'] as object), ms: 0 }, { drained: true, aborted: 0, cut: 0, ms: 0 });
    const finished = gw.logs().filter((l) => l['msg'] === 'request finished');
    const streamLine = finished.find((l) => l['stream'] === true);
    assert.equal(streamLine?.['status'], 200);
    assert.equal(streamLine?.['outcome'], 'ok');
  });

  test('drain_ms 1000 with a 10 s stream: events so far, then a final shutting_down error event; the upstream is aborted; exit 0', async () => {
    upstream.on(() => ({ status: 200, steps: slowStream(100, 100) }));
    const gw = await startMain(yamlFor(upstream.url, '  drain_ms: 1000'));
    const reqIndex = upstream.requests.length;
    const client = new OpenAI({ apiKey: CLIENT_KEY, baseURL: `${gw.url}/v1`, maxRetries: 0 });
    const stream = await client.chat.completions.create({ model: 'gpt-test', messages: [{ role: 'user', content: 'hi' }], stream: true });
    let text = '';
    let sigtermAt = 0;
    let caught: unknown = null;
    let errorAt = 0;
    try {
      for await (const c of stream) {
        text += c.choices[0]?.delta.content ?? '';
        if (!sigtermAt && text.length >= 9) {
          sigtermAt = Date.now();
          gw.child.kill('SIGTERM');
        }
      }
    } catch (err) {
      caught = err;
      errorAt = Date.now();
    }
    assert.ok(sigtermAt > 0, 'SIGTERM was sent mid-stream');
    // The SDK raises on the final `data: {"error":…}` event.
    assert.ok(caught instanceof OpenAI.APIError, `the stream raised an APIError, got ${String(caught)}`);
    assert.equal(caught.code, 'shutting_down');
    assert.equal(caught.type, 'server_error');
    // It came at the deadline, not before and not much after.
    const at = errorAt - sigtermAt;
    assert.ok(at >= 900 && at < 2500, `the stream was cut ${at} ms after SIGTERM`);
    // The events before the cut arrived, in order, and then nothing else.
    const n = text.trim().split(' ').length;
    assert.ok(n >= 10 && n < 40, `${n} events before the cut`);
    assert.equal(text, expectedText(n));

    const up = upstream.requests[reqIndex]!;
    const abortedAt = await waitFor(() => up.abortedAt, 1000, 'the upstream request to be aborted');
    assert.ok(abortedAt - sigtermAt >= 900, 'the upstream was aborted at the deadline');
    assert.equal(up.finished, false);

    const exit = await gw.exited;
    assert.equal(exit.code, 0, gw.stderr.join(''));
    assert.ok(exit.at - sigtermAt < 4000, `exited ${exit.at - sigtermAt} ms after SIGTERM`);
    const closed = gw.logs().find((l) => l['msg'] === 'closed');
    const drain = closed?.['drain'] as { drained: boolean; aborted: number; cut: number } | undefined;
    assert.deepEqual(drain && { drained: drain.drained, aborted: drain.aborted, cut: drain.cut }, { drained: false, aborted: 1, cut: 0 });
    const line = gw.logs().find((l) => l['msg'] === 'request finished' && l['stream'] === true);
    assert.equal(line?.['status'], 200);
    assert.equal(line?.['outcome'], 'gateway_error');
  });

  test('Redis down is degraded mode, not a start-up failure; idle keep-alive connections do not hold the exit', async () => {
    // A port nothing listens on.
    const dead = await new Promise<number>((resolve) => {
      const s: Server = createServer().listen(0, '127.0.0.1', () => {
        const port = (s.address() as AddressInfo).port;
        s.close(() => resolve(port));
      });
    });
    const gw = await startMain(yamlFor(upstream.url, '  drain_ms: 10000', `store:\n  redis_url: redis://127.0.0.1:${dead}\n  command_timeout_ms: 50\n`));
    const agent = new Agent({ keepAlive: true });
    const rz = await http(`${gw.url}/readyz`, { agent });
    assert.equal(rz.status, 200);
    assert.deepEqual((JSON.parse(rz.body) as { store: unknown }).store, { mode: 'degraded', degraded: true });
    const models = await http(`${gw.url}/v1/models`, { agent });
    assert.equal(models.status, 200);
    assert.equal(models.headers['connection'], 'keep-alive');
    // Two idle keep-alive connections to the gateway (72 s keep-alive timeout).
    const other = new Agent({ keepAlive: true });
    assert.equal((await http(`${gw.url}/healthz`, { agent: other })).status, 200);

    const t0 = Date.now();
    gw.child.kill('SIGTERM');
    const exit = await gw.exited;
    agent.destroy();
    other.destroy();
    assert.equal(exit.code, 0, gw.stderr.join(''));
    assert.ok(exit.at - t0 < 2500, `exited ${exit.at - t0} ms after SIGTERM`);
  });

  test('in process: calls cut at the deadline before their answer started get 503 shutting_down (stream or not)', async () => {
    // The upstream takes 3 s to send its headers.
    upstream.on(() => ({ status: 200, delayMs: 3000, steps: slowStream(2, 10) }));
    const gw = await startGateway(testConfigYaml(upstream.url));
    const reqIndex = upstream.requests.length;
    try {
      const calls = [false, true].map((stream) => http(`${gw.url}/v1/chat/completions`, { method: 'POST', body: chatBody(stream) }));
      await waitFor(() => upstream.requests.length === reqIndex + 2, 2000, 'both calls upstream');
      assert.equal(gw.drain.modelCalls, 2);
      const t0 = Date.now();
      const result = await gw.drain.shutdown(300);
      assert.deepEqual({ ...result, ms: 0 }, { drained: false, aborted: 2, cut: 0, ms: 0 });
      assert.ok(Date.now() - t0 < 1500, 'closed soon after the deadline');
      for (const res of await Promise.all(calls)) {
        assert.equal(res.status, 503);
        assert.equal(res.headers['connection'], 'close');
        assert.equal((JSON.parse(res.body) as { error: { code: string } }).error.code, 'shutting_down');
      }
      for (const up of upstream.requests.slice(reqIndex)) assert.ok(up.abortedAt, 'the upstream request was aborted');
      assert.equal(gw.drain.modelCalls, 0);
    } finally {
      await gw.drain.shutdown(0);
    }
  });

  test('start-up: a bad config exits 1 naming the file; a busy port exits 1 naming it', async () => {
    const bad = writeConfig(yamlFor(upstream.url, '  drain_ms: -5'));
    const p = spawnMain(bad);
    const exit = await p.exited;
    assert.equal(exit.code, 1);
    const err = p.stderr.join('');
    assert.ok(err.startsWith('switchyard: '), err);
    assert.ok(err.includes(bad), `the message names the config file: ${err}`);
    assert.match(err, /drain_ms/);
    assert.doesNotMatch(err, /\n\s+at /, 'no stack trace');

    const blocker: Server = await new Promise((resolve) => {
      const s = createServer().listen(0, '127.0.0.1', () => resolve(s));
    });
    try {
      const port = (blocker.address() as AddressInfo).port;
      const q = spawnMain(writeConfig(yamlFor(upstream.url, '  drain_ms: 1000')), { PORT: String(port) });
      const exit2 = await q.exited;
      assert.equal(exit2.code, 1);
      const err2 = q.stderr.join('');
      assert.match(err2, new RegExp(`^switchyard: cannot listen on 127\\.0\\.0\\.1:${port}: EADDRINUSE`));
    } finally {
      await new Promise((r) => blocker.close(r));
    }
  });
});
