/**
 * The admin API (its own listener) and hot reload, end to end: the real gateway and admin
 * app on port 0, scripted fake upstreams, a config file on disk rewritten while traffic flows.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { after, before, describe, test } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { buildApp, type Gateway } from '../../src/app.js';
import { hashKey } from '../../src/auth/keys.js';
import { ConfigError } from '../../src/config/load.js';
import { loadTestConfig } from '../helpers/config.js';
import { buildAdmin } from '../../src/server/admin/api.js';
import { FakeUpstream, type ScriptedReply } from '../helpers/fake-upstream.js';
import { CLIENT_KEY, UPSTREAM_KEY, waitFor } from '../helpers/gateway.js';

const ADMIN_KEY = 'sk-admin-0123456789abcdef0123456789';
const NEW_KEY = 'sk-test-new-team-0123456789abcdef';
const ENV = { TEST_UPSTREAM_KEY: UPSTREAM_KEY };

function chunk(content: string, finish: string | null = null): string {
  const c = {
    id: 'c1',
    object: 'chat.completion.chunk',
    created: 1,
    model: 'm',
    choices: [{ index: 0, delta: content ? { content } : {}, finish_reason: finish }],
  };
  return `data: ${JSON.stringify(c)}\n\n`;
}

/** Every upstream answers after a short delay, naming itself; `slow-*` models stream for `slowMs`. */
function script(name: string, slowMs = 800) {
  return (req: { json: Record<string, unknown> | undefined }): ScriptedReply => {
    const model = String(req.json?.['model'] ?? '');
    if (model.startsWith('fail')) return { status: 500, body: { error: { message: 'boom', type: 'server_error' } } };
    if (req.json?.['stream'] === true) {
      const pause = model.startsWith('slow') ? slowMs / 4 : 10;
      return {
        status: 200,
        steps: [
          chunk(`${name}:`),
          { delayMs: pause },
          chunk('a'),
          { delayMs: pause },
          chunk('b'),
          { delayMs: pause },
          chunk('c'),
          { delayMs: pause },
          chunk('', 'stop'),
          'data: [DONE]\n\n',
        ],
      };
    }
    return {
      status: 200,
      delayMs: 30,
      body: {
        id: 'c',
        object: 'chat.completion',
        created: 1,
        model,
        choices: [{ index: 0, message: { role: 'assistant', content: `${name}:${model}` }, finish_reason: 'stop' }],
        usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
      },
    };
  };
}

interface Version {
  /** Upstream id -> base URL. */
  upstreams: Record<string, string>;
  /** Model name -> `upstream/upstream-model`. */
  models: Record<string, string>;
  extraKey?: boolean;
  /** Extra text for upstream `a` (changes its entry). */
  aExtra?: string;
  admin?: boolean;
}

function yaml(v: Version): string {
  const ups = Object.entries(v.upstreams)
    .map(
      ([id, url]) => `
  - id: ${id}
    provider: openai-compatible
    base_url: ${url}/v1
    api_key: \${TEST_UPSTREAM_KEY}
    timeouts: { connect_ms: 2000, first_byte_ms: 5000, idle_ms: 5000 }${id === 'a' && v.aExtra ? `\n    ${v.aExtra}` : ''}`,
    )
    .join('');
  const models = Object.entries(v.models)
    .map(([name, target]) => {
      const [up, model] = target.split('/');
      return `
  - name: ${name}
    price: { input: 1, output: 1 }
    targets:
      - { upstream: ${up}, model: ${model} }`;
    })
    .join('');
  return `
server:
  log_level: info
${v.admin === false ? '' : `admin:\n  key_sha256: ${hashKey(ADMIN_KEY)}\n`}
routing:
  max_attempts: 1
  cooldown: { failures: 1, base_ms: 60000, max_ms: 60000 }
upstreams:${ups}
models:${models}
keys:
  - name: team-a
    key_sha256: ${hashKey(CLIENT_KEY)}
    models: ["*"]
${v.extraKey ? `  - name: team-new\n    key_sha256: ${hashKey(NEW_KEY)}\n    models: ["m2"]\n` : ''}`;
}

