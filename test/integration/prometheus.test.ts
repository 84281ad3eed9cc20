/**
 * Prometheus, for real (issue #7): a real `prometheus` server scrapes a running gateway
 * every second, and the key series are checked through Prometheus's HTTP API after known
 * traffic (streams and non-streams on two models, an unknown model, an upstream 500):
 * request counters per model/status/outcome, the upstream error series, request duration
 * and time-to-first-token histograms, tokens, cost and spend, and the state gauges. Then
 * `promtool check metrics` must accept `/metrics` with no lint problem.
 *
 * Needs `prometheus` and `promtool` on PATH (Debian package `prometheus`); without them
 * the suite fails with a message naming the package.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { FakeUpstream } from '../helpers/fake-upstream.js';
import { fixtureJson, replay, sseEvents } from '../helpers/recordings.js';
import { startWithUpstream, waitFor, type TestGateway } from '../helpers/gateway.js';
import { promtoolCheckMetrics, requireBinary, startPrometheus, type PrometheusServer, type PromSample } from '../helpers/prometheus.js';

const JOB = 'switchyard';
const GPT_NONSTREAM = 'openai-chat-gpt5.json';
const GPT_STREAM = 'openai-chat-stream-text-include-usage.sse';
const REASONER_NONSTREAM = 'deepseek-reasoner.json';
const REASONER_STREAM = 'deepseek-reasoner-stream.sse';

// Prices from testConfigYaml (USD per million tokens; reasoning priced as output).
const PRICES: Record<string, { input: number; cached_input: number; output: number }> = {
  'gpt-test': { input: 2.5, cached_input: 1.25, output: 10 },
  'reasoner-test': { input: 0.55, cached_input: 0.14, output: 2.19 },
};

// The traffic sent before Prometheus starts.
const GPT_OK_NONSTREAM = 3;
const GPT_OK_STREAM = 2;
const REASONER_OK_NONSTREAM = 1;
const REASONER_OK_STREAM = 2;
const UNKNOWN_MODEL = 1;
const UPSTREAM_500 = 1;
const TOTAL = GPT_OK_NONSTREAM + GPT_OK_STREAM + REASONER_OK_NONSTREAM + REASONER_OK_STREAM + UNKNOWN_MODEL + UPSTREAM_500;

interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
  prompt_tokens_details?: { cached_tokens?: number };
  completion_tokens_details?: { reasoning_tokens?: number };
}

/** The last usage object of a recorded stream. */
function streamUsage(name: string): Usage {
  let usage: Usage | undefined;
  for (const e of sseEvents(name)) {
    const m = /^data: (\{.*\})\s*$/s.exec(e);
    if (!m) continue;
    const chunk = JSON.parse(m[1]!) as { usage?: Usage | null };
    if (chunk.usage) usage = chunk.usage;
  }
  assert.ok(usage, `${name} has usage`);
  return usage;
}

const jsonUsage = (name: string) => fixtureJson(name)['usage'] as Usage;

function cost(u: Usage, model: string): number {
  const p = PRICES[model]!;
  const cached = u.prompt_tokens_details?.cached_tokens ?? 0;
  return ((u.prompt_tokens - cached) * p.input + cached * p.cached_input + u.completion_tokens * p.output) / 1e6;
}

/** The traffic's usages per model, as (usage, count) pairs. */
const USAGES: Record<string, [Usage, number][]> = {
  'gpt-test': [
    [jsonUsage(GPT_NONSTREAM), GPT_OK_NONSTREAM],
    [streamUsage(GPT_STREAM), GPT_OK_STREAM],
  ],
  'reasoner-test': [
    [jsonUsage(REASONER_NONSTREAM), REASONER_OK_NONSTREAM],
    [streamUsage(REASONER_STREAM), REASONER_OK_STREAM],
  ],
};
const sumOver = (model: string, f: (u: Usage) => number) => USAGES[model]!.reduce((acc, [u, n]) => acc + n * f(u), 0);

const near = (got: number, want: number, what: string, eps = 1e-9) => assert.ok(Math.abs(got - want) <= eps, `${what}: got ${got}, want ${want}`);

/** The one sample of an instant query (fails on zero or several). */
function only(samples: PromSample[], what: string): number {
  assert.equal(samples.length, 1, `${what}: expected one series, got ${JSON.stringify(samples)}`);
  return samples[0]!.value;
}

