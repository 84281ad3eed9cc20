/**
 * Every request is recorded exactly once: one `request finished` log line and one
 * `switchyard_requests_total` increment per request sent, with the right model, status and
 * outcome, whatever the outcome — on a replica with a Redis store and a key with rpm/tpm
 * limits (where settling the key's limits takes a Redis round trip after the response is
 * out, the window in which a request used to be recorded a second time as `model="none"`).
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { hashKey } from '../../src/auth/keys.js';
import { FakeUpstream } from '../helpers/fake-upstream.js';
import { postChat, startGateway, UPSTREAM_KEY, type TestGateway } from '../helpers/gateway.js';
import { metricSum } from '../helpers/metrics-text.js';
import { RedisServer } from '../helpers/redis-server.js';

const KEY = 'sk-records-0123456789abcdef';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const chunk = (o: Record<string, unknown>) => `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', created: 1, model: 'm', ...o })}\n\n`;
const STREAM_OK = [
  chunk({ choices: [{ index: 0, delta: { role: 'assistant', content: 'hi' }, finish_reason: null }] }),
  chunk({ choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] }),
  chunk({ choices: [], usage: { prompt_tokens: 3, completion_tokens: 1, total_tokens: 4 } }),
  'data: [DONE]\n\n',
];
const STREAM_BROKEN = [
  chunk({ choices: [{ index: 0, delta: { role: 'assistant', content: 'hi' }, finish_reason: null }] }),
  'data: {"error":{"message":"boom","type":"server_error","code":"500"}}\n\n',
];

function config(redisUrl: string, upstream: string): string {
  return `
store: { redis_url: "${redisUrl}", command_timeout_ms: 1000 }
routing: { max_attempts: 1 }
upstreams:
  - { id: fake, provider: openai-compatible, base_url: "${upstream}/v1", api_key: "\${TEST_UPSTREAM_KEY}" }
models:
  - name: gpt-test
    price: { input: 1, output: 1 }
    targets: [{ upstream: fake, model: up-model }]
keys:
  - { name: k-limited, key_sha256: ${hashKey(KEY)}, limits: { rpm: 10000, tpm: 10000000 } }
`;
}

describe('every request is recorded exactly once (Redis store, key with rpm/tpm limits)', () => {
  let redis: RedisServer;
  const fake = new FakeUpstream();
  let gw: TestGateway;

  before(async () => {
    redis = await RedisServer.start();
    await fake.start();
    fake.on((req) => {
      const prompt = String((req.json?.['messages'] as { content: string }[] | undefined)?.[0]?.content ?? '');
      if (prompt === 'bad') return { status: 400, body: { error: { message: 'bad request', type: 'invalid_request_error', param: null, code: null } } };
      if (prompt === 'fail') return { status: 500, body: { error: { message: 'upstream failed', type: 'server_error', param: null, code: null } } };
      if (prompt === 'broken') return { status: 200, headers: { 'content-type': 'text/event-stream' }, steps: STREAM_BROKEN };
      if (prompt === 'slow')
        return { status: 200, headers: { 'content-type': 'text/event-stream' }, steps: [STREAM_OK[0]!, { delayMs: 2000 }, ...STREAM_OK.slice(1)] };
      if (req.json?.['stream'] === true) return { status: 200, headers: { 'content-type': 'text/event-stream' }, steps: STREAM_OK };
      return {
        status: 200,
        body: {
          id: 'c',
          object: 'chat.completion',
          created: 1,
          model: 'm',
          choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }],
          usage: { prompt_tokens: 3, completion_tokens: 1, total_tokens: 4 },
        },
      };
    });
    gw = await startGateway(config(redis.url, fake.url), { TEST_UPSTREAM_KEY: UPSTREAM_KEY });
  });
  after(async () => {
    await gw.close();
    await fake.close();
    await redis.kill();
  });

  test('log lines and request counters match the requests sent, per outcome', async () => {
    const m0 = await gw.metricsText();
    const lines0 = gw.finished().length;
    const send = (prompt: string, extra: Record<string, unknown> = {}, key = KEY, signal?: AbortSignal) =>
      postChat(gw, { model: 'gpt-test', messages: [{ role: 'user', content: prompt }], ...extra }, { key, ...(signal ? { signal } : {}) });

    const expected = { ok: 0, client_error: 0, upstream_error: 0, client_aborted: 0 };
    for (let i = 0; i < 20; i++) {
      assert.equal((await send('hi')).status, 200);
      expected.ok++;
    }
    for (let i = 0; i < 5; i++) {
      const r = await send('hi', { stream: true });
      assert.equal(r.status, 200);
      assert.match(r.text, /data: \[DONE\]/);
      expected.ok++;
    }
    assert.equal((await send('bad')).status, 400);
    expected.client_error++;
    assert.equal((await send('fail')).status, 500);
    expected.upstream_error++;
    const broken = await send('broken', { stream: true });
    assert.equal(broken.status, 200);
    assert.match(broken.text, /"message":"boom"/);
    expected.upstream_error++;
    assert.equal((await send('hi', { model: 'no-such-model' })).status, 404);
    expected.client_error++;
    const ac = new AbortController();
    const leaving = send('slow', { stream: true }, KEY, ac.signal).catch(() => null);
    await sleep(300);
    ac.abort();
    await leaving;
    expected.client_aborted++;
    const sent = Object.values(expected).reduce((a, b) => a + b, 0);

    // Wait until every request has its line (the aborted one ends on the server a moment later).
    for (let i = 0; i < 100 && gw.finished().length - lines0 < sent; i++) await sleep(20);
    await sleep(300); // and give a second record, were one coming, the time to appear
    const lines = gw.finished().slice(lines0);
    assert.equal(lines.length, sent, `one log line per request: ${JSON.stringify(lines.map((l) => [l['status'], l['outcome'], l['model']]))}`);
    assert.equal(new Set(lines.map((l) => l['request_id'])).size, sent, 'no request id logged twice');
    for (const [outcome, n] of Object.entries(expected))
      assert.equal(lines.filter((l) => l['outcome'] === outcome).length, n, `log lines with outcome ${outcome}`);
    assert.equal(lines.filter((l) => l['model'] === null).length, 1, 'only the unknown model has no model');
    assert.equal(lines.filter((l) => l['attempts'] === 0).length, 1, 'only the unknown model made no attempt');

    const m1 = await gw.metricsText();
    const d = (labels: Record<string, string>) => metricSum(m1, 'switchyard_requests_total', labels) - metricSum(m0, 'switchyard_requests_total', labels);
    assert.equal(d({}), sent, 'requests_total grew by the requests sent');
    for (const [outcome, n] of Object.entries(expected)) assert.equal(d({ outcome }), n, `requests_total{outcome="${outcome}"}`);
    assert.equal(d({ model: 'none' }), 1, 'model="none" only for the unknown model');
    assert.equal(d({ model: 'gpt-test', status: '200', outcome: 'ok' }), 25);
    assert.equal(d({ model: 'gpt-test', status: '499', outcome: 'client_aborted' }), 1);
  });
});