interface Running {
  gw: Gateway;
  admin: FastifyInstance;
  url: string;
  adminUrl: string;
  file: string;
  logs: Record<string, unknown>[];
  close(): Promise<void>;
}

const dir = mkdtempSync(join(tmpdir(), 'switchyard-admin-'));
let fileNo = 0;

async function start(v: Version): Promise<Running> {
  const file = join(dir, `config-${fileNo++}.yaml`);
  writeFileSync(file, yaml(v));
  const logs: Record<string, unknown>[] = [];
  const logStream = new Writable({
    write(c: Buffer, _e, cb) {
      for (const line of c.toString('utf8').split('\n')) if (line.trim()) logs.push(JSON.parse(line) as Record<string, unknown>);
      cb();
    },
  });
  const gw = await buildApp(loadTestConfig(file, ENV), { logStream, env: ENV });
  const url = await gw.app.listen({ host: '127.0.0.1', port: 0 });
  const admin = await buildAdmin(gw);
  const adminUrl = await admin.listen({ host: '127.0.0.1', port: 0 });
  return { gw, admin, url, adminUrl, file, logs, close: async () => void (await Promise.all([admin.close(), gw.app.close()])) };
}

function auth(key: string | undefined): Record<string, string> {
  return key === undefined ? {} : { authorization: `Bearer ${key}` };
}

async function chat(
  url: string,
  model: string,
  opts: { key?: string; stream?: boolean } = {},
): Promise<{ status: number; upstream: string | null; text: string }> {
  const res = await fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...auth(opts.key ?? CLIENT_KEY) },
    body: JSON.stringify({ model, stream: opts.stream === true, messages: [{ role: 'user', content: 'hi' }] }),
  });
  return { status: res.status, upstream: res.headers.get('x-switchyard-upstream'), text: await res.text() };
}

/** The content a stream carried, or null when it did not end cleanly. */
function streamContent(text: string): string | null {
  if (!text.includes('data: [DONE]') || text.includes('"error"')) return null;
  return text
    .split('\n')
    .filter((l) => l.startsWith('data: {'))
    .map((l) => (JSON.parse(l.slice(6)) as { choices: { delta: { content?: string } }[] }).choices[0]?.delta.content ?? '')
    .join('');
}

