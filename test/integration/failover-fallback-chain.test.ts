/**
 * Fallback models, end to end: a model's targets, then each of its `fallbacks` in order,
 * the x-switchyard-fallback header, and fallback cycles refused by parseConfig.
 *
 * The real gateway on port 0 against scripted fake upstreams on loopback, called with fetch
 * and the official `openai` client. Every config is written for its test (see
 * test/helpers/failover.ts): several upstreams (each its own fake), the targets of a model
 * priced 1, 2, 3 … and `strategy: cheap`, so targets are tried in config order.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { ConfigError } from '../../src/config/load.js';
import { parseTestConfig } from '../helpers/config.js';
import { FakeUpstream } from '../helpers/fake-upstream.js';
import { UPSTREAM_KEY, startGateway, waitFor, type TestGateway } from '../helpers/gateway.js';
import { metricSum } from '../helpers/metrics-text.js';
import { NO_HEALTH, configYaml, content, errorReply, ok, post, type ModelSpec } from '../helpers/failover.js';

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
