/**
 * Failover and upstream health, end to end: the real gateway on port 0 against scripted
 * fake upstreams on loopback, called with fetch and the official `openai` client.
 *
 * Every config here is written for its test: several upstreams (each its own fake), the
 * targets of a model priced 1, 2, 3 … and `strategy: cheap`, so targets are tried in
 * config order.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import OpenAI, { APIConnectionError, APIError } from 'openai';
import { hashKey } from '../../src/auth/keys.js';
import { ConfigError } from '../../src/config/load.js';
import { parseTestConfig } from '../helpers/config.js';
import { FakeUpstream, type ScriptedReply, type Step } from '../helpers/fake-upstream.js';
import { CLIENT_KEY, UPSTREAM_KEY, postChat, startGateway, waitFor, type RawReply, type TestGateway } from '../helpers/gateway.js';
import { metricSum } from '../helpers/metrics-text.js';

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

// ---------------------------------------------------------------------------------------
// Config

interface UpSpec {
  id: string;
  url: string;
  maxConcurrency?: number;
  firstByteMs?: number;
}

interface ModelSpec {
  name: string;
  /** Upstream ids, cheapest first. */
  targets: string[];
  fallbacks?: string[];
}

/** The target key (`<upstream>/<upstream model>`) health and metrics use. */
const targetKey = (upstream: string, model: string) => `${upstream}/${model}-up`;

/** A config: `routing` is written as JSON (YAML's flow style). */
function configYaml(routing: Record<string, unknown>, ups: UpSpec[], models: ModelSpec[]): string {
  const upstreams = ups
    .map(
      (u) => `  - id: ${u.id}
    provider: openai-compatible
    base_url: ${u.url}/v1
    api_key: \${TEST_UPSTREAM_KEY}
    max_concurrency: ${u.maxConcurrency ?? 64}
    timeouts: { connect_ms: 1000, first_byte_ms: ${u.firstByteMs ?? 5000}, idle_ms: 5000 }`,
    )
    .join('\n');
  const modelLines = models
    .map(
      (m) => `  - name: ${m.name}
    price: { input: 1, output: 1 }
    fallbacks: [${(m.fallbacks ?? []).join(', ')}]
    targets:
${m.targets.map((t, i) => `      - { upstream: ${t}, model: ${m.name}-up, price: { input: ${i + 1}, output: ${i + 1} } }`).join('\n')}`,
    )
    .join('\n');
  return `
server:
  log_level: info
routing: ${JSON.stringify({ strategy: 'cheap', ...routing })}
upstreams:
${upstreams}
models:
${modelLines}
keys:
  - name: team-a
    key_sha256: ${hashKey(CLIENT_KEY)}
    models: ["*"]
`;
}

/** Routing that never cools a target down and never runs out of retry budget. */
const NO_HEALTH = {
  cooldown: { failures: 1000, base_ms: 1, max_ms: 1 },
  retry_budget: { min_retries: 100000 },
  backoff_base_ms: 1,
  backoff_cap_ms: 1,
};

// ---------------------------------------------------------------------------------------
// Upstream replies

function completion(text: string): Record<string, unknown> {
  return {
    id: 'chatcmpl-failover',
    object: 'chat.completion',
    created: 1700000000,
    model: 'upstream-model',
    choices: [{ index: 0, message: { role: 'assistant', content: text, refusal: null }, finish_reason: 'stop' }],
    usage: { prompt_tokens: 5, completion_tokens: 2, total_tokens: 7 },
  };
}

const ok = (text: string): ScriptedReply => ({ status: 200, body: completion(text) });

function errorReply(status: number, headers: Record<string, string> = {}): ScriptedReply {
  return { status, headers, body: { error: { message: `upstream says ${status}`, type: 'server_error', param: null, code: null } } };
}

function sseChunk(content: string, finish: string | null = null): string {
  return `data: ${JSON.stringify({
    id: 'chatcmpl-sse',
    object: 'chat.completion.chunk',
    created: 1700000000,
    model: 'upstream-model',
    choices: [{ index: 0, delta: content ? { content } : {}, finish_reason: finish }],
  })}\n\n`;
}

const SSE = { 'content-type': 'text/event-stream; charset=utf-8' };

function sseReply(steps: Step[]): ScriptedReply {
  return { status: 200, headers: SSE, steps };
}

/** A complete stream of `parts`. */
function sseOk(parts: string[]): ScriptedReply {
  return sseReply([...parts.map((p) => sseChunk(p)), sseChunk('', 'stop'), 'data: [DONE]\n\n']);
}

/** A fake that is never listening: connection refused. */
async function deadUrl(): Promise<string> {
  const f = await new FakeUpstream().start();
  const url = f.url;
  await f.close();
  return url;
}

// ---------------------------------------------------------------------------------------
// Client side

type Raw = RawReply;

function post(gw: TestGateway, model: string, extra: Record<string, unknown> = {}): Promise<Raw> {
  return postChat(gw, { model, messages: [{ role: 'user', content: 'hello' }], ...extra });
}

function content(raw: Raw): string {
  const body = JSON.parse(raw.text) as { choices: { message: { content: string } }[] };
  return body.choices[0]!.message.content;
}

function errorOf(raw: Raw): { message: string; type: string; param: string | null; code: string | null } {
  assert.match(raw.headers.get('content-type') ?? '', /^application\/json/);
  return (JSON.parse(raw.text) as { error: { message: string; type: string; param: string | null; code: string | null } }).error;
}

function hasMetric(text: string, name: string): boolean {
  return text.split('\n').some((l) => l.startsWith(`# TYPE ${name} `));
}

async function targetState(gw: TestGateway, target: string): Promise<string> {
  const text = await gw.metricsText();
  const states = ['healthy', 'cooling', 'probing'].filter((s) => metricSum(text, 'switchyard_target_state', { target, state: s }) === 1);
  assert.equal(states.length, 1, `exactly one state for ${target}: ${states.join(',')}`);
  return states[0]!;
}

// ---------------------------------------------------------------------------------------

