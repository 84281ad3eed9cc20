/**
 * A passthrough request whose response never finishes (the client went away mid-stream, or
 * the drain cut the connection at its deadline) is still recorded like any other: one
 * `request finished` log line and a `switchyard_requests_total` sample (docs/observability.md, "The request log line":
 * one JSON log line per finished request). Fastify's onResponse hook only runs on the
 * response's 'finish'/'error', not on a 'close' without finish, so these are the cases it
 * would miss.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { FakeUpstream } from '../helpers/fake-upstream.js';
import { CLIENT_KEY, closeAll, finishedLine, startGateway, testConfigYaml, type TestGateway } from '../helpers/gateway.js';

/** audio/speech streamed slowly: 40 chunks, 100 ms apart (4 s). */
function slowSpeech(upstream: FakeUpstream): void {
  upstream.on(() => ({
    status: 200,
    headers: { 'content-type': 'audio/mpeg' },
    steps: Array.from({ length: 40 }, (_, i) => [{ delayMs: 100 }, `chunk-${i};`]).flat(),
  }));
}

/** A gateway passing everything it does not model through to `upstream`. */
const passthroughYaml = (upstream: FakeUpstream): string => `${testConfigYaml(upstream.url)}\npassthrough:\n  upstream: fake\n`;

/** Starts a passthrough audio/speech call and reads its first chunk; `done` settles when the body ends or fails. */
async function startSpeech(gw: TestGateway, signal?: AbortSignal): Promise<{ requestId: string; done: Promise<unknown> }> {
  const res = await fetch(`${gw.url}/v1/audio/speech`, {
    method: 'POST',
    headers: { authorization: `Bearer ${CLIENT_KEY}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'tts-1', input: 'hello' }),
    ...(signal ? { signal } : {}),
  });
  assert.equal(res.status, 200);
  const requestId = res.headers.get('x-request-id')!;
  const reader = res.body!.getReader();
  await reader.read(); // the stream has started
  const done = (async () => {
    for (;;) if ((await reader.read()).done) return;
  })().catch((e: unknown) => e);
  return { requestId, done };
}

describe('a passthrough request the client aborts is logged and counted', () => {
  let upstream: FakeUpstream;
  let gw: TestGateway;
  before(async () => {
    upstream = await new FakeUpstream().start();
    slowSpeech(upstream);
    gw = await startGateway(passthroughYaml(upstream));
  });
  after(() => closeAll(gw, upstream));

  test('client aborts a streamed passthrough response: one request finished line (499) and a counted request', async () => {
    const ac = new AbortController();
    const { requestId, done } = await startSpeech(gw, ac.signal);
    await sleep(300);
    ac.abort();
    await done;
    const line = await finishedLine(gw, requestId).catch(() => undefined);
    assert.ok(line, 'a passthrough request aborted by the client has a request finished log line');
    assert.equal(line['status'], 499);
    assert.equal(line['outcome'], 'client_aborted');
    const metrics = await gw.metricsText();
    assert.match(metrics, /switchyard_requests_total\{[^}]*status="499"[^}]*\} 1/);
  });
});

describe('a passthrough stream cut at the drain deadline is logged', () => {
  test('drain.shutdown past the deadline: the cut passthrough request has a request finished line', async () => {
    const upstream = await new FakeUpstream().start();
    slowSpeech(upstream);
    const gw = await startGateway(passthroughYaml(upstream));
    try {
      const { requestId, done } = await startSpeech(gw);
      const result = await gw.drain.shutdown(300, 200);
      await done;
      assert.equal(result.cut, 1, 'the passthrough request was still open and was cut');
      const line = gw.finished().find((l) => l['request_id'] === requestId);
      assert.ok(line, 'the passthrough request cut by the drain has a request finished log line');
    } finally {
      await upstream.close();
    }
  });
});
