/**
 * Property tests over the inbound bodies of the client APIs (issue 30): random valid-ish
 * and hostile bodies (test/helpers/hostile-bodies.ts) sent to ONE real gateway whose three
 * models sit on three healthy fake accounts, one per wire API (chat, Responses, Messages),
 * so every (client API, wire API) pair is crossed. Whatever the body:
 * - the gateway answers; never a 5xx (the accounts are healthy, so a 5xx is its own);
 * - a 4xx is in the client API's error shape (OpenAI `{error:{message,type}}`, Anthropic
 *   `{type:"error",error:{type,message}}`);
 * - a 200 stream ends with the API's terminal event, no error frame;
 * and afterwards no account was blamed (no upstream error counted, no target cooling or
 * probing on /metrics), nothing was logged at error level, and the process still serves.
 * fast-check's own seeds (printed on a failure, with the shrunk body) are used.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import fc from 'fast-check';
import { FakeUpstream } from '../helpers/fake-upstream.js';
import { CLIENT_KEY, closeAll, startGateway, type TestGateway } from '../helpers/gateway.js';
import { answer, hostileConfigYaml } from '../helpers/hostile-gateway.js';
import { hostile, rawJson, VALID_BODIES, messagesBody } from '../helpers/hostile-bodies.js';
import { metricSum } from '../helpers/metrics-text.js';

type Obj = Record<string, unknown>;
const RUNS = 60;

const ROUTES = [
  { path: '/v1/chat/completions', api: 'chat', anthropic: false },
  { path: '/v1/responses', api: 'responses', anthropic: false },
  { path: '/v1/messages', api: 'messages', anthropic: true },
  { path: '/v1/messages/count_tokens', api: 'messages', anthropic: true },
] as const;
type Route = (typeof ROUTES)[number];

/** Bodies a bridge answered 500 to before the fixes of issue 30 (an item `type` `String()` throws on), run first every time. */
const NO_TO_STRING = [{ toString: null }];
const KNOWN_BAD: Readonly<Record<string, Obj>> = {
  '/v1/chat/completions': { model: 'm-anth', messages: [{ role: 'user', content: [{ type: NO_TO_STRING, text: 'x' }] }] },
  '/v1/responses': { model: 'm-chat', input: [{ type: NO_TO_STRING, id: 'rs_a', summary: [] }] },
  '/v1/messages': { model: 'm-chat', messages: [{ role: 'user', content: [{ type: NO_TO_STRING, text: 'x' }] }] },
  '/v1/messages/count_tokens': { model: 'm-chat', messages: [{ role: 'user', content: [{ type: NO_TO_STRING, text: 'x' }] }] },
};

const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The API's terminal event in a 200 stream, and no error frame. */
function checkStream(route: Route, text: string): void {
  assert.doesNotMatch(text, /^event: error$|^data: \{"error"|"type":"response\.failed"|"type":"error"/m, 'no error frame in a 200 stream');
  if (route.api === 'chat') assert.match(text, /data: \[DONE\]\n\n$/, 'ends with [DONE]');
  else if (route.api === 'responses') assert.match(text, /event: response\.(completed|incomplete)\n/, 'a terminal response event');
  else assert.match(text, /event: message_stop\n/, 'message_stop');
}

/** Sends `body` as JSON text and checks the answer's properties. */
async function check(gw: TestGateway, route: Route, body: string): Promise<void> {
  const res = await fetch(`${gw.url}${route.path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${CLIENT_KEY}`, 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
    body,
  });
  const text = await res.text();
  const where = `${route.path} answered ${res.status}: ${text.slice(0, 300)}`;
  assert.ok(res.status < 500, `no 5xx of the gateway's own making; ${where}`);
  if (res.status >= 400) {
    const err = JSON.parse(text) as Obj;
    if (route.anthropic) {
      assert.equal(err['type'], 'error', where);
      assert.ok(isObj(err['error']) && typeof err['error']['type'] === 'string' && typeof err['error']['message'] === 'string', where);
    } else {
      assert.ok(isObj(err['error']) && typeof err['error']['message'] === 'string' && typeof err['error']['type'] === 'string', where);
    }
    return;
  }
  assert.equal(res.status, 200, where);
  if ((res.headers.get('content-type') ?? '').startsWith('text/event-stream')) checkStream(route, text);
  else assert.ok(isObj(JSON.parse(text)), where);
}

describe('hostile inbound bodies against one gateway on healthy accounts', { timeout: 120_000 }, () => {
  let upstream: FakeUpstream;
  let gw: TestGateway;

  before(async () => {
    upstream = await new FakeUpstream().start();
    upstream.on(answer);
    gw = await startGateway(hostileConfigYaml(upstream.url));
  });
  after(() => closeAll(gw, upstream));

  for (const route of ROUTES) {
    const valid = route.path.endsWith('count_tokens') ? messagesBody : VALID_BODIES[route.api];
    test(`${route.path}: valid-ish bodies`, async () => {
      await fc.assert(
        fc.asyncProperty(valid, (b) => check(gw, route, rawJson(b))),
        { numRuns: RUNS, includeErrorInReport: true },
      );
    });
    test(`${route.path}: hostile bodies`, async () => {
      await fc.assert(
        fc.asyncProperty(hostile(valid), (b) => check(gw, route, rawJson(b))),
        { numRuns: RUNS, includeErrorInReport: true, examples: [[KNOWN_BAD[route.path]]] },
      );
    });
  }

  test('afterwards: no account blamed, nothing logged at error level, and the gateway still serves', async () => {
    const metrics = await gw.metricsText();
    assert.equal(metricSum(metrics, 'switchyard_upstream_errors_total'), 0, 'no upstream failure counted');
    assert.equal(metricSum(metrics, 'switchyard_target_state', { state: 'cooling' }), 0, 'no target cooling');
    assert.equal(metricSum(metrics, 'switchyard_target_state', { state: 'probing' }), 0, 'no target probing');
    assert.equal(metricSum(metrics, 'switchyard_target_state', { state: 'healthy' }), 3, 'the three targets healthy');
    const errors = gw.logLines().filter((l) => typeof l['level'] === 'number' && l['level'] >= 50);
    assert.deepEqual(errors.slice(0, 3), [], 'no error-level log line');
    assert.ok(upstream.requests.length > 0, 'the accounts were called');
    const health = await fetch(`${gw.url}/healthz`);
    assert.equal(health.status, 200);
  });
});