describe('failure classes', () => {
  let gw: TestGateway;
  const f: Record<string, FakeUpstream> = {};

  before(async () => {
    for (const id of ['a', 'b', 'slow', 'cred401', 'cred403', 'x401', 'y403', 'x2', 'y2', 'nf']) f[id] = await new FakeUpstream().start();
    f['b']!.on(() => ok('from b'));
    f['slow']!.on(() => ({ ...ok('too late'), delayMs: 2000 }));
    const credBody = { error: { message: `Incorrect API key provided: ${UPSTREAM_KEY.slice(0, 8)}***. See your account.`, type: 'invalid_request_error', param: null, code: 'invalid_api_key' } };
    for (const id of ['cred401', 'x401', 'x2']) f[id]!.on(() => ({ status: 401, body: credBody }));
    for (const id of ['cred403', 'y403', 'y2']) f[id]!.on(() => ({ status: 403, body: { error: { message: 'Project does not have access (secret-ish detail)', type: 'permission_error', param: null, code: 'forbidden' } } }));
    const ups: UpSpec[] = Object.entries(f).map(([id, fake]) => ({ id, url: fake.url, ...(id === 'slow' ? { firstByteMs: 300 } : {}) }));
    ups.push({ id: 'dead', url: await deadUrl() });
    gw = await startGateway(
      configYaml({ ...NO_HEALTH, max_attempts: 4, cooldown: { ...NO_HEALTH.cooldown, credential_ms: 60000 } }, ups, [
        { name: 'm-status', targets: ['a', 'b'] },
        { name: 'm-404', targets: ['nf', 'b'] },
        { name: 'm-refused', targets: ['dead', 'b'] },
        { name: 'm-timeout', targets: ['slow', 'b'] },
        { name: 'm-cred401', targets: ['cred401', 'b'] },
        { name: 'm-cred403', targets: ['cred403', 'b'] },
        { name: 'm-cred-only', targets: ['x401', 'y403'] },
        { name: 'm-cred-only2', targets: ['x2', 'y2'] },
      ]),
    );
  });
  after(async () => {
    await gw.close();
    await Promise.all(Object.values(f).map((u) => u.close()));
  });

  test('a first attempt that succeeds: one attempt, no retry counted', async () => {
    f['a']!.on(() => ok('from a'));
    const m0 = await gw.metricsText();
    const raw = await post(gw, 'm-status');
    assert.equal(raw.status, 200);
    assert.equal(content(raw), 'from a');
    assert.equal(raw.headers.get('x-switchyard-attempts'), '1');
    assert.equal(raw.headers.get('x-switchyard-upstream'), 'a');
    const m1 = await gw.metricsText();
    assert.equal(metricSum(m1, 'switchyard_retries_total') - metricSum(m0, 'switchyard_retries_total'), 0);
    assert.equal(metricSum(m1, 'switchyard_upstream_attempts_total', { upstream: 'a', outcome: 'ok' }) - metricSum(m0, 'switchyard_upstream_attempts_total', { upstream: 'a', outcome: 'ok' }), 1);
  });

  for (const status of [408, 429, 500, 502, 503, 504, 529]) {
    test(`HTTP ${status} is retried on the next target; the client gets its 200`, async () => {
      // A 429 cools `a` for base_ms (1 ms): let that pass before each case.
      await sleep(10);
      f['a']!.on(() => errorReply(status));
      const na = f['a']!.requests.length;
      const nb = f['b']!.requests.length;
      const cls = status === 429 ? 'rate_limited' : status === 529 ? 'overloaded' : 'server';
      const m0 = await gw.metricsText();

      const raw = await post(gw, 'm-status');
      assert.equal(raw.status, 200, raw.text);
      assert.equal(content(raw), 'from b');
      assert.equal(raw.headers.get('x-switchyard-upstream'), 'b');
      assert.equal(raw.headers.get('x-switchyard-attempts'), '2');
      assert.equal(f['a']!.requests.length, na + 1, 'first target tried once');
      assert.equal(f['b']!.requests.length, nb + 1, 'second target served');

      const m1 = await gw.metricsText();
      const d = (name: string, labels: Record<string, string>) => metricSum(m1, name, labels) - metricSum(m0, name, labels);
      assert.equal(d('switchyard_upstream_attempts_total', { upstream: 'a', outcome: cls }), 1);
      assert.equal(d('switchyard_upstream_attempts_total', { upstream: 'b', outcome: 'ok' }), 1);
      assert.equal(d('switchyard_upstream_errors_total', { upstream: 'a', class: cls }), 1);
      assert.equal(d('switchyard_retries_total', { model: 'm-status' }), 1);
    });
  }

  for (const status of [400, 413, 422]) {
    test(`HTTP ${status} goes back to the client as it is, with no second attempt`, async () => {
      await sleep(10);
      const upstreamError = { message: `your request is wrong (${status})`, type: 'invalid_request_error', param: 'messages', code: `code_${status}` };
      f['a']!.on(() => ({ status, body: { error: upstreamError } }));
      const na = f['a']!.requests.length;
      const nb = f['b']!.requests.length;
      const m0 = await gw.metricsText();

      const raw = await post(gw, 'm-status');
      assert.equal(raw.status, status);
      assert.deepEqual(JSON.parse(raw.text), { error: upstreamError });
      assert.equal(raw.headers.get('x-switchyard-attempts'), '1');
      assert.equal(f['a']!.requests.length, na + 1);
      assert.equal(f['b']!.requests.length, nb, 'no second attempt');

      // Same through the SDK, streaming or not.
      const err = await gw
        .client()
        .chat.completions.create({ model: 'm-status', messages: [{ role: 'user', content: 'hi' }], stream: true })
        .then(
          () => null,
          (e: unknown) => e,
        );
      assert.ok(err instanceof APIError && !(err instanceof APIConnectionError), `APIError expected, got ${String(err)}`);
      assert.equal(err.status, status);
      assert.equal(err.code, `code_${status}`);
      assert.equal(f['b']!.requests.length, nb, 'no second attempt (stream)');

      const m1 = await gw.metricsText();
      assert.equal(metricSum(m1, 'switchyard_retries_total') - metricSum(m0, 'switchyard_retries_total'), 0);
      assert.equal(
        metricSum(m1, 'switchyard_upstream_attempts_total', { upstream: 'a', outcome: 'bad_request' }) - metricSum(m0, 'switchyard_upstream_attempts_total', { upstream: 'a', outcome: 'bad_request' }),
        2,
      );
    });
  }

  test('HTTP 404 (this upstream lacks the model) moves on to the next target, and later requests skip that target', async () => {
    f['nf']!.on(() => ({ status: 404, body: { error: { message: 'The model `m-404-up` does not exist', type: 'invalid_request_error', param: null, code: 'model_not_found' } } }));
    const nb = f['b']!.requests.length;
    const m0 = await gw.metricsText();
    const raw = await post(gw, 'm-404');
    assert.equal(raw.status, 200, raw.text);
    assert.equal(content(raw), 'from b');
    assert.equal(raw.headers.get('x-switchyard-attempts'), '2');
    const m1 = await gw.metricsText();
    assert.equal(metricSum(m1, 'switchyard_upstream_attempts_total', { upstream: 'nf', outcome: 'not_found' }) - metricSum(m0, 'switchyard_upstream_attempts_total', { upstream: 'nf', outcome: 'not_found' }), 1);
    assert.equal(await targetState(gw, targetKey('nf', 'm-404')), 'cooling');

    const again = await post(gw, 'm-404');
    assert.equal(again.status, 200);
    assert.equal(again.headers.get('x-switchyard-attempts'), '1', 'straight to the target that has the model');
    assert.equal(f['nf']!.requests.length, 1, 'the 404 target got no more requests');
    assert.equal(f['b']!.requests.length, nb + 2);
  });

  test('connection refused is retried on the next target', async () => {
    const nb = f['b']!.requests.length;
    const m0 = await gw.metricsText();
    const raw = await post(gw, 'm-refused');
    assert.equal(raw.status, 200, raw.text);
    assert.equal(content(raw), 'from b');
    assert.equal(raw.headers.get('x-switchyard-attempts'), '2');
    assert.equal(f['b']!.requests.length, nb + 1);
    const m1 = await gw.metricsText();
    assert.equal(metricSum(m1, 'switchyard_upstream_attempts_total', { upstream: 'dead', outcome: 'connect' }) - metricSum(m0, 'switchyard_upstream_attempts_total', { upstream: 'dead', outcome: 'connect' }), 1);
  });

  test('a timeout before the response headers is retried on the next target', async () => {
    const ns = f['slow']!.requests.length;
    const nb = f['b']!.requests.length;
    const m0 = await gw.metricsText();
    const raw = await post(gw, 'm-timeout');
    assert.equal(raw.status, 200, raw.text);
    assert.equal(content(raw), 'from b');
    assert.equal(raw.headers.get('x-switchyard-upstream'), 'b');
    assert.equal(f['slow']!.requests.length, ns + 1);
    assert.equal(f['b']!.requests.length, nb + 1);
    assert.ok(raw.ms >= 280, `answered after ${raw.ms} ms: the first_byte_ms (300) was not waited for`);
    assert.ok(raw.ms < 1800, `answered after ${raw.ms} ms: the slow upstream was waited for`);
    const m1 = await gw.metricsText();
    assert.equal(metricSum(m1, 'switchyard_upstream_errors_total', { upstream: 'slow', class: 'timeout' }) - metricSum(m0, 'switchyard_upstream_errors_total', { upstream: 'slow', class: 'timeout' }), 1);
  });

  for (const [status, id, model] of [
    [401, 'cred401', 'm-cred401'],
    [403, 'cred403', 'm-cred403'],
  ] as const) {
    test(`an upstream ${status} moves on to the next target, and later requests skip that upstream`, async () => {
      const nb = f['b']!.requests.length;
      const raw = await post(gw, model);
      assert.equal(raw.status, 200, raw.text);
      assert.equal(content(raw), 'from b');
      assert.equal(raw.headers.get('x-switchyard-attempts'), '2');
      assert.equal(f[id]!.requests.length, 1);
      assert.equal(await targetState(gw, targetKey(id, model)), 'cooling');

      for (let i = 0; i < 3; i++) {
        const again = await post(gw, model);
        assert.equal(again.status, 200);
        assert.equal(again.headers.get('x-switchyard-attempts'), '1', 'straight to the healthy target');
        assert.equal(again.headers.get('x-switchyard-upstream'), 'b');
      }
      assert.equal(f[id]!.requests.length, 1, `the ${status} upstream got no more requests`);
      assert.equal(f['b']!.requests.length, nb + 4);
      assert.equal(await targetState(gw, targetKey(id, model)), 'cooling');
    });
  }

  test('when every target answers 401/403 the client gets 502 upstream_auth_failed without the upstream body', async () => {
    const raw = await post(gw, 'm-cred-only');
    assert.equal(raw.status, 502);
    const e = errorOf(raw);
    assert.equal(e.code, 'upstream_auth_failed');
    assert.equal(e.type, 'server_error');
    assert.ok(!raw.text.includes('Incorrect API key'), 'the 401 body leaked');
    assert.ok(!raw.text.includes('invalid_api_key'), 'the 401 code leaked');
    assert.ok(!raw.text.includes('secret-ish'), 'the 403 body leaked');
    assert.ok(!raw.text.includes('permission_error'), 'the 403 type leaked');
    assert.equal(raw.headers.get('x-should-retry'), 'false');
    assert.ok(f['x401']!.requests.length >= 1 && f['y403']!.requests.length >= 1, 'both targets were tried');
  });

  test('within one request an upstream that answered 401/403 is not tried again (max_attempts 4, two targets)', async () => {
    const raw = await post(gw, 'm-cred-only2');
    assert.equal(raw.status, 502);
    assert.equal(errorOf(raw).code, 'upstream_auth_failed');
    const counts = `401 upstream: ${f['x2']!.requests.length}, 403 upstream: ${f['y2']!.requests.length} requests, x-switchyard-attempts ${raw.headers.get('x-switchyard-attempts')}`;
    assert.equal(f['x2']!.requests.length, 1, counts);
    assert.equal(f['y2']!.requests.length, 1, counts);
  });
});

