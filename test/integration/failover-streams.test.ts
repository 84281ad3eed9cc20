/**
 * Failover of streams, end to end: no retry once bytes reached the client, and the
 * first-token timeout that abandons a silent first target.
 *
 * The real gateway on port 0 against scripted fake upstreams on loopback, called with fetch
 * and the official `openai` client. Every config is written for its test (see
 * test/helpers/failover.ts): several upstreams (each its own fake), the targets of a model
 * priced 1, 2, 3 … and `strategy: cheap`, so targets are tried in config order.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { APIConnectionError, APIError } from 'openai';
import { FakeUpstream, type ScriptedReply, type Step } from '../helpers/fake-upstream.js';
import { startGateway, waitFor, type TestGateway } from '../helpers/gateway.js';
import { metricSum } from '../helpers/metrics-text.js';
import { NO_HEALTH, configYaml, post } from '../helpers/failover.js';

function sseChunk(content: string, finish: string | null = null): string {
  return `data: ${JSON.stringify({
    id: 'chatcmpl-sse',
    object: 'chat.completion.chunk',
    created: 1700000000,
    model: 'upstream-model',
    choices: [{ index: 0, delta: content ? { content } : {}, finish_reason: finish }],
  })}\n\n`;
}

const SSE = { 'content-type': 'text/event-stream; charset=utf-8' };

function sseReply(steps: Step[]): ScriptedReply {
  return { status: 200, headers: SSE, steps };
}

/** A complete stream of `parts`. */
function sseOk(parts: string[]): ScriptedReply {
  return sseReply([...parts.map((p) => sseChunk(p)), sseChunk('', 'stop'), 'data: [DONE]\n\n']);
}

describe('streams: no retry after the first byte, first-token timeout', () => {
  let gw: TestGateway;
  const f: Record<string, FakeUpstream> = {};

  before(async () => {
    for (const id of ['s1', 's2', 'f1', 'f2']) f[id] = await new FakeUpstream().start();
    gw = await startGateway(
      configYaml(
        { ...NO_HEALTH, max_attempts: 4, first_token_timeout_ms: 300 },
        Object.entries(f).map(([id, fake]) => ({ id, url: fake.url })),
        [
          { name: 'm-reset', targets: ['s1', 's2'] },
          { name: 'm-silent', targets: ['f1', 'f2'] },
        ],
      ),
    );
  });
  after(async () => {
    await gw.close();
    await Promise.all(Object.values(f).map((u) => u.close()));
  });

  test('a reset after two events: the client gets both chunks then an error; the second target gets nothing', async () => {
    f['s1']!.on(() => sseReply([sseChunk('Hel'), { delayMs: 20 }, sseChunk('lo'), { delayMs: 50 }, { destroy: true }]));
    f['s2']!.on(() => sseOk(['should', 'not', 'be', 'used']));
    const m0 = await gw.metricsText();

    const stream = await gw.client().chat.completions.create({ model: 'm-reset', messages: [{ role: 'user', content: 'hi' }], stream: true });
    const got: string[] = [];
    let thrown: unknown;
    try {
      for await (const c of stream) got.push(c.choices[0]?.delta.content ?? '');
    } catch (err) {
      thrown = err;
    }
    assert.deepEqual(got, ['Hel', 'lo']);
    assert.ok(thrown instanceof APIError, `APIError expected, got ${String(thrown)}`);
    assert.ok(!(thrown instanceof APIConnectionError), 'an error event, not a cut connection');

    // The same over raw HTTP: a 200 stream ending in one error event, no [DONE].
    const raw = await post(gw, 'm-reset', { stream: true });
    assert.equal(raw.status, 200);
    assert.equal(raw.headers.get('x-switchyard-upstream'), 's1');
    const events = raw.text.split(/(?<=\n\n)/).filter((e) => e.trim() !== '');
    assert.equal(events.length, 3, raw.text);
    assert.equal(events[0], sseChunk('Hel'));
    assert.equal(events[1], sseChunk('lo'));
    assert.match(events[2]!, /^data: \{"error":\{/);
    assert.ok(!raw.text.includes('[DONE]'));

    assert.equal(f['s1']!.requests.length, 2);
    assert.equal(f['s2']!.requests.length, 0, 'no retry once bytes reached the client');
    const m1 = await gw.metricsText();
    assert.equal(metricSum(m1, 'switchyard_retries_total') - metricSum(m0, 'switchyard_retries_total'), 0);
    assert.equal(
      metricSum(m1, 'switchyard_upstream_errors_total', { upstream: 's1', class: 'stream' }) -
        metricSum(m0, 'switchyard_upstream_errors_total', { upstream: 's1', class: 'stream' }),
      2,
    );
  });

  test('first-token timeout (300 ms): a silent first target is abandoned and the second streams cleanly', async () => {
    f['f1']!.on(() => sseReply([{ delayMs: 2000 }, sseChunk('too late'), sseChunk('', 'stop'), 'data: [DONE]\n\n']));
    f['f2']!.on(() => sseOk(['Hello', ' from', ' f2']));

    const t0 = Date.now();
    const stream = await gw.client().chat.completions.create({ model: 'm-silent', messages: [{ role: 'user', content: 'hi' }], stream: true });
    const got: string[] = [];
    const finishes: (string | null | undefined)[] = [];
    for await (const c of stream) {
      got.push(c.choices[0]?.delta.content ?? '');
      finishes.push(c.choices[0]?.finish_reason);
    }
    const ms = Date.now() - t0;
    assert.deepEqual(got, ['Hello', ' from', ' f2', '']);
    assert.equal(finishes.at(-1), 'stop');
    assert.ok(ms >= 280, `done after ${ms} ms, before the first-token timeout`);
    assert.ok(ms < 1500, `done after ${ms} ms: the silent upstream was waited for`);
    assert.equal(f['f1']!.requests.length, 1);
    assert.equal(f['f2']!.requests.length, 1);
    await waitFor(() => f['f1']!.requests[0]!.abortedAt !== null, 2000, 'the silent upstream connection to be closed');

    const raw = await post(gw, 'm-silent', { stream: true });
    assert.equal(raw.status, 200);
    assert.equal(raw.headers.get('x-switchyard-upstream'), 'f2');
    assert.equal(raw.headers.get('x-switchyard-attempts'), '2');
    assert.ok(raw.text.endsWith('data: [DONE]\n\n'));
    assert.doesNotMatch(raw.text, /"error"|too late/);
  });
});
