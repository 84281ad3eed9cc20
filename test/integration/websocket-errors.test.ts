/**
 * The Responses WebSocket's refusals and failures: a bad key is refused at the upgrade (401
 * over HTTP), the mode switched off answers 426, a key over its limit gets an `error` event
 * in the WebSocket error shape and keeps its socket, hostile frames get `error` events and
 * never cost the socket, a second `response.create` waits for the first, a client leaving
 * mid-turn is booked 499 and frees its slot, and a draining gateway closes its sockets
 * (1001) once their turns are done.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { hashKey } from '../../src/auth/keys.js';
import { FakeUpstream } from '../helpers/fake-upstream.js';
import { CLIENT_KEY, startGateway, testConfigYaml, waitFor, type TestGateway } from '../helpers/gateway.js';
import { metricValue } from '../helpers/metrics-text.js';
import { replay } from '../helpers/recordings.js';
import { refusedUpgrade, WsClient, type WsEvent } from '../helpers/ws-client.js';

const RPM_KEY = 'sk-test-ws-rpm-0123456789abcdef';
const ONE_KEY = 'sk-test-ws-one-0123456789abcdef';
const BODY_LIMIT = 65_536;

function configYaml(url: string, server = ''): string {
  const keys = `
  - { name: rpm-1, key_sha256: ${hashKey(RPM_KEY)}, limits: { rpm: 1 } }
  - { name: one-at-a-time, key_sha256: ${hashKey(ONE_KEY)}, limits: { max_concurrency: 1 } }
`;
  return `${testConfigYaml(url, { bodyLimit: BODY_LIMIT, ...(server ? { server } : {}) }).trimEnd()}${keys}`;
}

const TURN = { model: 'gpt-test', input: 'Say hello.' };
const errorOf = (ev: WsEvent): { status: unknown; error: Record<string, unknown>; headers?: Record<string, string> } => {
  assert.equal(ev.type, 'error', JSON.stringify(ev).slice(0, 500));
  return ev as never;
};

describe('Responses WebSocket: refusals, hostile frames, aborts', () => {
  const upstream = new FakeUpstream();
  let gw: TestGateway;

  before(async () => {
    await upstream.start();
    upstream.on(replay('openai-chat-stream-text-include-usage.sse'));
    gw = await startGateway(configYaml(upstream.url));
  });
  after(async () => {
    await gw?.close();
    await upstream.close();
  });

  test('a bad or missing key is refused at the upgrade with 401 and an OpenAI error body', async () => {
    for (const headers of [{ authorization: 'Bearer sk-not-a-key-0000000000' }, {}] as Record<string, string>[]) {
      const r = await refusedUpgrade(gw.url, headers);
      assert.equal(r.status, 401);
      assert.equal((JSON.parse(r.body) as { error: { code: string } }).error.code, 'invalid_api_key');
    }
  });

  test('a plain GET /v1/responses is told to upgrade (426)', async () => {
    const res = await fetch(`${gw.url}/v1/responses`, { headers: { authorization: `Bearer ${CLIENT_KEY}` } });
    assert.equal(res.status, 426);
    assert.equal(res.headers.get('upgrade'), 'websocket');
    assert.equal(((await res.json()) as { error: { code: string } }).error.code, 'upgrade_required');
  });

  test('a key over its limit gets an error event (429, with its headers) and the socket stays open', async () => {
    const sock = await WsClient.open(gw.url, RPM_KEY);
    assert.equal((await sock.turn(TURN)).at(-1)!.type, 'response.completed');
    const refused = errorOf((await sock.turn(TURN)).at(-1)!);
    assert.equal(refused.status, 429);
    assert.equal(refused.error['code'], 'rate_limit_exceeded');
    assert.ok(refused.headers?.['retry-after'], 'retry-after passed on');
    const requestId = refused.headers?.['x-request-id'];
    assert.ok(requestId);
    const line = await waitFor(() => gw.finished().find((l) => l['request_id'] === requestId), 2000, 'the refused turn is recorded');
    assert.deepEqual([line['status'], line['transport'], line['key']], [429, 'websocket', 'rpm-1']);
    await new Promise((r) => setTimeout(r, 100));
    assert.equal(gw.finished().filter((l) => l['request_id'] === requestId).length, 1, 'one record for the turn');
    // Still usable: the next frame is answered.
    sock.send('not json');
    assert.equal(errorOf(await sock.next()).status, 400);
    assert.equal(sock.closeCode, null);
    sock.close();
  });

  test('hostile frames get error events; the socket then still serves a turn', async () => {
    const sock = await WsClient.open(gw.url);
    const cases: [string | Buffer, number, string | null][] = [
      ['{"type":"response.create",', 400, 'invalid_json'],
      ['[1,2]', 400, null],
      [JSON.stringify({ type: 'session.update' }), 400, null],
      [JSON.stringify({ model: 'gpt-test' }), 400, null],
      [JSON.stringify({ type: 'response.create', ...TURN, background: true }), 400, null],
      [JSON.stringify({ type: 'response.create', model: 'gpt-test', input: 'x'.repeat(BODY_LIMIT + 10) }), 413, 'request_too_large'],
      [Buffer.from([1, 2, 3]), 400, null],
      [JSON.stringify({ type: 'response.create', model: 'no-such-model', input: 'hi' }), 404, 'model_not_found'],
      [JSON.stringify({ type: 'response.create', model: 'gpt-test', input: 42 }), 400, null],
    ];
    for (const [frame, status, code] of cases) {
      sock.ws.send(frame);
      const err = errorOf(await sock.next());
      assert.equal(err.status, status, `${String(frame).slice(0, 60)} -> ${JSON.stringify(err)}`);
      if (code) assert.equal(err.error['code'], code);
      assert.equal(typeof err.error['message'], 'string');
    }
    assert.equal((await sock.turn(TURN)).at(-1)!.type, 'response.completed');
    sock.close();
    // Past twice the body limit the frame is not read at all: the socket closes with 1009 (message too big).
    const huge = await WsClient.open(gw.url);
    huge.ws.send('x'.repeat(2 * BODY_LIMIT + 1));
    assert.equal(await huge.closed(), 1009);
    assert.equal((await gw.app.inject({ method: 'GET', url: '/healthz' })).statusCode, 200);
  });

  test('a response.create sent while one runs waits for it (one response in flight per socket)', async () => {
    upstream.on(replay('openai-chat-stream-text-include-usage.sse', { delayMs: 5 }));
    const sock = await WsClient.open(gw.url);
    sock.send(TURN);
    sock.send({ ...TURN, input: 'Again.' });
    const first = await sock.untilTerminal();
    const second = await sock.untilTerminal();
    const id = (evs: WsEvent[]): unknown => (evs.at(-1)!['response'] as { id: string }).id;
    assert.equal(first.at(-1)!.type, 'response.completed');
    assert.equal(second.at(-1)!.type, 'response.completed');
    assert.ok(
      first.every((e) => (e['response'] as { id?: string } | undefined)?.id === undefined || (e['response'] as { id: string }).id === id(first)),
      'no event of turn 2 inside turn 1',
    );
    assert.notEqual(id(first), id(second));
    sock.close();
    upstream.on(replay('openai-chat-stream-text-include-usage.sse'));
  });

  test('the client closing mid-turn aborts it: 499 client_aborted, the upstream call cancelled, the slot free', async () => {
    upstream.on(replay('openai-chat-stream-text-no-usage-2023.sse', { delayMs: 60 }));
    const upIndex = upstream.requests.length;
    const sock = await WsClient.open(gw.url, ONE_KEY);
    sock.send(TURN);
    for (let i = 0; i < 3; i++) await sock.next();
    const closedAt = Date.now();
    sock.close();
    const up = await waitFor(() => upstream.requests[upIndex], 1000, 'upstream request');
    const abortedAt = await waitFor(() => up.abortedAt, 2000, 'upstream abort');
    assert.ok(abortedAt - closedAt < 1000, `upstream cancelled ${abortedAt - closedAt} ms after the close`);
    const line = await waitFor(() => gw.finished().find((l) => l['key'] === 'one-at-a-time'), 2000, 'the aborted turn is recorded');
    assert.deepEqual([line['status'], line['outcome'], line['transport']], [499, 'client_aborted', 'websocket']);
    assert.equal(gw.finished().filter((l) => l['request_id'] === line['request_id']).length, 1, 'one record for the turn');
    assert.ok((line['tokens'] as { output: number }).output > 0, 'the tokens seen so far are counted');
    assert.equal(metricValue(await gw.metricsText(), 'switchyard_requests_in_flight', { model: 'gpt-test' }), 0);
    // The key's one concurrency slot is free again.
    upstream.on(replay('openai-chat-stream-text-include-usage.sse'));
    const again = await WsClient.open(gw.url, ONE_KEY);
    assert.equal((await again.turn(TURN)).at(-1)!.type, 'response.completed');
    again.close();
  });
});

describe('Responses WebSocket: switched off, and graceful shutdown', () => {
  const upstream = new FakeUpstream();
  before(() => upstream.start());
  after(() => upstream.close());

  test('server.websocket.enabled: false answers the upgrade 426 with what to do instead', async () => {
    const gw = await startGateway(configYaml(upstream.url, '  websocket: { enabled: false }'));
    try {
      const r = await refusedUpgrade(gw.url, { authorization: `Bearer ${CLIENT_KEY}` });
      assert.equal(r.status, 426);
      const err = (JSON.parse(r.body) as { error: { code: string; message: string } }).error;
      assert.equal(err.code, 'websocket_disabled');
      assert.match(err.message, /POST \/v1\/responses/);
    } finally {
      await gw.close();
    }
  });

  test('a draining gateway closes an idle socket at once and a busy one after its turn, both 1001', async () => {
    upstream.on(replay('openai-chat-stream-text-include-usage.sse', { delayMs: 20 }));
    const gw = await startGateway(configYaml(upstream.url));
    const idle = await WsClient.open(gw.url);
    const busy = await WsClient.open(gw.url);
    busy.send(TURN);
    await busy.next();
    const result = gw.drain.shutdown(5_000);
    assert.equal(await idle.closed(2000), 1001);
    const events = await busy.untilTerminal();
    assert.equal(events.at(-1)!.type, 'response.completed', 'the turn in flight finished');
    assert.equal(await busy.closed(2000), 1001);
    assert.equal((await result).drained, true);
    const line = await waitFor(() => gw.finished().find((l) => l['transport'] === 'websocket'), 2000, 'the turn is recorded');
    assert.equal(line['status'], 200);
  });

  test('past the drain deadline a busy turn ends with a shutting_down error event, then the socket closes 1001', async () => {
    upstream.on(replay('openai-chat-stream-text-no-usage-2023.sse', { delayMs: 60 }));
    const gw = await startGateway(configYaml(upstream.url));
    const busy = await WsClient.open(gw.url);
    busy.send(TURN);
    await busy.next();
    const result = gw.drain.shutdown(300, 1_000);
    const last = (await busy.untilTerminal()).at(-1)!;
    assert.deepEqual([last.type, last['code']], ['error', 'shutting_down']);
    assert.equal(await busy.closed(3000), 1001);
    const r = await result;
    assert.deepEqual([r.drained, r.aborted, r.cut], [false, 1, 0]);
    const line = await waitFor(() => gw.finished().find((l) => l['transport'] === 'websocket'), 2000, 'the cut turn is recorded');
    assert.deepEqual([line['status'], line['outcome']], [200, 'gateway_error']);
  });
});