describe('Retry-After', () => {
  let gw: TestGateway;
  let r: FakeUpstream;
  const CAP = 1500;
  const JITTER_CAP = 20;

  before(async () => {
    r = await new FakeUpstream().start();
    gw = await startGateway(
      configYaml({ ...NO_HEALTH, max_attempts: 2, backoff_base_ms: 10, backoff_cap_ms: JITTER_CAP, retry_after_cap_ms: CAP }, [{ id: 'r', url: r.url }], [
        { name: 'm-ra', targets: ['r'] },
      ]),
    );
  });
  after(async () => {
    await gw.close();
    await r.close();
  });

  async function gapAfter429(headers: Record<string, string>): Promise<number> {
    let calls = 0;
    r.on(() => (calls++ === 0 ? { ...errorReply(429, headers), body: { error: { message: 'slow down', type: 'requests', param: null, code: 'rate_limit_exceeded' } } } : ok('after the wait')));
    const n = r.requests.length;
    const raw = await post(gw, 'm-ra');
    assert.equal(raw.status, 200, raw.text);
    assert.equal(content(raw), 'after the wait');
    assert.equal(raw.headers.get('x-switchyard-attempts'), '2');
    assert.equal(r.requests.length, n + 2);
    return r.requests[n + 1]!.receivedAt - r.requests[n]!.receivedAt;
  }

  test('retry-after-ms: 400 — the second attempt waits at least 400 ms', async () => {
    const gap = await gapAfter429({ 'retry-after-ms': '400' });
    assert.ok(gap >= 395, `second attempt after ${gap} ms`);
    assert.ok(gap <= 400 + JITTER_CAP + 250, `second attempt after ${gap} ms`);
  });

  test('Retry-After: 1 — the second attempt waits at least 1 s', async () => {
    const gap = await gapAfter429({ 'retry-after': '1' });
    assert.ok(gap >= 995, `second attempt after ${gap} ms`);
    assert.ok(gap <= 1000 + JITTER_CAP + 250, `second attempt after ${gap} ms`);
  });

  test('Retry-After: 30, past routing.retry_after_cap_ms (1500): no second attempt sits out a wait, the 429 is final at once with the capped wait', async () => {
    r.on(() => ({ ...errorReply(429, { 'retry-after': '30' }), body: { error: { message: 'slow down', type: 'requests', param: null, code: 'rate_limit_exceeded' } } }));
    const n = r.requests.length;
    const t0 = Date.now();
    const raw = await post(gw, 'm-ra');
    assert.equal(raw.status, 429, raw.text);
    assert.equal(r.requests.length, n + 1, 'asked once');
    assert.ok(Date.now() - t0 < CAP, `answered in ${Date.now() - t0} ms`);
    assert.equal(raw.headers.get('retry-after-ms'), String(CAP));
    assert.equal(raw.headers.get('x-should-retry'), 'false');
  });
});

