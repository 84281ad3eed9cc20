/**
 * The per-upstream concurrency cap and its queue, end to end: requests past
 * max_concurrency wait in the queue, past queue.max or queue.timeout_ms they get 503
 * upstream_overloaded.
 *
 * The real gateway on port 0 against scripted fake upstreams on loopback, called with fetch
 * and the official `openai` client. Every config is written for its test (see
 * test/helpers/failover.ts): several upstreams (each its own fake), the targets of a model
 * priced 1, 2, 3 … and `strategy: cheap`, so targets are tried in config order.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { FakeUpstream } from '../helpers/fake-upstream.js';
import { startGateway, waitFor, type TestGateway } from '../helpers/gateway.js';
import { metricSum } from '../helpers/metrics-text.js';
import { NO_HEALTH, configYaml, errorOf, ok, post, sleep } from '../helpers/failover.js';

function hasMetric(text: string, name: string): boolean {
  return text.split('\n').some((l) => l.startsWith(`# TYPE ${name} `));
}

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
    assert.equal(
      metricSum(m1, 'switchyard_queue_wait_seconds_count', { upstream: 'sq' }) - metricSum(m0, 'switchyard_queue_wait_seconds_count', { upstream: 'sq' }),
      2,
    );
    assert.ok(
      metricSum(m1, 'switchyard_queue_wait_seconds_sum', { upstream: 'sq' }) - metricSum(m0, 'switchyard_queue_wait_seconds_sum', { upstream: 'sq' }) >= 0.7,
    );
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
