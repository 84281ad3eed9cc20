/**
 * Failover by failure class, end to end: which upstream answers (5xx, 429, 408, 404,
 * 401/403, connection refused, header timeout) move on to the next target, and which
 * (400, 413, 422) go back to the client as they are.
 *
 * The real gateway on port 0 against scripted fake upstreams on loopback, called with fetch
 * and the official `openai` client. Every config is written for its test (see
 * test/helpers/failover.ts): several upstreams (each its own fake), the targets of a model
 * priced 1, 2, 3 … and `strategy: cheap`, so targets are tried in config order.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { APIConnectionError, APIError } from 'openai';
import { FakeUpstream } from '../helpers/fake-upstream.js';
import { UPSTREAM_KEY, startGateway, type TestGateway } from '../helpers/gateway.js';
import { metricSum } from '../helpers/metrics-text.js';
import { NO_HEALTH, configYaml, content, deadUrl, errorOf, errorReply, ok, post, sleep, targetKey, targetState, type UpSpec } from '../helpers/failover.js';

describe('failure classes', () => {
  let gw: TestGateway;
  const f: Record<string, FakeUpstream> = {};

  before(async () => {
    for (const id of ['a', 'b', 'slow', 'cred401', 'cred403', 'x401', 'y403', 'x2', 'y2', 'nf']) f[id] = await new FakeUpstream().start();
    f['b']!.on(() => ok('from b'));
    f['slow']!.on(() => ({ ...ok('too late'), delayMs: 2000 }));
    const credBody = {
      error: {
        message: `Incorrect API key provided: ${UPSTREAM_KEY.slice(0, 8)}***. See your account.`,
        type: 'invalid_request_error',
        param: null,
        code: 'invalid_api_key',
      },
    };
    for (const id of ['cred401', 'x401', 'x2']) f[id]!.on(() => ({ status: 401, body: credBody }));
    for (const id of ['cred403', 'y403', 'y2'])
      f[id]!.on(() => ({
        status: 403,
        body: { error: { message: 'Project does not have access (secret-ish detail)', type: 'permission_error', param: null, code: 'forbidden' } },
      }));
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
    assert.equal(
      metricSum(m1, 'switchyard_upstream_attempts_total', { upstream: 'a', outcome: 'ok' }) -
        metricSum(m0, 'switchyard_upstream_attempts_total', { upstream: 'a', outcome: 'ok' }),
      1,
    );
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
        metricSum(m1, 'switchyard_upstream_attempts_total', { upstream: 'a', outcome: 'bad_request' }) -
          metricSum(m0, 'switchyard_upstream_attempts_total', { upstream: 'a', outcome: 'bad_request' }),
        2,
      );
    });
  }

  test('HTTP 404 (this upstream lacks the model) moves on to the next target, and later requests skip that target', async () => {
    f['nf']!.on(() => ({
      status: 404,
      body: { error: { message: 'The model `m-404-up` does not exist', type: 'invalid_request_error', param: null, code: 'model_not_found' } },
    }));
    const nb = f['b']!.requests.length;
    const m0 = await gw.metricsText();
    const raw = await post(gw, 'm-404');
    assert.equal(raw.status, 200, raw.text);
    assert.equal(content(raw), 'from b');
    assert.equal(raw.headers.get('x-switchyard-attempts'), '2');
    const m1 = await gw.metricsText();
    assert.equal(
      metricSum(m1, 'switchyard_upstream_attempts_total', { upstream: 'nf', outcome: 'not_found' }) -
        metricSum(m0, 'switchyard_upstream_attempts_total', { upstream: 'nf', outcome: 'not_found' }),
      1,
    );
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
    assert.equal(
      metricSum(m1, 'switchyard_upstream_attempts_total', { upstream: 'dead', outcome: 'connect' }) -
        metricSum(m0, 'switchyard_upstream_attempts_total', { upstream: 'dead', outcome: 'connect' }),
      1,
    );
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
    assert.equal(
      metricSum(m1, 'switchyard_upstream_errors_total', { upstream: 'slow', class: 'timeout' }) -
        metricSum(m0, 'switchyard_upstream_errors_total', { upstream: 'slow', class: 'timeout' }),
      1,
    );
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