describe('full-jitter backoff', () => {
  let gw: TestGateway;
  let j: FakeUpstream;
  const BASE = 150;
  const CAP = 250;

  before(async () => {
    j = await new FakeUpstream().start();
    gw = await startGateway(
      configYaml({ ...NO_HEALTH, max_attempts: 3, backoff_base_ms: BASE, backoff_cap_ms: CAP }, [{ id: 'j', url: j.url }], [{ name: 'm-jit', targets: ['j'] }]),
    );
  });
  after(async () => {
    await gw.close();
    await j.close();
  });

  test('a single target failing 503 twice then succeeding: 3 attempts, each wait within [0, backoff ceiling]', async () => {
    const gaps: number[] = [];
    const m0 = await gw.metricsText();
    const RUNS = 8;
    for (let run = 0; run < RUNS; run++) {
      let calls = 0;
      j.on(() => (calls++ < 2 ? errorReply(503) : ok(`run ${run}`)));
      const n = j.requests.length;
      const raw = await post(gw, 'm-jit');
      assert.equal(raw.status, 200, raw.text);
      assert.equal(content(raw), `run ${run}`);
      assert.equal(raw.headers.get('x-switchyard-attempts'), '3');
      assert.equal(j.requests.length, n + 3);
      const [t1, t2, t3] = j.requests.slice(n).map((q) => q.receivedAt) as [number, number, number];
      // Round 0: random(0, min(cap, base)) = [0, 150); round 1: [0, min(250, 300)) = [0, 250).
      assert.ok(t2 - t1 >= 0 && t2 - t1 <= BASE + 80, `run ${run}: first wait ${t2 - t1} ms`);
      assert.ok(t3 - t2 >= 0 && t3 - t2 <= CAP + 80, `run ${run}: second wait ${t3 - t2} ms`);
      gaps.push((t2 - t1) / BASE, (t3 - t2) / CAP);
    }
    // Full jitter, not a fixed delay: some waits land in the lower half of their range
    // (each does with probability 1/2).
    assert.ok(gaps.some((g) => g < 0.5), `no short wait in ${gaps.map((g) => g.toFixed(2)).join(', ')}`);
    const m1 = await gw.metricsText();
    assert.equal(metricSum(m1, 'switchyard_retries_total', { model: 'm-jit' }) - metricSum(m0, 'switchyard_retries_total', { model: 'm-jit' }), 2 * RUNS);
    assert.equal(metricSum(m1, 'switchyard_upstream_attempts_total', { upstream: 'j', outcome: 'server' }) - metricSum(m0, 'switchyard_upstream_attempts_total', { upstream: 'j', outcome: 'server' }), 2 * RUNS);
  });

  test('failing three times: the client gets the last 503 with x-should-retry: false after 3 attempts', async () => {
    j.on(() => errorReply(503));
    const n = j.requests.length;
    const raw = await post(gw, 'm-jit');
    assert.equal(raw.status, 503);
    assert.equal(raw.headers.get('x-switchyard-attempts'), '3');
    assert.equal(raw.headers.get('x-should-retry'), 'false');
    assert.equal(raw.headers.get('retry-after'), null, 'a final 5xx names no wait (errors/reply.ts)');
    assert.equal(errorOf(raw).message, 'upstream says 503');
    assert.equal(j.requests.length, n + 3);
  });
});