describe('admin API and hot reload', () => {
  const a = new FakeUpstream();
  const b = new FakeUpstream();
  before(async () => {
    await a.start();
    await b.start();
    a.on(script('a'));
    b.on(script('b'));
  });
  after(async () => {
    await a.close();
    await b.close();
    rmSync(dir, { recursive: true, force: true });
  });

  test('auth matrix: no or wrong key 401, client key 403, admin key 200; admin routes do not exist on the client port', async () => {
    const r = await start({ upstreams: { a: a.url }, models: { m: 'a/m-a' } });
    try {
      for (const [method, path] of [
        ['GET', '/admin/upstreams'],
        ['GET', '/admin/keys'],
        ['POST', '/admin/reload'],
      ] as const) {
        for (const [key, status] of [
          [undefined, 401],
          ['sk-wrong-key', 401],
          [CLIENT_KEY, 403],
          [ADMIN_KEY, 200],
        ] as const) {
          const res = await fetch(`${r.adminUrl}${path}`, { method, headers: auth(key) });
          assert.equal(res.status, status, `${method} ${path} with ${key ?? 'no key'}`);
          const body = (await res.json()) as { error?: { message: string; type: string; code: string | null } };
          if (status !== 200) {
            assert.equal(typeof body.error?.message, 'string');
            assert.equal(body.error?.code, status === 401 ? 'invalid_api_key' : 'insufficient_permissions');
          }
        }
        for (const key of [ADMIN_KEY, CLIENT_KEY]) {
          const res = await fetch(`${r.url}${path}`, { method, headers: auth(key) });
          assert.equal(res.status, 404, `${method} ${path} on the client port`);
          await res.arrayBuffer();
        }
      }
      // The admin key is not a client key.
      assert.equal((await chat(r.url, 'm', { key: ADMIN_KEY })).status, 401);
    } finally {
      await r.close();
    }
  });

  test('admin responses carry no key material; /admin/upstreams shows in-flight, cooling and latency', async () => {
    const c = await new FakeUpstream().start();
    c.on(script('c', 800));
    const r = await start({ upstreams: { a: a.url, c: c.url }, models: { m: 'a/m-a', slow: 'c/slow-c', flaky: 'a/fail-a' } });
    const get = async (path: string) => {
      const res = await fetch(`${r.adminUrl}${path}`, { headers: auth(ADMIN_KEY) });
      assert.equal(res.status, 200);
      return res.text();
    };
    try {
      assert.equal((await chat(r.url, 'm')).status, 200);
      assert.ok((await chat(r.url, 'flaky')).status >= 500);
      const slow = chat(r.url, 'slow', { stream: true });
      await waitFor(() => c.requests.length === 1, 2000, 'the slow request upstream');

      const text = await get('/admin/upstreams');
      const keysText = await get('/admin/keys');
      for (const t of [text, keysText]) {
        for (const secret of [CLIENT_KEY, hashKey(CLIENT_KEY), ADMIN_KEY, hashKey(ADMIN_KEY), UPSTREAM_KEY]) assert.ok(!t.includes(secret), 'no key material');
      }
      assert.deepEqual(JSON.parse(keysText), {
        object: 'list',
        store: 'memory',
        data: [{ name: 'team-a', models: ['*'], metadata: {}, limits: null, usage: {} }],
      });

      type Row = {
        model: string;
        upstream: string;
        target: string;
        state: string;
        in_flight: number;
        max_concurrency: number;
        call_limit: number;
        capacity: { deep_in_flight: number; limit: number };
        latency_ms: number;
        stall_after_ms: number | null;
        typical_deep_ms: number | null;
      };
      const rows = (JSON.parse(text) as { data: Row[] }).data;
      const row = (target: string) => rows.find((x) => x.target === target)!;
      assert.deepEqual(rows.map((x) => x.target).sort(), ['a/fail-a', 'a/m-a', 'c/slow-c']);
      assert.equal(row('a/m-a').state, 'healthy');
      // No deep call served: nothing learned about timing yet (never a made-up number).
      assert.deepEqual([row('a/m-a').stall_after_ms, row('a/m-a').typical_deep_ms], [null, null]);
      assert.ok(row('a/m-a').latency_ms > 0, 'a latency estimate after a served request');
      assert.equal(row('a/fail-a').state, 'cooling');
      assert.equal(row('a/fail-a').model, 'flaky');
      assert.equal(row('c/slow-c').in_flight, 1);
      assert.equal(row('c/slow-c').capacity.deep_in_flight, 0);
      assert.equal(row('c/slow-c').call_limit, row('c/slow-c').max_concurrency, 'the learned limit for every call starts at max_concurrency');
      assert.equal((await slow).status, 200);
      const after = (JSON.parse(await get('/admin/upstreams')) as { data: Row[] }).data.find((x) => x.target === 'c/slow-c')!;
      assert.equal(after.in_flight, 0);
    } finally {
      await r.close();
      await c.close();
    }
  });

  test('reload under load: two config changes, no failed request, new config served, in-flight streams complete', async () => {
    const v1: Version = { upstreams: { a: a.url }, models: { m: 'a/m-a', slow: 'a/slow-a' } };
    const v2: Version = { upstreams: { a: a.url, b: b.url }, models: { m: 'b/m-b', m2: 'b/m2-b', slow: 'a/slow-a' }, aExtra: 'max_concurrency: 50' };
    const v3: Version = { upstreams: { b: b.url }, models: { m: 'b/m-b', m2: 'b/m2-b' }, extraKey: true };
    const r = await start(v1);
    try {
      let stop = false;
      const failures: string[] = [];
      const servedBy = new Set<string>();
      let done = 0;
      const workers = Array.from({ length: 8 }, async (_x, w) => {
        for (let i = 0; !stop; i++) {
          const stream = (w + i) % 2 === 0;
          const res = await chat(r.url, 'm', { stream });
          if (res.status !== 200 || (stream && streamContent(res.text) === null)) failures.push(`${res.status} ${res.text.slice(0, 200)}`);
          if (res.upstream) servedBy.add(res.upstream);
          done++;
        }
      });

      await new Promise((res) => setTimeout(res, 400));
      // A long stream on upstream `a` as configured in v1; v2 changes `a`, so its provider is replaced.
      const slow1 = chat(r.url, 'slow', { stream: true });
      await new Promise((res) => setTimeout(res, 150));
      writeFileSync(r.file, yaml(v2));
      const reload = await fetch(`${r.adminUrl}/admin/reload`, { method: 'POST', headers: auth(ADMIN_KEY) });
      assert.equal(reload.status, 200);
      const summary = (await reload.json()) as { upstreams: Record<string, string[]>; models: string[] };
      assert.deepEqual(summary.upstreams, { added: ['b'], changed: ['a'], removed: [], unchanged: [] });
      assert.deepEqual(summary.models, ['m', 'm2', 'slow']);
      // New requests see v2 at once.
      const m2 = await chat(r.url, 'm2');
      assert.equal(m2.status, 200);
      assert.equal(m2.upstream, 'b');

      // A long stream on v2's `a`, which v3 removes.
      const slow2 = chat(r.url, 'slow', { stream: true });
      await new Promise((res) => setTimeout(res, 500));
      writeFileSync(r.file, yaml(v3));
      const s3 = r.gw.reload();
      assert.deepEqual(s3.upstreams, { added: [], changed: [], removed: ['a'], unchanged: ['b'] });
      const fresh = await chat(r.url, 'm2', { key: NEW_KEY });
      assert.equal(fresh.status, 200, 'the key added by the reload works');
      assert.equal((await chat(r.url, 'm', { key: NEW_KEY })).status, 404, 'the new key is limited to m2');
      assert.equal((await chat(r.url, 'slow')).status, 404, 'a removed model is gone');

      await new Promise((res) => setTimeout(res, 700));
      stop = true;
      await Promise.all(workers);

      for (const [name, p] of [
        ['slow1', slow1],
        ['slow2', slow2],
      ] as const) {
        const res = await p;
        assert.equal(res.status, 200, name);
        assert.equal(streamContent(res.text), 'a:abc', `${name} completed on the provider it started with`);
      }
      assert.deepEqual(failures, []);
      assert.ok(done > 50, `steady traffic (${done} requests)`);
      assert.deepEqual([...servedBy].sort(), ['a', 'b']);
      assert.equal(r.gw.current().config.upstreams.has('a'), false);

      const lines = r.logs.filter((l) => l['msg'] === 'config reloaded');
      assert.equal(lines.length, 2);
      for (const l of r.logs) assert.ok(!JSON.stringify(l).includes(UPSTREAM_KEY));
    } finally {
      await r.close();
    }
  });

  test('a broken file is rejected with its error and the running config keeps serving', async () => {
    const v1: Version = { upstreams: { a: a.url }, models: { m: 'a/m-a' } };
    const r = await start(v1);
    try {
      writeFileSync(r.file, yaml({ upstreams: { a: a.url }, models: { m: 'nope/m-a' } }));
      const res = await fetch(`${r.adminUrl}/admin/reload`, { method: 'POST', headers: auth(ADMIN_KEY) });
      assert.equal(res.status, 400);
      const body = (await res.json()) as { error: { message: string; code: string } };
      assert.equal(body.error.code, 'invalid_config');
      assert.match(body.error.message, /\/models\/0\/targets\/0\/upstream: unknown upstream "nope"/);

      writeFileSync(r.file, 'upstreams: [\n');
      assert.throws(
        () => r.gw.reload(),
        (err: unknown) => err instanceof ConfigError && /not valid YAML/.test(err.message),
      );
      assert.throws(() => r.gw.reload(join(dir, 'missing.yaml')), ConfigError);

      const ok = await chat(r.url, 'm');
      assert.equal(ok.status, 200);
      assert.equal(ok.upstream, 'a');
      const rejected = r.logs.filter((l) => l['msg'] === 'config reload rejected; the running config stays');
      assert.equal(rejected.length, 3);
      assert.equal(r.logs.filter((l) => l['msg'] === 'config reloaded').length, 0);
    } finally {
      await r.close();
    }
  });
});
