/**
 * The waits between attempts, end to end: an upstream's Retry-After / retry-after-ms
 * (and routing.retry_after_cap_ms), and full-jitter backoff between retries.
 *
 * The real gateway on port 0 against scripted fake upstreams on loopback, called with fetch
 * and the official `openai` client. Every config is written for its test (see
 * test/helpers/failover.ts): several upstreams (each its own fake), the targets of a model
 * priced 1, 2, 3 … and `strategy: cheap`, so targets are tried in config order.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { FakeUpstream } from '../helpers/fake-upstream.js';
import { type TestGateway, startGateway } from '../helpers/gateway.js';
import { metricSum } from '../helpers/metrics-text.js';
import { NO_HEALTH, configYaml, content, errorOf, errorReply, ok, post } from '../helpers/failover.js';

describe('Retry-After', () => {
  let gw: TestGateway;
  let r: FakeUpstream;
  const CAP = 1500;
  const JITTER_CAP = 20;

  before(async () => {
    r = await new FakeUpstream().start();
    gw = await startGateway(
      configYaml(
        { ...NO_HEALTH, max_attempts: 2, backoff_base_ms: 10, backoff_cap_ms: JITTER_CAP, retry_after_cap_ms: CAP },
        [{ id: 'r', url: r.url }],
        [{ name: 'm-ra', targets: ['r'] }],
      ),
    );
  });
  after(async () => {
    await gw.close();
    await r.close();
  });

  async function gapAfter429(headers: Record<string, string>): Promise<number> {
    let calls = 0;
    r.on(() =>
      calls++ === 0
        ? { ...errorReply(429, headers), body: { error: { message: 'slow down', type: 'requests', param: null, code: 'rate_limit_exceeded' } } }
        : ok('after the wait'),
    );
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
    r.on(() => ({
      ...errorReply(429, { 'retry-after': '30' }),
      body: { error: { message: 'slow down', type: 'requests', param: null, code: 'rate_limit_exceeded' } },
    }));
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
    assert.ok(
      gaps.some((g) => g < 0.5),
      `no short wait in ${gaps.map((g) => g.toFixed(2)).join(', ')}`,
    );
    const m1 = await gw.metricsText();
    assert.equal(metricSum(m1, 'switchyard_retries_total', { model: 'm-jit' }) - metricSum(m0, 'switchyard_retries_total', { model: 'm-jit' }), 2 * RUNS);
    assert.equal(
      metricSum(m1, 'switchyard_upstream_attempts_total', { upstream: 'j', outcome: 'server' }) -
        metricSum(m0, 'switchyard_upstream_attempts_total', { upstream: 'j', outcome: 'server' }),
      2 * RUNS,
    );
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