describe('fallback chain', () => {
  let gw: TestGateway;
  const f: Record<string, FakeUpstream> = {};
  const order: string[] = [];

  before(async () => {
    for (const id of ['a1', 'a2', 'b1', 'c1']) {
      const fake = await new FakeUpstream().start();
      f[id] = fake;
    }
    for (const id of ['a1', 'a2', 'b1']) f[id]!.on(() => (order.push(id), errorReply(503)));
    f['c1']!.on((req) => (order.push('c1'), ok(`C answered for ${String(req.json?.['model'])}`)));
    gw = await startGateway(
      configYaml(
        { ...NO_HEALTH, max_attempts: 4 },
        Object.entries(f).map(([id, fake]) => ({ id, url: fake.url })),
        [
          { name: 'A', targets: ['a1', 'a2'], fallbacks: ['B', 'C'] },
          { name: 'B', targets: ['b1'] },
          { name: 'C', targets: ['c1'] },
        ],
      ),
    );
  });
  after(async () => {
    await gw.close();
    await Promise.all(Object.values(f).map((u) => u.close()));
  });

  test("A's targets, then B, then C: the client gets C's answer and x-switchyard-fallback A->C", async () => {
    const m0 = await gw.metricsText();
    const raw = await post(gw, 'A');
    assert.equal(raw.status, 200, raw.text);
    assert.equal(content(raw), 'C answered for C-up');
    assert.equal(raw.headers.get('x-switchyard-fallback'), 'A->C');
    assert.equal(raw.headers.get('x-switchyard-upstream'), 'c1');
    assert.equal(raw.headers.get('x-switchyard-model'), 'C-up');
    assert.equal(raw.headers.get('x-switchyard-attempts'), '4');

    assert.deepEqual(order, ['a1', 'a2', 'b1', 'c1']);
    const at = ['a1', 'a2', 'b1', 'c1'].map((id) => {
      assert.equal(f[id]!.requests.length, 1, `${id} tried once`);
      return f[id]!.requests[0]!.receivedAt;
    });
    for (let i = 1; i < at.length; i++) assert.ok(at[i]! >= at[i - 1]!, `receivedAt in order: ${at.join(', ')}`);
    assert.equal(f['b1']!.requests[0]!.json?.['model'], 'B-up', 'each fallback gets its own upstream model id');

    const m1 = await gw.metricsText();
    const d = (name: string, labels: Record<string, string> = {}) => metricSum(m1, name, labels) - metricSum(m0, name, labels);
    assert.equal(d('switchyard_fallbacks_total', { from: 'A', to: 'B' }), 1);
    assert.equal(d('switchyard_fallbacks_total', { from: 'A', to: 'C' }), 1);
    assert.equal(d('switchyard_fallbacks_total'), 2);
    assert.equal(d('switchyard_retries_total'), 3);
    for (const id of ['a1', 'a2', 'b1']) assert.equal(d('switchyard_upstream_attempts_total', { upstream: id, outcome: 'server' }), 1, id);
    assert.equal(d('switchyard_upstream_attempts_total', { upstream: 'c1', outcome: 'ok' }), 1);
    assert.equal(d('switchyard_upstream_attempts_total'), 4);

    const line = await waitFor(() => gw.finished().at(-1), 2000, 'log line');
    assert.equal(line['attempts'], 4);
    assert.equal(line['upstream'], 'c1');
  });

  test('a fallback that serves: x-switchyard-fallback names the primary and that fallback (A->B)', async () => {
    f['b1']!.on(() => (order.push('b1'), ok('B answered')));
    order.length = 0;
    const raw = await post(gw, 'A');
    assert.equal(raw.status, 200, raw.text);
    assert.equal(content(raw), 'B answered');
    assert.equal(raw.headers.get('x-switchyard-fallback'), 'A->B');
    assert.equal(raw.headers.get('x-switchyard-attempts'), '3');
    assert.deepEqual(order, ['a1', 'a2', 'b1']);
  });

  test('a model served by its own targets has no x-switchyard-fallback header', async () => {
    const raw = await post(gw, 'C');
    assert.equal(raw.status, 200);
    assert.equal(raw.headers.get('x-switchyard-fallback'), null);
  });

  test('a fallback cycle is rejected by parseConfig, naming the cycle', () => {
    const env = { TEST_UPSTREAM_KEY: UPSTREAM_KEY };
    const ups = [{ id: 'u', url: 'http://127.0.0.1:9' }];
    const cases: [ModelSpec[], RegExp][] = [
      [
        [
          { name: 'A', targets: ['u'], fallbacks: ['B'] },
          { name: 'B', targets: ['u'], fallbacks: ['A'] },
        ],
        /fallback cycle A -> B -> A/,
      ],
      [
        [
          { name: 'A', targets: ['u'], fallbacks: ['B'] },
          { name: 'B', targets: ['u'], fallbacks: ['C'] },
          { name: 'C', targets: ['u'], fallbacks: ['A'] },
        ],
        /fallback cycle A -> B -> C -> A/,
      ],
      [[{ name: 'A', targets: ['u'], fallbacks: ['A'] }], /fallback cycle A -> A/],
    ];
    for (const [models, re] of cases) {
      let thrown: unknown;
      try {
        parseTestConfig(configYaml({}, ups, models), env);
      } catch (err) {
        thrown = err;
      }
      assert.ok(thrown instanceof ConfigError, `ConfigError expected, got ${String(thrown)}`);
      assert.match(thrown.message, re);
    }
    // The acyclic chain parses.
    const good = parseTestConfig(
      configYaml({}, ups, [
        { name: 'A', targets: ['u'], fallbacks: ['B', 'C'] },
        { name: 'B', targets: ['u'], fallbacks: ['C'] },
        { name: 'C', targets: ['u'] },
      ]),
      env,
    );
    assert.deepEqual(good.models.get('A')?.fallbacks, ['B', 'C']);
  });
});

