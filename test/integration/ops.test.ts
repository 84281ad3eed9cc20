/**
 * Operations surface: health and readiness probes, the Prometheus exposition after real
 * traffic, and a scan showing no credential reaches logs, metrics or client responses.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { AuthenticationError } from 'openai';
import type { FakeUpstream } from '../helpers/fake-upstream.js';
import { fixtureJson, replay, sseEvents } from '../helpers/recordings.js';
import {
  CLIENT_KEY,
  OTHER_KEY,
  UPSTREAM_KEY,
  closeAll,
  startGateway,
  startWithUpstream,
  testConfigYaml,
  waitFor,
  type TestGateway,
} from '../helpers/gateway.js';

const GPT_TEST_PRICE = { input: 2.5, cached_input: 1.25, output: 10 };

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** Parses Prometheus text exposition samples (enough of the format for prom-client output). */
function parseSamples(text: string): Sample[] {
  const out: Sample[] = [];
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)/.exec(line);
    assert.ok(m, `unparseable metrics line: ${line}`);
    const labels: Record<string, string> = {};
    if (m[2]) for (const l of m[2].matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]!] = l[2]!;
    const v = m[3]!;
    out.push({ name: m[1]!, labels, value: v === '+Inf' ? Infinity : v === '-Inf' ? -Infinity : Number(v) });
  }
  return out;
}

/** Samples of `name` whose labels include all of `labels`. */
function matching(samples: Sample[], name: string, labels: Record<string, string> = {}): Sample[] {
  return samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
}

/** The single sample of `name` with exactly these label values (fails when absent or ambiguous). */
function one(samples: Sample[], name: string, labels: Record<string, string>): number {
  const found = matching(samples, name, labels);
  assert.equal(found.length, 1, `exactly one ${name}${JSON.stringify(labels)}, found ${found.length}`);
  return found[0]!.value;
}

function typeOf(text: string, name: string): string | undefined {
  return new RegExp(`^# TYPE ${name} (\\S+)$`, 'm').exec(text)?.[1];
}

/** The last `usage` of a recorded stream. */
function streamUsage(name: string): { prompt_tokens: number; completion_tokens: number } {
  let usage: { prompt_tokens: number; completion_tokens: number } | null = null;
  for (const e of sseEvents(name)) {
    const m = /^data: (\{.*\})\s*$/s.exec(e);
    if (!m) continue;
    const c = JSON.parse(m[1]!) as { usage?: { prompt_tokens: number; completion_tokens: number } | null };
    if (c.usage) usage = c.usage;
  }
  assert.ok(usage, `${name} has usage`);
  return usage;
}

function cost(input: number, cached: number, output: number): number {
  const p = GPT_TEST_PRICE;
  return ((input - cached) * p.input + cached * p.cached_input + output * p.output) / 1e6;
}

describe('health probes', () => {
  let upstream: FakeUpstream;
  let gw: TestGateway;

  before(async () => {
    ({ upstream, gw } = await startWithUpstream());
  });
  after(() => closeAll(gw, upstream));

  test('/healthz is 200 without a key', async () => {
    const res = await fetch(`${gw.url}/healthz`);
    assert.equal(res.status, 200);
    assert.deepEqual(await res.json(), { status: 'ok' });
  });

  test('/readyz is 200 without a key and lists upstreams with their mode', async () => {
    const res = await fetch(`${gw.url}/readyz`);
    assert.equal(res.status, 200);
    const body = (await res.json()) as { status: string; models: number; upstreams: { id: string; provider: string; mode: string }[] };
    assert.equal(body.status, 'ready');
    assert.equal(body.models, 2);
    assert.deepEqual(body.upstreams, [{ id: 'fake', provider: 'openai-compatible', mode: 'live' }]);
    assert.equal(upstream.requests.length, 0, 'readiness does not call the upstream');
  });

  test('/readyz is 503 and reports mode off when no upstream has its key', async () => {
    const off = await startGateway(testConfigYaml(upstream.url), {});
    try {
      const res = await fetch(`${off.url}/readyz`);
      assert.equal(res.status, 503);
      const body = (await res.json()) as { status: string; models: number; upstreams: { id: string; mode: string }[] };
      assert.equal(body.status, 'not_ready');
      assert.equal(body.models, 0);
      assert.deepEqual(
        body.upstreams.map((u) => [u.id, u.mode]),
        [['fake', 'off']],
      );
      const health = await fetch(`${off.url}/healthz`);
      assert.equal(health.status, 200, 'liveness does not depend on readiness');
    } finally {
      await off.close();
    }
  });
});

