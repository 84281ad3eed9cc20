/**
 * A client that goes away aborts the upstream request promptly (within 1 s), and the
 * request is recorded as 499 / client_aborted, with the tokens seen so far.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { APIUserAbortError } from 'openai';
import type { FakeUpstream } from '../helpers/fake-upstream.js';
import { fixtureJson, replay } from '../helpers/recordings.js';
import { CLIENT_KEY, closeAll, startWithUpstream, waitFor, type TestGateway } from '../helpers/gateway.js';
import { metricValue } from '../helpers/metrics-text.js';

describe('client disconnect', () => {
  let upstream: FakeUpstream;
  let gw: TestGateway;

  before(async () => {
    ({ upstream, gw } = await startWithUpstream());
  });
  after(() => closeAll(gw, upstream));

  test('streaming: aborting after a few chunks aborts the upstream within 1 s; logged 499 with tokens so far', async () => {
    // 434 events, 60 ms apart: about 26 s if nobody stopped it.
    upstream.on(replay('openai-chat-stream-text-no-usage-2023.sse', { delayMs: 60 }));
    const reqIndex = upstream.requests.length;
    const logIndex = gw.finished().length;
    const abortedBefore =
      metricValue(await gw.metricsText(), 'switchyard_requests_total', { model: 'gpt-test', status: '499', outcome: 'client_aborted' }) ?? 0;

    const ac = new AbortController();
    const chunks: unknown[] = [];
    let abortAt = 0;
    let caught: unknown = null;
    try {
      const stream = await gw
        .client()
        .chat.completions.create({ model: 'gpt-test', messages: [{ role: 'user', content: 'hello' }], stream: true }, { signal: ac.signal });
      for await (const c of stream) {
        chunks.push(c);
        if (chunks.length === 4) {
          abortAt = Date.now();
          ac.abort();
        }
      }
    } catch (err) {
      caught = err;
    }
    assert.ok(abortAt > 0, 'the client received 4 chunks before aborting');
    // The SDK's stream iterator ends quietly on the caller's own abort (or raises an abort error).
    assert.ok(caught === null || caught instanceof APIUserAbortError || (caught as Error).name === 'AbortError', `unexpected error ${String(caught)}`);
    assert.equal(chunks.length, 4, 'no chunks after the abort');

    const up = await waitFor(() => upstream.requests[reqIndex], 1000, 'upstream request');
    const abortedAt = await waitFor(() => up.abortedAt, 1500, 'upstream abort');
    assert.ok(abortedAt >= abortAt, 'upstream closed after the client aborted');
    assert.ok(abortedAt - abortAt < 1000, `upstream aborted ${abortedAt - abortAt} ms after the client`);
    assert.equal(up.finished, false, 'the upstream did not get to finish the stream');

    const line = await waitFor(() => gw.finished()[logIndex], 2000, 'request log line');
    assert.equal(line['status'], 499);
    assert.equal(line['outcome'], 'client_aborted');
    assert.equal(line['stream'], true);
    const tokens = line['tokens'] as Record<string, number>;
    // At least the 3 content deltas the client got (the first chunk's content is empty),
    // far fewer than the whole recording.
    assert.ok(tokens['output']! >= 3, `tokens.output ${tokens['output']}`);
    assert.ok(tokens['output']! < 100, `tokens.output ${tokens['output']} counts only what was seen`);
    assert.equal(line['tokens_estimated'], true);

    const metrics = await gw.metricsText();
    assert.equal(metricValue(metrics, 'switchyard_requests_in_flight', { model: 'gpt-test' }), 0);
    assert.equal(metricValue(metrics, 'switchyard_requests_total', { model: 'gpt-test', status: '499', outcome: 'client_aborted' }), abortedBefore + 1);
  });

  test('non-streaming: aborting while the upstream is still thinking aborts the upstream within 1 s; logged 499', async () => {
    upstream.on(() => ({ delayMs: 3000, status: 200, body: fixtureJson('openai-chat-gpt5.json') }));
    const reqIndex = upstream.requests.length;
    const logIndex = gw.finished().length;

    const ac = new AbortController();
    let abortAt = 0;
    const timer = setTimeout(() => {
      abortAt = Date.now();
      ac.abort();
    }, 200);
    let caught: unknown = null;
    const t0 = Date.now();
    try {
      await gw.client().chat.completions.create({ model: 'gpt-test', messages: [{ role: 'user', content: 'hello' }] }, { signal: ac.signal });
    } catch (err) {
      caught = err;
    } finally {
      clearTimeout(timer);
    }
    assert.ok(caught instanceof APIUserAbortError, `client sees its own abort, got ${String(caught)}`);
    assert.ok(Date.now() - t0 < 1500, 'the client call returned at its abort, not after the upstream');

    const up = await waitFor(() => upstream.requests[reqIndex], 1000, 'upstream request');
    const abortedAt = await waitFor(() => up.abortedAt, 1500, 'upstream abort');
    assert.ok(abortedAt >= abortAt, 'upstream closed after the client aborted');
    assert.ok(abortedAt - abortAt < 1000, `upstream aborted ${abortedAt - abortAt} ms after the client`);
    assert.equal(up.finished, false);

    const line = await waitFor(() => gw.finished()[logIndex], 2000, 'request log line');
    assert.equal(line['status'], 499);
    assert.equal(line['outcome'], 'client_aborted');
    assert.equal(line['stream'], false);
    assert.ok((line['duration_ms'] as number) < 1500, `gateway finished the request ${String(line['duration_ms'])} ms in, not after the upstream`);

    const metrics = await gw.metricsText();
    assert.equal(metricValue(metrics, 'switchyard_requests_in_flight', { model: 'gpt-test' }), 0);
  });

  test('raw fetch abort mid-stream: upstream aborted, gauge back to 0, gateway still serves', async () => {
    upstream.on(replay('openai-chat-stream-text-no-usage-2023.sse', { delayMs: 60 }));
    const reqIndex = upstream.requests.length;
    const logIndex = gw.finished().length;
    const ac = new AbortController();
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${CLIENT_KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'gpt-test', messages: [{ role: 'user', content: 'hello' }], stream: true }),
      signal: ac.signal,
    });
    assert.equal(res.status, 200);
    const reader = res.body!.getReader();
    let text = '';
    while ((text.match(/\n\n/g) ?? []).length < 3) {
      const { value, done } = await reader.read();
      assert.ok(!done);
      text += Buffer.from(value).toString('utf8');
    }
    // While the stream is open the gauge counts it.
    assert.equal(metricValue(await gw.metricsText(), 'switchyard_requests_in_flight', { model: 'gpt-test' }), 1);
    const abortAt = Date.now();
    ac.abort();
    await reader.read().catch(() => undefined);

    const up = await waitFor(() => upstream.requests[reqIndex], 1000, 'upstream request');
    const abortedAt = await waitFor(() => up.abortedAt, 1500, 'upstream abort');
    assert.ok(abortedAt - abortAt < 1000, `upstream aborted ${abortedAt - abortAt} ms after the client`);
    const line = await waitFor(() => gw.finished()[logIndex], 2000, 'request log line');
    assert.equal(line['status'], 499);
    assert.equal(line['outcome'], 'client_aborted');
    assert.equal(metricValue(await gw.metricsText(), 'switchyard_requests_in_flight', { model: 'gpt-test' }), 0);

    // The gateway is healthy afterwards: a normal request completes.
    upstream.on(replay('openai-chat-stream-text-include-usage.sse'));
    const stream = await gw.client().chat.completions.create({ model: 'gpt-test', messages: [{ role: 'user', content: 'hi' }], stream: true });
    let n = 0;
    for await (const _c of stream) n++;
    assert.ok(n > 0);
  });
});