// Its own test, so a machine without the package reports a plain failure naming it.
test('prometheus and promtool are installed (Debian package `prometheus`)', () => {
  requireBinary('prometheus');
  requireBinary('promtool');
});

describe('Prometheus scraping a running gateway', () => {
  let upstream: FakeUpstream | undefined;
  let gw: TestGateway | undefined;
  let prom: PrometheusServer | undefined;
  const q = (expr: string) => prom!.query(expr);
  const value = async (expr: string) => only(await q(expr), expr);

  before(async () => {
    // Fail (not skip) early with the package name when the binaries are missing.
    requireBinary('prometheus');
    requireBinary('promtool');

    ({ upstream, gw } = await startWithUpstream());
    const client = gw.client();
    const messages = [{ role: 'user' as const, content: 'hi' }];

    upstream.on(() => ({ status: 200, body: fixtureJson(GPT_NONSTREAM) }));
    for (let i = 0; i < GPT_OK_NONSTREAM; i++) {
      const r = await client.chat.completions.create({ model: 'gpt-test', messages });
      assert.ok(r.choices.length > 0);
    }
    upstream.on(replay(GPT_STREAM));
    for (let i = 0; i < GPT_OK_STREAM; i++) {
      const s = await client.chat.completions.create({ model: 'gpt-test', messages, stream: true, stream_options: { include_usage: true } });
      let n = 0;
      for await (const _c of s) n++;
      assert.ok(n > 1, 'stream chunks');
    }
    upstream.on(() => ({ status: 200, body: fixtureJson(REASONER_NONSTREAM) }));
    for (let i = 0; i < REASONER_OK_NONSTREAM; i++) await client.chat.completions.create({ model: 'reasoner-test', messages });
    upstream.on(replay(REASONER_STREAM));
    for (let i = 0; i < REASONER_OK_STREAM; i++) {
      const s = await client.chat.completions.create({ model: 'reasoner-test', messages, stream: true, stream_options: { include_usage: true } });
      for await (const _c of s) void _c;
    }
    for (let i = 0; i < UNKNOWN_MODEL; i++) {
      await assert.rejects(client.chat.completions.create({ model: 'no-such-model', messages }), (e: { status?: number }) => e.status === 404);
    }
    upstream.on(() => ({ status: 500, body: { error: { message: 'upstream exploded', type: 'server_error' } } }));
    for (let i = 0; i < UPSTREAM_500; i++) {
      await assert.rejects(client.chat.completions.create({ model: 'gpt-test', messages }), (e: { status?: number }) => (e.status ?? 0) >= 500);
    }
    // Metrics are recorded when the request's record is finished (after the reply).
    await waitFor(() => gw!.finished().length >= TOTAL, 3000, `${TOTAL} finished requests`);

    prom = await startPrometheus(new URL(gw.url).host, JOB);
    await prom.waitFor(`up{job="${JOB}"}`, (s) => s.length === 1 && s[0]!.value === 1, 10000);
    // The first successful scrape has all the traffic above; wait until it is in the TSDB.
    await prom.waitFor(`sum(switchyard_requests_total{job="${JOB}"})`, (s) => s.length === 1 && s[0]!.value === TOTAL, 5000);
  });

  after(async () => {
    await prom?.close();
    await gw?.close();
    await upstream?.close();
  });

  test('the scrape target is up and the finished-request count matches the traffic', async () => {
    assert.equal(await value(`up{job="${JOB}"}`), 1);
    assert.equal(await value(`sum(switchyard_requests_total{job="${JOB}"})`), TOTAL);
    const targets = (await (await fetch(`${prom!.url}/api/v1/targets`)).json()) as { data: { activeTargets: { health: string; scrapeUrl: string }[] } };
    assert.equal(targets.data.activeTargets.length, 1);
    assert.equal(targets.data.activeTargets[0]!.health, 'up');
    assert.equal(targets.data.activeTargets[0]!.scrapeUrl, `${gw!.url}/metrics`);
  });

  test('switchyard_requests_total per model, upstream, status and outcome', async () => {
    const rows = await q(`switchyard_requests_total{job="${JOB}"}`);
    const got = rows.map((s) => `${s.metric['model']} ${s.metric['upstream']} ${s.metric['status']} ${s.metric['outcome']} = ${s.value}`).sort();
    const upstream500 = rows.find((s) => s.metric['outcome'] === 'upstream_error');
    assert.ok(upstream500, `an upstream_error series: ${got.join('; ')}`);
    const status500 = upstream500.metric['status']!;
    assert.match(status500, /^5\d\d$/);
    assert.deepEqual(
      got,
      [
        `gpt-test fake 200 ok = ${GPT_OK_NONSTREAM + GPT_OK_STREAM}`,
        `gpt-test fake ${status500} upstream_error = ${UPSTREAM_500}`,
        `none none 404 client_error = ${UNKNOWN_MODEL}`,
        `reasoner-test fake 200 ok = ${REASONER_OK_NONSTREAM + REASONER_OK_STREAM}`,
      ].sort(),
    );
    assert.equal(await value(`sum by (model) (switchyard_requests_total{model="gpt-test"})`), GPT_OK_NONSTREAM + GPT_OK_STREAM + UPSTREAM_500);
    assert.equal(await value(`sum by (model) (switchyard_requests_total{model="reasoner-test"})`), REASONER_OK_NONSTREAM + REASONER_OK_STREAM);
  });

  test('the upstream 500 is an upstream error of class server and a failed attempt', async () => {
    assert.equal(await value(`switchyard_upstream_errors_total{job="${JOB}",upstream="fake",class="server"}`), UPSTREAM_500);
    assert.equal(await value(`sum(switchyard_upstream_errors_total{job="${JOB}"})`), UPSTREAM_500);
    assert.equal(await value(`switchyard_upstream_attempts_total{upstream="fake",outcome="server"}`), UPSTREAM_500);
    assert.equal(
      await value(`switchyard_upstream_attempts_total{upstream="fake",outcome="ok"}`),
      GPT_OK_NONSTREAM + GPT_OK_STREAM + REASONER_OK_NONSTREAM + REASONER_OK_STREAM,
    );
  });

  test('request duration histogram: counts per model and stream flag, and a finite positive median', async () => {
    const counts = await q(`switchyard_request_duration_seconds_count{job="${JOB}"}`);
    const by = (model: string, stream: string) =>
      counts.filter((s) => s.metric['model'] === model && s.metric['stream'] === stream).reduce((a, s) => a + s.value, 0);
    assert.equal(by('gpt-test', 'false'), GPT_OK_NONSTREAM + UPSTREAM_500);
    assert.equal(by('gpt-test', 'true'), GPT_OK_STREAM);
    assert.equal(by('reasoner-test', 'false'), REASONER_OK_NONSTREAM);
    assert.equal(by('reasoner-test', 'true'), REASONER_OK_STREAM);
    assert.equal(await value(`sum(switchyard_request_duration_seconds_count{job="${JOB}"})`), TOTAL);
    // The +Inf bucket equals the count, and the sum is positive.
    assert.equal(await value(`sum(switchyard_request_duration_seconds_bucket{job="${JOB}",le="+Inf"})`), TOTAL);
    assert.ok((await value(`sum(switchyard_request_duration_seconds_sum{job="${JOB}"})`)) > 0);
    const median = await value(`histogram_quantile(0.5, sum by (le) (switchyard_request_duration_seconds_bucket{job="${JOB}"}))`);
    assert.ok(Number.isFinite(median) && median > 0 && median < 5, `median request duration ${median}`);
  });

  test('time-to-first-token histogram has one observation per stream, none for non-streams', async () => {
    assert.equal(await value(`switchyard_time_to_first_token_seconds_count{model="gpt-test",upstream="fake"}`), GPT_OK_STREAM);
    assert.equal(await value(`switchyard_time_to_first_token_seconds_count{model="reasoner-test",upstream="fake"}`), REASONER_OK_STREAM);
    assert.equal(await value(`sum(switchyard_time_to_first_token_seconds_count{job="${JOB}"})`), GPT_OK_STREAM + REASONER_OK_STREAM);
    const p50 = await value(`histogram_quantile(0.5, sum by (le) (switchyard_time_to_first_token_seconds_bucket{job="${JOB}"}))`);
    assert.ok(Number.isFinite(p50) && p50 > 0 && p50 < 5, `median TTFT ${p50}`);
  });

  test('tokens, cost and spend follow the recorded usage and the price table', async () => {
    for (const model of ['gpt-test', 'reasoner-test']) {
      const input = sumOver(model, (u) => u.prompt_tokens - (u.prompt_tokens_details?.cached_tokens ?? 0));
      const output = sumOver(model, (u) => u.completion_tokens);
      const reasoning = sumOver(model, (u) => u.completion_tokens_details?.reasoning_tokens ?? 0);
      assert.equal(await value(`switchyard_tokens_total{model="${model}",upstream="fake",kind="input"}`), input, `${model} input`);
      assert.equal(await value(`switchyard_tokens_total{model="${model}",upstream="fake",kind="output"}`), output, `${model} output`);
      if (reasoning > 0)
        assert.equal(await value(`switchyard_tokens_total{model="${model}",upstream="fake",kind="reasoning"}`), reasoning, `${model} reasoning`);
      const want = sumOver(model, (u) => cost(u, model));
      assert.ok(want > 0);
      near(await value(`switchyard_cost_usd_total{model="${model}",upstream="fake"}`), want, `${model} cost`);
      near(await value(`switchyard_spend_usd_total{key="team-a",model="${model}"}`), want, `${model} spend`);
    }
    const totalOutput = sumOver('gpt-test', (u) => u.completion_tokens) + sumOver('reasoner-test', (u) => u.completion_tokens);
    assert.equal(await value(`switchyard_key_tokens_total{key="team-a",kind="output"}`), totalOutput);
    // Nothing spent on the unknown model or the failed call.
    assert.equal((await q(`switchyard_cost_usd_total{model="none"}`)).length, 0);
  });

  test('state gauges: store mode memory, idle windows, queues and in-flight, one state per target', async () => {
    const modes = Object.fromEntries((await q(`switchyard_store_mode{job="${JOB}"}`)).map((s) => [s.metric['mode'], s.value]));
    assert.deepEqual(modes, { memory: 1, redis: 0, degraded: 0 });
    assert.equal(await value(`switchyard_deep_in_flight{job="${JOB}",upstream="fake"}`), 0);
    assert.equal(await value(`switchyard_queue_depth{job="${JOB}",upstream="fake"}`), 0);
    const inFlight = await q(`switchyard_requests_in_flight{job="${JOB}"}`);
    assert.ok(inFlight.length >= 2, `in-flight series ${JSON.stringify(inFlight)}`);
    for (const s of inFlight) assert.equal(s.value, 0, `in flight for ${s.metric['model']}`);
    const perTarget = await q(`sum by (target, upstream) (switchyard_target_state{job="${JOB}"})`);
    assert.equal(perTarget.length, 2, `targets ${JSON.stringify(perTarget)}`);
    for (const s of perTarget) assert.equal(s.value, 1, `exactly one state set for ${s.metric['target']}`);
    assert.equal((await q(`switchyard_target_state{job="${JOB}"} == 1`)).length, 2);
    // Default process metrics carry the prefix too.
    assert.ok((await value(`switchyard_process_resident_memory_bytes{job="${JOB}"}`)) > 0);
  });

  test('traffic after scraping started shows in rate() and a finite median over [1m]', async () => {
    upstream!.on(() => ({ status: 200, body: fixtureJson(GPT_NONSTREAM) }));
    const more = 3;
    for (let i = 0; i < more; i++) await gw!.client().chat.completions.create({ model: 'gpt-test', messages: [{ role: 'user', content: 'again' }] });
    const want = GPT_OK_NONSTREAM + GPT_OK_STREAM + more;
    await prom!.waitFor(`switchyard_requests_total{model="gpt-test",status="200"}`, (s) => s.length === 1 && s[0]!.value === want, 5000);
    const rate = await value(`sum(rate(switchyard_requests_total{job="${JOB}",model="gpt-test",status="200"}[1m]))`);
    assert.ok(Number.isFinite(rate) && rate > 0, `rate ${rate}`);
    const median = await value(`histogram_quantile(0.5, sum by (le) (rate(switchyard_request_duration_seconds_bucket{job="${JOB}"}[1m])))`);
    assert.ok(Number.isFinite(median) && median > 0 && median < 5, `median over rate ${median}`);
  });

  test('promtool check metrics accepts /metrics', async () => {
    const text = await gw!.metricsText();
    assert.match(text, /^# HELP switchyard_requests_total /m);
    const r = promtoolCheckMetrics(text);
    assert.equal(r.status, 0, `promtool check metrics exited ${r.status}:\n${r.stdout}${r.stderr}`);
    assert.equal(`${r.stdout}${r.stderr}`.trim(), '', 'promtool printed problems');
  });
});
