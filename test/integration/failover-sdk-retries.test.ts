/**
 * The openai client's own retries on top of the gateway's, end to end: a final 5xx says
 * x-should-retry: false, so the SDK does not retry what the gateway already retried.
 *
 * The real gateway on port 0 against scripted fake upstreams on loopback, called with fetch
 * and the official `openai` client. Every config is written for its test (see
 * test/helpers/failover.ts): several upstreams (each its own fake), the targets of a model
 * priced 1, 2, 3 … and `strategy: cheap`, so targets are tried in config order.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import OpenAI, { APIConnectionError, APIError } from 'openai';
import { FakeUpstream, type ScriptedReply } from '../helpers/fake-upstream.js';
import { CLIENT_KEY, startGateway, waitFor, type TestGateway } from '../helpers/gateway.js';
import { configYaml, errorReply } from '../helpers/failover.js';

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
      configYaml(
        { max_attempts: MAX_ATTEMPTS },
        [
          { id: 'o1', url: o1.url },
          { id: 'o2', url: o2.url },
        ],
        [{ name: 'm-sdk', targets: ['o1', 'o2'] }],
      ),
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
