/**
 * A total outage, end to end: 200 concurrent clients while every target fails; the
 * retry budget keeps upstream attempts per request near 1 and every answer is a final 5xx.
 *
 * The real gateway on port 0 against scripted fake upstreams on loopback, called with fetch
 * and the official `openai` client. Every config is written for its test (see
 * test/helpers/failover.ts): several upstreams (each its own fake), the targets of a model
 * priced 1, 2, 3 … and `strategy: cheap`, so targets are tried in config order.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { APIConnectionError, APIError } from 'openai';
import { FakeUpstream } from '../helpers/fake-upstream.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { metricSum } from '../helpers/metrics-text.js';
import { configYaml, deadUrl, errorReply } from '../helpers/failover.js';

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
      configYaml(
        {},
        [
          { id: 'o1', url: o1.url, maxConcurrency: 1000 },
          { id: 'o2', url: o2.url, maxConcurrency: 1000 },
        ],
        [{ name: 'm-out', targets: ['o1', 'o2'] }],
      ),
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
      configYaml(
        {},
        [
          { id: 'd1', url: await deadUrl(), maxConcurrency: 1000 },
          { id: 'd2', url: await deadUrl(), maxConcurrency: 1000 },
        ],
        [{ name: 'm-dead', targets: ['d1', 'd2'] }],
      ),
    );
    try {
      const { errors, ms } = await burst(gw, 'm-dead');
      checkErrors(errors);
      for (const e of errors)
        assert.ok(['upstream_unreachable', 'retry_budget_exhausted'].includes(String(e.code)), `unexpected ${e.status} ${String(e.code)}`);
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
