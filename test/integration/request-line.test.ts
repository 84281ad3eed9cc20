/**
 * The finished-request log line an operator acts on (issue 29): `requested_model` is the
 * `model` id exactly as the client sent it and `model` the configured model it names, on
 * every request (an alias that resolved, a 404 unknown id, a 400 model this endpoint cannot
 * reach); the gateway's own sheds and refusals have their own outcome (`gateway_shed`,
 * `gateway_refused`), not `upstream_error`, in the line and in `switchyard_requests_total`.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { hashKey } from '../../src/auth/keys.js';
import { FakeUpstream, type ReceivedRequest, type ScriptedReply } from '../helpers/fake-upstream.js';
import { CLIENT_KEY, finishedLine, postChat, startGateway, type RawReply, type TestGateway } from '../helpers/gateway.js';
import { metricValue } from '../helpers/metrics-text.js';

const answer: ScriptedReply = {
  status: 200,
  body: {
    id: 'c',
    object: 'chat.completion',
    created: 1,
    model: 'm',
    choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }],
    usage: { prompt_tokens: 5, completion_tokens: 2, total_tokens: 7 },
  },
};

/** Slow models answer after 600 ms (they hold their account's one place); `flaky-*` fail. */
function script(req: ReceivedRequest): ScriptedReply {
  const model = String(req.json?.['model'] ?? '');
  if (model.startsWith('flaky-')) return { status: 500, body: { error: { message: 'boom', type: 'server_error' } } };
  if (model === 'deep-x' || model === 'busy-x') return { ...answer, delayMs: 600 };
  return answer;
}

function yaml(url: string): string {
  const acct = (id: string, extra = '') => `  - { id: ${id}, provider: openai-compatible, base_url: "${url}/v1", api_key: "\${TEST_UPSTREAM_KEY}"${extra} }`;
  return `
server: { log_level: info }
routing: { max_attempts: 2, cooldown: { failures: 1000 }, retry_budget: { ratio: 0, min_retries: 0 }, queue: { max: 0, timeout_ms: 100 } }
upstreams:
${acct('main')}
${acct('deep-acct', ', max_concurrency: 1, capacity: { start: 1, ceiling: 1 }')}
${acct('busy-acct', ', max_concurrency: 1')}
${acct('paid-acct')}
models:
  - { name: claude-sonnet-4.6, aliases: [claude-opus-5-5], price: { input: 1, output: 1 }, targets: [{ upstream: main, model: sonnet-x }] }
  - { name: deep, reasoning: true, shed: { policy: reject }, price: { input: 1, output: 1 }, targets: [{ upstream: deep-acct, model: deep-x }] }
  - { name: busy, price: { input: 1, output: 1 }, targets: [{ upstream: busy-acct, model: busy-x }] }
  - { name: paid, price: { input: 1, output: 1 }, targets: [{ upstream: paid-acct, model: paid-x }] }
  - { name: flaky, price: { input: 1, output: 1 }, targets: [{ upstream: main, model: flaky-1 }, { upstream: main, model: flaky-2 }] }
budgets:
  - { name: paid-credit, amount_usd: 0.000001, period: day, upstream: paid-acct }
keys:
  - { name: team-a, key_sha256: ${hashKey(CLIENT_KEY)} }
`;
}

describe('the request line: requested and resolved model, and the gateway own outcomes', () => {
  let upstream: FakeUpstream;
  let gw: TestGateway;
  before(async () => {
    upstream = await new FakeUpstream().start();
    upstream.on(script);
    gw = await startGateway(yaml(upstream.url));
  });
  after(async () => {
    await gw?.close();
    await upstream?.close();
  });

  const chat = (model: string, extra: Record<string, unknown> = {}): Promise<RawReply> =>
    postChat(gw, { model, messages: [{ role: 'user', content: 'hi' }], ...extra });
  const lineOf = (r: RawReply) => finishedLine(gw, r.headers.get('x-request-id')!);
  const requests = async (labels: Record<string, string>) => metricValue(await gw.metricsText(), 'switchyard_requests_total', labels) ?? 0;

  test('an alias: requested_model is the id sent, model the configured model it names', async () => {
    const r = await chat('claude-opus-5-5');
    assert.equal(r.status, 200);
    const line = await lineOf(r);
    assert.equal(line['requested_model'], 'claude-opus-5-5');
    assert.equal(line['model'], 'claude-sonnet-4.6');
    assert.equal(line['upstream_model'], 'sonnet-x');
    assert.equal(line['outcome'], 'ok');
  });

  test('a 404 unknown model: the id the client sent is on the line (the id to alias)', async () => {
    const r = await chat('gpt-9-ultra-preview');
    assert.equal(r.status, 404);
    const line = await lineOf(r);
    assert.equal(line['requested_model'], 'gpt-9-ultra-preview');
    assert.equal(line['model'], null);
    assert.equal(line['outcome'], 'client_error');
  });

  test('an id longer than 256 characters is cut to 256', async () => {
    const long = `m-${'x'.repeat(400)}`;
    const line = await lineOf(await chat(long));
    assert.equal(line['requested_model'], long.slice(0, 256));
  });

  test('a deep call shed by the gateway (503 reasoning_burst_shed) is gateway_shed', async () => {
    const before = await requests({ model: 'deep', status: '503', outcome: 'gateway_shed' });
    const slow = chat('deep', { reasoning_effort: 'high' });
    await sleep(150);
    const r = await chat('deep', { reasoning_effort: 'high' });
    assert.equal(r.status, 503, r.text);
    assert.match(r.text, /reasoning_burst_shed/);
    const line = await lineOf(r);
    assert.equal(line['outcome'], 'gateway_shed');
    assert.equal(line['error_class'], null);
    assert.equal(line['requested_model'], 'deep');
    assert.equal(await requests({ model: 'deep', status: '503', outcome: 'gateway_shed' }), before + 1);
    assert.equal((await slow).status, 200);
  });

  test('a full concurrency queue (503 upstream_overloaded) is gateway_shed, with no upstream class', async () => {
    const slow = chat('busy');
    await sleep(150);
    const r = await chat('busy');
    assert.equal(r.status, 503, r.text);
    assert.match(r.text, /upstream_overloaded/);
    const line = await lineOf(r);
    assert.equal(line['outcome'], 'gateway_shed');
    assert.equal(line['error_class'], null);
    assert.equal(await requests({ model: 'busy', status: '503', outcome: 'gateway_shed' }), 1);
    assert.equal((await slow).status, 200);
  });

  test('an account whose budget is spent (503) is gateway_refused', async () => {
    assert.equal((await chat('paid')).status, 200);
    const r = await chat('paid');
    assert.equal(r.status, 503, r.text);
    assert.match(r.text, /paid-credit/);
    const line = await lineOf(r);
    assert.equal(line['outcome'], 'gateway_refused');
    assert.equal(line['attempts'], 0);
    assert.equal(await requests({ model: 'paid', status: '503', outcome: 'gateway_refused' }), 1);
  });

  test('a spent retry budget (503) is gateway_refused, with the upstream failure class that led to it', async () => {
    const r = await chat('flaky');
    assert.equal(r.status, 503, r.text);
    assert.match(r.text, /retry_budget_exhausted/);
    const line = await lineOf(r);
    assert.equal(line['outcome'], 'gateway_refused');
    assert.equal(line['error_class'], 'server');
    assert.equal(await requests({ model: 'flaky', status: '503', outcome: 'gateway_refused' }), 1);
  });
});