describe('streams: no retry after the first byte, first-token timeout', () => {
  let gw: TestGateway;
  const f: Record<string, FakeUpstream> = {};

  before(async () => {
    for (const id of ['s1', 's2', 'f1', 'f2']) f[id] = await new FakeUpstream().start();
    gw = await startGateway(
      configYaml(
        { ...NO_HEALTH, max_attempts: 4, first_token_timeout_ms: 300 },
        Object.entries(f).map(([id, fake]) => ({ id, url: fake.url })),
        [
          { name: 'm-reset', targets: ['s1', 's2'] },
          { name: 'm-silent', targets: ['f1', 'f2'] },
        ],
      ),
    );
  });
  after(async () => {
    await gw.close();
    await Promise.all(Object.values(f).map((u) => u.close()));
  });

  test('a reset after two events: the client gets both chunks then an error; the second target gets nothing', async () => {
    f['s1']!.on(() => sseReply([sseChunk('Hel'), { delayMs: 20 }, sseChunk('lo'), { delayMs: 50 }, { destroy: true }]));
    f['s2']!.on(() => sseOk(['should', 'not', 'be', 'used']));
    const m0 = await gw.metricsText();

    const stream = await gw.client().chat.completions.create({ model: 'm-reset', messages: [{ role: 'user', content: 'hi' }], stream: true });
    const got: string[] = [];
    let thrown: unknown;
    try {
      for await (const c of stream) got.push(c.choices[0]?.delta.content ?? '');
    } catch (err) {
      thrown = err;
    }
    assert.deepEqual(got, ['Hel', 'lo']);
    assert.ok(thrown instanceof APIError, `APIError expected, got ${String(thrown)}`);
    assert.ok(!(thrown instanceof APIConnectionError), 'an error event, not a cut connection');

    // The same over raw HTTP: a 200 stream ending in one error event, no [DONE].
    const raw = await post(gw, 'm-reset', { stream: true });
    assert.equal(raw.status, 200);
    assert.equal(raw.headers.get('x-switchyard-upstream'), 's1');
    const events = raw.text.split(/(?<=\n\n)/).filter((e) => e.trim() !== '');
    assert.equal(events.length, 3, raw.text);
    assert.equal(events[0], sseChunk('Hel'));
    assert.equal(events[1], sseChunk('lo'));
    assert.match(events[2]!, /^data: \{"error":\{/);
    assert.ok(!raw.text.includes('[DONE]'));

    assert.equal(f['s1']!.requests.length, 2);
    assert.equal(f['s2']!.requests.length, 0, 'no retry once bytes reached the client');
    const m1 = await gw.metricsText();
    assert.equal(metricSum(m1, 'switchyard_retries_total') - metricSum(m0, 'switchyard_retries_total'), 0);
    assert.equal(metricSum(m1, 'switchyard_upstream_errors_total', { upstream: 's1', class: 'stream' }) - metricSum(m0, 'switchyard_upstream_errors_total', { upstream: 's1', class: 'stream' }), 2);
  });

  test('first-token timeout (300 ms): a silent first target is abandoned and the second streams cleanly', async () => {
    f['f1']!.on(() => sseReply([{ delayMs: 2000 }, sseChunk('too late'), sseChunk('', 'stop'), 'data: [DONE]\n\n']));
    f['f2']!.on(() => sseOk(['Hello', ' from', ' f2']));

    const t0 = Date.now();
    const stream = await gw.client().chat.completions.create({ model: 'm-silent', messages: [{ role: 'user', content: 'hi' }], stream: true });
    const got: string[] = [];
    const finishes: (string | null | undefined)[] = [];
    for await (const c of stream) {
      got.push(c.choices[0]?.delta.content ?? '');
      finishes.push(c.choices[0]?.finish_reason);
    }
    const ms = Date.now() - t0;
    assert.deepEqual(got, ['Hello', ' from', ' f2', '']);
    assert.equal(finishes.at(-1), 'stop');
    assert.ok(ms >= 280, `done after ${ms} ms, before the first-token timeout`);
    assert.ok(ms < 1500, `done after ${ms} ms: the silent upstream was waited for`);
    assert.equal(f['f1']!.requests.length, 1);
    assert.equal(f['f2']!.requests.length, 1);
    await waitFor(() => f['f1']!.requests[0]!.abortedAt !== null, 2000, 'the silent upstream connection to be closed');

    const raw = await post(gw, 'm-silent', { stream: true });
    assert.equal(raw.status, 200);
    assert.equal(raw.headers.get('x-switchyard-upstream'), 'f2');
    assert.equal(raw.headers.get('x-switchyard-attempts'), '2');
    assert.ok(raw.text.endsWith('data: [DONE]\n\n'));
    assert.doesNotMatch(raw.text, /"error"|too late/);
  });
});

describe('cooldown / circuit breaker', () => {
  let gw: TestGateway;
  const f: Record<string, FakeUpstream> = {};
  const BASE = 400;

  before(async () => {
    for (const id of ['x', 'y', 'p', 'q']) f[id] = await new FakeUpstream().start();
    f['y']!.on(() => ok('from y'));
    gw = await startGateway(
      configYaml(
        { ...NO_HEALTH, max_attempts: 2, cooldown: { failures: 2, base_ms: BASE, max_ms: 10_000, credential_ms: 60_000 } },
        Object.entries(f).map(([id, fake]) => ({ id, url: fake.url })),
        [
          { name: 'm-cb', targets: ['x', 'y'] },
          { name: 'm-all', targets: ['p', 'q'] },
        ],
      ),
    );
  });
  after(async () => {
    await gw.close();
    await Promise.all(Object.values(f).map((u) => u.close()));
  });

  test('after 2 failures the target is skipped while cooling, then one probe; a good probe puts it back', async () => {
    const X = targetKey('x', 'm-cb');
    f['x']!.on(() => errorReply(503));
    assert.equal(await targetState(gw, X), 'healthy');

    const r1 = await post(gw, 'm-cb');
    assert.equal(r1.status, 200);
    assert.equal(r1.headers.get('x-switchyard-attempts'), '2');
    assert.equal(await targetState(gw, X), 'healthy', 'one failure does not open the circuit');
    const r2 = await post(gw, 'm-cb');
    assert.equal(r2.status, 200);
    const trippedAt = f['x']!.requests[1]!.receivedAt;
    assert.equal(f['x']!.requests.length, 2);
    assert.equal(await targetState(gw, X), 'cooling');

    // Cooling: x gets nothing, y serves on the first attempt.
    for (let i = 0; i < 3; i++) {
      const r = await post(gw, 'm-cb');
      assert.equal(r.status, 200);
      assert.equal(r.headers.get('x-switchyard-upstream'), 'y');
      assert.equal(r.headers.get('x-switchyard-attempts'), '1');
    }
    assert.equal(f['x']!.requests.length, 2, 'no request to a cooling target');
    assert.ok(Date.now() - trippedAt < BASE, 'the checks above ran inside the cooldown');

    // After base_ms: exactly one probe, even with several requests at once.
    await sleep(Math.max(0, trippedAt + BASE + 60 - Date.now()));
    assert.equal(await targetState(gw, X), 'probing');
    f['x']!.on(() => ({ ...ok('from x'), delayMs: 250 }));
    const ny = f['y']!.requests.length;
    const burst = await Promise.all([post(gw, 'm-cb'), post(gw, 'm-cb'), post(gw, 'm-cb')]);
    for (const r of burst) assert.equal(r.status, 200);
    assert.equal(f['x']!.requests.length, 3, 'exactly one probe went to x');
    assert.equal(f['y']!.requests.length, ny + 2, 'the others went to y');
    assert.deepEqual(burst.map((r) => content(r)).sort(), ['from x', 'from y', 'from y']);

    // The probe succeeded: x is back in rotation (cheapest, so first).
    assert.equal(await targetState(gw, X), 'healthy');
    f['x']!.on(() => ok('from x'));
    for (let i = 0; i < 2; i++) {
      const r = await post(gw, 'm-cb');
      assert.equal(content(r), 'from x');
      assert.equal(r.headers.get('x-switchyard-attempts'), '1');
    }
    assert.equal(f['x']!.requests.length, 5);
  });

  test('a failed probe opens the circuit again for twice base_ms', async () => {
    const X = targetKey('x', 'm-cb');
    f['x']!.on(() => errorReply(503));
    await post(gw, 'm-cb');
    await post(gw, 'm-cb');
    const n = f['x']!.requests.length;
    const trippedAt = f['x']!.requests[n - 1]!.receivedAt;
    assert.equal(await targetState(gw, X), 'cooling');
    await sleep(Math.max(0, trippedAt + BASE + 60 - Date.now()));
    const probe = await post(gw, 'm-cb');
    assert.equal(probe.status, 200);
    assert.equal(f['x']!.requests.length, n + 1, 'the probe');
    const probedAt = f['x']!.requests[n]!.receivedAt;
    assert.equal(await targetState(gw, X), 'cooling');
    // Past one base_ms after the failed probe, but inside 2 x base_ms: still skipped.
    await sleep(Math.max(0, probedAt + BASE + 100 - Date.now()));
    const r = await post(gw, 'm-cb');
    assert.equal(r.headers.get('x-switchyard-upstream'), 'y');
    assert.equal(f['x']!.requests.length, n + 1, 'still cooling after one base_ms');
    assert.ok(Date.now() - probedAt < 2 * BASE, 'checked inside the doubled cooldown');
    assert.equal(await targetState(gw, X), 'cooling');
    // Back in rotation after a good probe, for the next test's sake.
    f['x']!.on(() => ok('from x'));
    await sleep(Math.max(0, probedAt + 2 * BASE + 60 - Date.now()));
    const back = await post(gw, 'm-cb');
    assert.equal(content(back), 'from x');
    assert.equal(await targetState(gw, X), 'healthy');
  });

  test('when every target is cooling, the one whose cooldown ends first is still tried', async () => {
    const P = targetKey('p', 'm-all');
    const Q = targetKey('q', 'm-all');
    f['p']!.on(() => errorReply(503));
    f['q']!.on(() => ({ ...errorReply(503), delayMs: 80 })); // q fails later, so it cools later
    for (let i = 0; i < 2; i++) {
      const r = await post(gw, 'm-all');
      assert.equal(r.status, 503);
      assert.equal(r.headers.get('x-switchyard-attempts'), '2');
    }
    assert.equal(f['p']!.requests.length, 2);
    assert.equal(f['q']!.requests.length, 2);
    assert.equal(await targetState(gw, P), 'cooling');
    assert.equal(await targetState(gw, Q), 'cooling');

    f['p']!.on(() => ok('from p'));
    f['q']!.on(() => ok('from q'));
    const r = await post(gw, 'm-all');
    assert.equal(r.status, 200, 'not refused outright');
    assert.equal(content(r), 'from p', 'p cools until ~80 ms before q');
    assert.equal(r.headers.get('x-switchyard-attempts'), '1');
    assert.equal(f['q']!.requests.length, 2);
    assert.equal(await targetState(gw, P), 'healthy');
  });
});

describe('concurrency cap and queue', () => {
  let gw: TestGateway;
  const f: Record<string, FakeUpstream> = {};
  let active = 0;
  let maxActive = 0;

  before(async () => {
    f['sq'] = await new FakeUpstream().start();
    f['sq1'] = await new FakeUpstream().start();
    f['sq']!.on(async () => {
      active++;
      maxActive = Math.max(maxActive, active);
      await sleep(400);
      active--;
      return ok('served');
    });
    f['sq1']!.on(() => ({ ...ok('slow'), delayMs: 1100 }));
    gw = await startGateway(
      configYaml(
        { ...NO_HEALTH, max_attempts: 2, queue: { max: 2, timeout_ms: 700 } },
        [
          { id: 'sq', url: f['sq']!.url, maxConcurrency: 2 },
          { id: 'sq1', url: f['sq1']!.url, maxConcurrency: 1 },
        ],
        [
          { name: 'm-q', targets: ['sq'] },
          { name: 'm-q1', targets: ['sq1'] },
        ],
      ),
    );
  });
  after(async () => {
    await gw.close();
    await Promise.all(Object.values(f).map((u) => u.close()));
  });

  test('cap 2, queue 2: of 6 concurrent requests 2 are served, 2 queue then are served, 2 are refused fast', async () => {
    const m0 = await gw.metricsText();
    assert.ok(hasMetric(m0, 'switchyard_queue_wait_seconds'), 'switchyard_queue_wait_seconds exists');
    assert.ok(hasMetric(m0, 'switchyard_queue_depth'), 'switchyard_queue_depth exists');
    const t0 = Date.now();
    const pending = Array.from({ length: 6 }, () => post(gw, 'm-q'));
    // While two wait: the queue depth gauge shows them.
    await waitFor(() => f['sq']!.requests.length === 2 || undefined, 2000, 'two requests upstream');
    await sleep(100);
    const mid = await gw.metricsText();
    assert.equal(metricSum(mid, 'switchyard_queue_depth', { upstream: 'sq' }), 2);
    const results = await Promise.all(pending);

    const served = results.filter((r) => r.status === 200);
    const refused = results.filter((r) => r.status !== 200);
    assert.equal(served.length, 4, `statuses ${results.map((r) => r.status).join(',')}`);
    assert.equal(refused.length, 2);
    for (const r of refused) {
      assert.equal(r.status, 503);
      assert.equal(errorOf(r).code, 'upstream_overloaded');
      assert.ok(r.headers.get('retry-after'), 'Retry-After on upstream_overloaded');
      assert.ok(r.ms < 250, `refused after ${r.ms} ms: not fast`);
    }
    const slow = served.map((r) => r.ms).sort((a, b) => a - b);
    assert.ok(slow[2]! >= 750, `queued requests answered after ${slow.join(', ')} ms (two rounds of 400 ms)`);

    assert.equal(maxActive, 2, 'never more than max_concurrency at the upstream');
    assert.equal(f['sq']!.requests.length, 4);
    const at = f['sq']!.requests.map((q) => q.receivedAt - t0).sort((a, b) => a - b);
    assert.ok(at[2]! >= 380, `the queued requests reached the upstream at ${at.join(', ')} ms`);

    const m1 = await gw.metricsText();
    assert.equal(metricSum(m1, 'switchyard_queue_wait_seconds_count', { upstream: 'sq' }) - metricSum(m0, 'switchyard_queue_wait_seconds_count', { upstream: 'sq' }), 2);
    assert.ok(metricSum(m1, 'switchyard_queue_wait_seconds_sum', { upstream: 'sq' }) - metricSum(m0, 'switchyard_queue_wait_seconds_sum', { upstream: 'sq' }) >= 0.7);
    assert.equal(metricSum(m1, 'switchyard_queue_depth', { upstream: 'sq' }), 0);
  });

  test('a queued request that waits past queue.timeout_ms gets 503 upstream_overloaded', async () => {
    const first = post(gw, 'm-q1');
    await waitFor(() => f['sq1']!.requests.length === 1 || undefined, 2000, 'first request upstream');
    const second = await post(gw, 'm-q1');
    assert.equal(second.status, 503);
    const e = errorOf(second);
    assert.equal(e.code, 'upstream_overloaded');
    assert.match(e.message, /timed out/);
    assert.ok(second.headers.get('retry-after'));
    assert.ok(second.ms >= 680 && second.ms < 1400, `refused after ${second.ms} ms (queue timeout 700)`);
    assert.equal(f['sq1']!.requests.length, 1, 'the timed-out request never reached the upstream');
    const r1 = await first;
    assert.equal(r1.status, 200);
  });
});

describe('total outage, 200 concurrent clients', () => {
  const N = 200;

  async function burst(gw: TestGateway, model: string): Promise<{ errors: APIError[]; ms: number }> {
    const client = gw.client({ maxRetries: 0 });
    const t0 = Date.now();
    const outcomes = await Promise.all(
      Array.from({ length: N }, () =>
        client.chat.completions.create({ model, messages: [{ role: 'user', content: 'hi' }] }).then(
          () => null,
          (e: unknown) => e,
        ),
      ),
    );
    const ms = Date.now() - t0;
    const errors: APIError[] = [];
    for (const e of outcomes) {
      assert.ok(e instanceof APIError && !(e instanceof APIConnectionError), `an HTTP error expected, got ${String(e)}`);
      errors.push(e);
    }
    return { errors, ms };
  }

  function checkErrors(errors: APIError[]): void {
    for (const e of errors) {
      assert.ok(e.status !== undefined && e.status >= 500 && e.status < 600, `5xx expected, got ${e.status}`);
      // Final (the gateway tried and gave up): no wait named, so Codex-like clients do not sleep one out.
      assert.equal(e.headers?.get('x-should-retry'), 'false', `${e.status} (${String(e.code)}) is final`);
      assert.equal(e.headers?.get('retry-after') ?? null, null, `${e.status} (${String(e.code)}) names no wait`);
    }
  }

  test('both targets answering 503: attempts / requests <= 1.25, all 5xx, done in < 5 s', async () => {
    const o1 = await new FakeUpstream().start();
    const o2 = await new FakeUpstream().start();
    o1.on(() => errorReply(503));
    o2.on(() => errorReply(503));
    // Default routing (budget 20 % + 3, 4 attempts, cooldowns); room for every client at once.
    const gw = await startGateway(
      configYaml({}, [
        { id: 'o1', url: o1.url, maxConcurrency: 1000 },
        { id: 'o2', url: o2.url, maxConcurrency: 1000 },
      ], [{ name: 'm-out', targets: ['o1', 'o2'] }]),
    );
    try {
      const { errors, ms } = await burst(gw, 'm-out');
      checkErrors(errors);
      const attempts = o1.requests.length + o2.requests.length;
      assert.ok(attempts >= N, `every request made at least one attempt (${attempts})`);
      assert.ok(attempts / N <= 1.25, `${attempts} upstream attempts for ${N} requests`);
      assert.ok(ms < 5000, `burst took ${ms} ms`);
      const m = await gw.metricsText();
      assert.equal(metricSum(m, 'switchyard_upstream_attempts_total'), attempts, 'attempt metric matches what the upstreams saw');
    } finally {
      await gw.close();
      await o1.close();
      await o2.close();
    }
  });

  test('both targets refusing connections: attempts / requests <= 1.25, all 5xx, done in < 5 s', async () => {
    const gw = await startGateway(
      configYaml({}, [
        { id: 'd1', url: await deadUrl(), maxConcurrency: 1000 },
        { id: 'd2', url: await deadUrl(), maxConcurrency: 1000 },
      ], [{ name: 'm-dead', targets: ['d1', 'd2'] }]),
    );
    try {
      const { errors, ms } = await burst(gw, 'm-dead');
      checkErrors(errors);
      for (const e of errors) assert.ok(['upstream_unreachable', 'retry_budget_exhausted'].includes(String(e.code)), `unexpected ${e.status} ${String(e.code)}`);
      const m = await gw.metricsText();
      const attempts = metricSum(m, 'switchyard_upstream_attempts_total', { outcome: 'connect' });
      assert.equal(metricSum(m, 'switchyard_upstream_attempts_total'), attempts, 'every attempt failed to connect');
      assert.ok(attempts >= N, `every request made at least one attempt (${attempts})`);
      assert.ok(attempts / N <= 1.25, `${attempts} upstream attempts for ${N} requests`);
      assert.ok(ms < 5000, `burst took ${ms} ms`);
    } finally {
      await gw.close();
    }
  });
});

describe("the openai client's own retries", () => {
  let gw: TestGateway;
  let o1: FakeUpstream;
  let o2: FakeUpstream;
  const MAX_ATTEMPTS = 4;

  before(async () => {
    o1 = await new FakeUpstream().start();
    o2 = await new FakeUpstream().start();
    // retry-after-ms: 5 makes an SDK retry immediate, so one would show up quickly.
    const fail = (): ScriptedReply => errorReply(503, { 'retry-after-ms': '5' });
    o1.on(fail);
    o2.on(fail);
    gw = await startGateway(
      configYaml({ max_attempts: MAX_ATTEMPTS }, [
        { id: 'o1', url: o1.url },
        { id: 'o2', url: o2.url },
      ], [{ name: 'm-sdk', targets: ['o1', 'o2'] }]),
    );
  });
  after(async () => {
    await gw.close();
    await o1.close();
    await o2.close();
  });

  test('control: against the upstream directly, the SDK (maxRetries 2) sends 3 requests', async () => {
    const n = o1.requests.length;
    const direct = new OpenAI({ apiKey: 'direct', baseURL: `${o1.url}/v1`, maxRetries: 2 });
    await assert.rejects(direct.chat.completions.create({ model: 'x', messages: [{ role: 'user', content: 'hi' }] }), APIError);
    assert.equal(o1.requests.length, n + 3);
  });

  test('20 sequential calls with default retries: x-should-retry false, no SDK retry, attempts bounded', async () => {
    const client = new OpenAI({ apiKey: CLIENT_KEY, baseURL: `${gw.url}/v1` }); // default maxRetries (2)
    assert.equal(client.maxRetries, 2);
    const start = o1.requests.length + o2.requests.length;
    const logStart = gw.finished().length;
    const CALLS = 20;
    for (let i = 0; i < CALLS; i++) {
      const before = o1.requests.length + o2.requests.length;
      const err = await client.chat.completions.create({ model: 'm-sdk', messages: [{ role: 'user', content: `call ${i}` }] }).then(
        () => null,
        (e: unknown) => e,
      );
      assert.ok(err instanceof APIError && !(err instanceof APIConnectionError), `call ${i}: APIError expected, got ${String(err)}`);
      assert.equal(err.status, 503, `call ${i}`);
      assert.equal(err.headers?.get('x-should-retry'), 'false', `call ${i}: x-should-retry (${String(err.code)})`);
      const used = o1.requests.length + o2.requests.length - before;
      assert.ok(used >= 1 && used <= MAX_ATTEMPTS, `call ${i}: ${used} upstream attempts`);
    }
    const total = o1.requests.length + o2.requests.length - start;
    // With SDK retries on top, the gateway would see 3 calls per client call (>= 60 attempts).
    assert.ok(total <= 1.5 * CALLS, `${total} upstream attempts for ${CALLS} calls`);
    const lines = await waitFor(() => (gw.finished().length - logStart >= CALLS ? gw.finished().slice(logStart) : undefined), 2000, 'log lines');
    assert.equal(lines.filter((l) => l['model'] === 'm-sdk').length, CALLS, 'the gateway saw each call exactly once: the SDK did not retry');
  });
});