describe('/metrics', () => {
  let upstream: FakeUpstream;
  let gw: TestGateway;

  before(async () => {
    ({ upstream, gw } = await startWithUpstream());
  });
  after(() => closeAll(gw, upstream));

  test('is Prometheus text with real values after traffic', async () => {
    const client = gw.client();
    const ask = () => ({ model: 'gpt-test', messages: [{ role: 'user' as const, content: 'hi' }] });

    // Before any traffic, no request has been counted.
    const empty = parseSamples(await gw.metricsText());
    assert.equal(matching(empty, 'switchyard_requests_total').length, 0);

    // 2 x gpt5 fixture, 1 x o3-mini fixture (reasoning tokens): 3 JSON successes.
    upstream.on(() => ({ status: 200, body: fixtureJson('openai-chat-gpt5.json') }));
    await client.chat.completions.create(ask());
    await client.chat.completions.create(ask());
    upstream.on(() => ({ status: 200, body: fixtureJson('openai-chat-o3-mini-reasoning-tokens.json') }));
    await client.chat.completions.create(ask());

    // 1 stream success.
    const STREAM = 'openai-chat-stream-text-include-usage.sse';
    upstream.on(replay(STREAM));
    const stream = await client.chat.completions.create({ ...ask(), stream: true });
    let chunks = 0;
    for await (const _c of stream) chunks++;
    assert.ok(chunks > 0);

    // 1 in flight while scraped, then finished: a 5th success.
    upstream.on(() => ({ status: 200, body: fixtureJson('openai-chat-gpt5.json'), delayMs: 400 }));
    const slow = client.chat.completions.create(ask());
    await waitFor(() => upstream.requests.length === 5, 2000, 'slow request upstream');
    const during = parseSamples(await gw.metricsText());
    assert.equal(one(during, 'switchyard_requests_in_flight', { model: 'gpt-test' }), 1, 'one request in flight');
    await slow;

    // 1 upstream 500.
    upstream.on(() => ({ status: 500, body: { error: { message: 'boom', type: 'server_error', code: null } } }));
    await assert.rejects(client.chat.completions.create(ask()), (e: { status?: number }) => e.status === 500);

    // 1 unknown model (never reaches the upstream).
    await assert.rejects(client.chat.completions.create({ ...ask(), model: 'nope' }), (e: { status?: number }) => e.status === 404);
    assert.equal(upstream.requests.length, 6);

    // The log line is written after the response; metrics are recorded just before it.
    await waitFor(() => gw.finished().length === 7, 2000, 'seven request lines');

    const res = await fetch(`${gw.url}/metrics`);
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^text\/plain; version=0\.0\.4/);
    const text = await res.text();
    const s = parseSamples(text);

    // Requests by model/upstream/status/outcome.
    assert.equal(typeOf(text, 'switchyard_requests_total'), 'counter');
    assert.equal(one(s, 'switchyard_requests_total', { model: 'gpt-test', upstream: 'fake', status: '200', outcome: 'ok' }), 5);
    assert.equal(one(s, 'switchyard_requests_total', { model: 'gpt-test', upstream: 'fake', status: '500', outcome: 'upstream_error' }), 1);
    assert.equal(one(s, 'switchyard_requests_total', { model: 'none', upstream: 'none', status: '404', outcome: 'client_error' }), 1);
    assert.equal(
      matching(s, 'switchyard_requests_total').reduce((a, x) => a + x.value, 0),
      7,
      'every counted request is one of those made',
    );

    // Duration histogram, split by stream.
    assert.equal(typeOf(text, 'switchyard_request_duration_seconds'), 'histogram');
    const jsonCount = one(s, 'switchyard_request_duration_seconds_count', { model: 'gpt-test', upstream: 'fake', stream: 'false' });
    assert.equal(jsonCount, 5, '4 JSON successes + 1 upstream 500');
    assert.equal(one(s, 'switchyard_request_duration_seconds_count', { model: 'gpt-test', upstream: 'fake', stream: 'true' }), 1);
    assert.equal(one(s, 'switchyard_request_duration_seconds_bucket', { model: 'gpt-test', upstream: 'fake', stream: 'false', le: '+Inf' }), jsonCount);
    // The slow request took >= 0.4 s: at least one observation is above the 0.25 s bucket.
    const le025 = one(s, 'switchyard_request_duration_seconds_bucket', { model: 'gpt-test', upstream: 'fake', stream: 'false', le: '0.25' });
    assert.ok(le025 <= jsonCount - 1, `slow request is outside the 0.25s bucket (${le025}/${jsonCount})`);
    const durSum = one(s, 'switchyard_request_duration_seconds_sum', { model: 'gpt-test', upstream: 'fake', stream: 'false' });
    assert.ok(durSum >= 0.4 && durSum < 30, `duration sum ${durSum}`);

    // Time to first token: one stream.
    assert.equal(typeOf(text, 'switchyard_time_to_first_token_seconds'), 'histogram');
    assert.equal(one(s, 'switchyard_time_to_first_token_seconds_count', { model: 'gpt-test', upstream: 'fake' }), 1);
    const ttft = one(s, 'switchyard_time_to_first_token_seconds_sum', { model: 'gpt-test', upstream: 'fake' });
    assert.ok(ttft > 0 && ttft < 5, `ttft ${ttft}`);

    // Tokens by kind: 3 x gpt5 (13 in / 11 out), o3-mini (577 / 2320, 1792 reasoning), the stream.
    const su = streamUsage(STREAM);
    const input = 3 * 13 + 577 + su.prompt_tokens;
    const output = 3 * 11 + 2320 + su.completion_tokens;
    assert.equal(typeOf(text, 'switchyard_tokens_total'), 'counter');
    assert.equal(one(s, 'switchyard_tokens_total', { model: 'gpt-test', upstream: 'fake', kind: 'input' }), input);
    assert.equal(one(s, 'switchyard_tokens_total', { model: 'gpt-test', upstream: 'fake', kind: 'output' }), output);
    assert.equal(one(s, 'switchyard_tokens_total', { model: 'gpt-test', upstream: 'fake', kind: 'reasoning' }), 1792);
    assert.equal(matching(s, 'switchyard_tokens_total', { kind: 'cached_input' }).length, 0, 'no cached tokens were reported');

    // Cost.
    assert.equal(typeOf(text, 'switchyard_cost_usd_total'), 'counter');
    const wantCost = 3 * cost(13, 0, 11) + cost(577, 0, 2320) + cost(su.prompt_tokens, 0, su.completion_tokens);
    const gotCost = one(s, 'switchyard_cost_usd_total', { model: 'gpt-test', upstream: 'fake' });
    assert.ok(Math.abs(gotCost - wantCost) < 1e-9, `cost ${gotCost} != ${wantCost}`);

    // Upstream errors: the one 500.
    assert.equal(typeOf(text, 'switchyard_upstream_errors_total'), 'counter');
    assert.equal(one(s, 'switchyard_upstream_errors_total', { upstream: 'fake', class: 'server' }), 1);
    assert.equal(
      matching(s, 'switchyard_upstream_errors_total').reduce((a, x) => a + x.value, 0),
      1,
      'no other upstream errors',
    );

    // In flight: back to zero.
    assert.equal(typeOf(text, 'switchyard_requests_in_flight'), 'gauge');
    assert.equal(one(s, 'switchyard_requests_in_flight', { model: 'gpt-test' }), 0);
  });
});

