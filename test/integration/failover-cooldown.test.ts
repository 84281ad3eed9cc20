/**
 * Target health, end to end: the cooldown / circuit breaker (cooling after repeated
 * failures, one probe, doubled cooldown after a failed probe), and the target tried when
 * every target is cooling.
 *
 * The real gateway on port 0 against scripted fake upstreams on loopback, called with fetch
 * and the official `openai` client. Every config is written for its test (see
 * test/helpers/failover.ts): several upstreams (each its own fake), the targets of a model
 * priced 1, 2, 3 … and `strategy: cheap`, so targets are tried in config order.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { FakeUpstream } from '../helpers/fake-upstream.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { NO_HEALTH, configYaml, content, errorReply, ok, post, sleep, targetKey, targetState } from '../helpers/failover.js';

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