describe('secret scan', () => {
  let upstream: FakeUpstream;
  let gw: TestGateway;

  const WRONG_BEARER = 'sk-wrong-bearer-5a4b3c2d1e0f99887766';
  const WRONG_API_KEY = 'sk-wrong-apikey-1122334455667788aabb';
  const WRONG_X_API_KEY = 'sk-wrong-xapikey-ffeeddccbbaa00998877';
  const WRONG_SDK = 'sk-wrong-sdk-0a1b2c3d4e5f6a7b8c9d';
  const WRONG_QUERY = 'sk-wrong-query-9988776655443322';
  const COOKIE_SECRET = 'cookie-secret-d41d8cd98f00b204e980';
  /** How OpenAI echoes a bad key: a prefix, asterisks, and the last 4 characters. */
  const MASKED_UPSTREAM = `${UPSTREAM_KEY.slice(0, 9)}${'*'.repeat(20)}${UPSTREAM_KEY.slice(-4)}`;

  const bodies: string[] = [];
  const headerValues: string[] = [];

  async function send(
    path: string,
    init: { method?: string; headers?: Record<string, string>; body?: unknown } = {},
  ): Promise<{ status: number; text: string }> {
    const res = await fetch(`${gw.url}${path}`, {
      method: init.method ?? (init.body === undefined ? 'GET' : 'POST'),
      headers: { ...(init.body === undefined ? {} : { 'content-type': 'application/json' }), ...init.headers },
      body: init.body === undefined ? undefined : JSON.stringify(init.body),
    });
    const text = await res.text();
    bodies.push(text);
    for (const [, v] of res.headers) headerValues.push(v);
    return { status: res.status, text };
  }

  const chat = (stream = false) => ({ model: 'gpt-test', messages: [{ role: 'user', content: 'hi' }], ...(stream ? { stream: true } : {}) });

  before(async () => {
    ({ upstream, gw } = await startWithUpstream((url) => testConfigYaml(url, { routing: '  max_attempts: 1\n  cooldown: { credential_ms: 1 }' })));
  });
  after(() => closeAll(gw, upstream));

  test('no key, cookie or provider key appears in logs, metrics or responses', async () => {
    const good = { authorization: `Bearer ${CLIENT_KEY}` };

    // Good traffic, JSON and stream, with a cookie attached.
    upstream.on(() => ({ status: 200, body: fixtureJson('openai-chat-gpt5.json') }));
    assert.equal((await send('/v1/chat/completions', { headers: { ...good, cookie: `sid=${COOKIE_SECRET}` }, body: chat() })).status, 200);
    upstream.on(replay('openai-chat-stream-text-include-usage.sse'));
    assert.equal((await send('/v1/chat/completions', { headers: { ...good, cookie: `sid=${COOKIE_SECRET}` }, body: chat(true) })).status, 200);
    assert.equal((await send('/v1/models', { headers: { 'x-api-key': OTHER_KEY, cookie: `sid=${COOKIE_SECRET}` } })).status, 200);
    upstream.on(() => ({ status: 200, body: fixtureJson('openai-chat-o3-mini-reasoning-tokens.json') }));
    assert.equal((await send('/v1/chat/completions', { headers: { 'api-key': OTHER_KEY }, body: { ...chat(), model: 'reasoner-test' } })).status, 200);

    // Wrong keys in each header, and through the SDK.
    assert.equal(
      (await send('/v1/chat/completions', { headers: { authorization: `Bearer ${WRONG_BEARER}`, cookie: `sid=${COOKIE_SECRET}` }, body: chat() })).status,
      401,
    );
    assert.equal((await send('/v1/chat/completions', { headers: { 'api-key': WRONG_API_KEY }, body: chat() })).status, 401);
    assert.equal((await send('/v1/chat/completions', { headers: { 'x-api-key': WRONG_X_API_KEY }, body: chat() })).status, 401);
    assert.equal((await send('/v1/models', { headers: { authorization: `Bearer ${WRONG_BEARER}` } })).status, 401);
    try {
      await gw.client({ apiKey: WRONG_SDK }).chat.completions.create({ model: 'gpt-test', messages: [{ role: 'user', content: 'hi' }] });
      assert.fail('wrong SDK key accepted');
    } catch (err) {
      assert.ok(err instanceof AuthenticationError, String(err));
      bodies.push(JSON.stringify(err.error), err.message);
    }
    // A key in the query string of an unknown route.
    assert.equal((await send(`/v1/nope?api_key=${WRONG_QUERY}`, { headers: good })).status, 404);
    // A disallowed model with the limited key.
    assert.equal((await send('/v1/chat/completions', { headers: { authorization: `Bearer ${OTHER_KEY}` }, body: chat() })).status, 404);

    // The upstream rejects the gateway's key and echoes part of it.
    upstream.on(() => ({
      status: 401,
      body: {
        error: {
          message: `Incorrect API key provided: ${MASKED_UPSTREAM}. You can find your API key at https://platform.openai.com/account/api-keys.`,
          type: 'invalid_request_error',
          param: null,
          code: 'invalid_api_key',
        },
      },
    }));
    const auth = await send('/v1/chat/completions', { headers: good, body: chat() });
    assert.equal(auth.status, 502);
    assert.equal((JSON.parse(auth.text) as { error: { code: string } }).error.code, 'upstream_auth_failed');

    // A 400 that echoes the masked key, and a 500 that echoes the full key.
    upstream.on(() => ({
      status: 400,
      body: { error: { message: `Key ${MASKED_UPSTREAM} may not use this model.`, type: 'invalid_request_error', param: null, code: null } },
    }));
    assert.equal((await send('/v1/chat/completions', { headers: good, body: chat() })).status, 400);
    upstream.on(() => ({
      status: 500,
      body: { error: { message: `internal error for Bearer ${UPSTREAM_KEY} (${UPSTREAM_KEY})`, type: 'server_error', param: null, code: null } },
    }));
    assert.equal((await send('/v1/chat/completions', { headers: good, body: chat() })).status, 500);

    // A stream that breaks with an error event quoting the key.
    upstream.on(() => ({
      status: 200,
      headers: { 'content-type': 'text/event-stream' },
      steps: [
        `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"Hel"},"finish_reason":null}]}\n\n`,
        `data: {"error":{"message":"quota exceeded for ${UPSTREAM_KEY} / ${MASKED_UPSTREAM}","type":"server_error","code":"quota"}}\n\n`,
      ],
    }));
    const broken = await send('/v1/chat/completions', { headers: good, body: chat(true) });
    assert.equal(broken.status, 200);
    assert.match(broken.text, /"error"/, 'the stream ends with an error event');

    await waitFor(() => gw.finished().length >= 8, 2000, 'request lines');
    const metrics = await gw.metricsText();
    assert.ok(metrics.includes('switchyard_requests_total'), 'metrics were scraped');
    assert.ok(gw.logs.length > 0, 'logs were captured');

    const secrets: [string, string][] = [
      ['CLIENT_KEY', CLIENT_KEY],
      ['OTHER_KEY', OTHER_KEY],
      ['WRONG_BEARER', WRONG_BEARER],
      ['WRONG_API_KEY', WRONG_API_KEY],
      ['WRONG_X_API_KEY', WRONG_X_API_KEY],
      ['WRONG_SDK', WRONG_SDK],
      ['WRONG_QUERY', WRONG_QUERY],
      ['UPSTREAM_KEY', UPSTREAM_KEY],
      ['UPSTREAM_KEY masked echo', MASKED_UPSTREAM],
      ['UPSTREAM_KEY prefix', UPSTREAM_KEY.slice(0, 12)],
      ['cookie value', COOKIE_SECRET],
    ];
    const places: [string, string][] = [
      ['logs', gw.logs.join('\n')],
      ['metrics', metrics],
      ['response bodies', bodies.join('\n')],
      ['response headers', headerValues.join('\n')],
    ];
    const leaks: string[] = [];
    for (const [where, text] of places) for (const [name, secret] of secrets) if (text.includes(secret)) leaks.push(`${name} in ${where}`);
    assert.deepEqual(leaks, []);
  });
});
