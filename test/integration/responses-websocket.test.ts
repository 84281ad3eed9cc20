/**
 * The Responses API's WebSocket mode (`GET /v1/responses` upgraded, one `response.create`
 * frame per turn), driven with the `ws` client as Codex speaks it, against a fake upstream
 * that speaks chat completions and one that speaks the Responses API: each turn is a request
 * of its own (its own request id, one finished log line with its usage, marked
 * `transport: websocket`), a follow-up with `previous_response_id` and only the new input
 * is continued from the gateway's journal, and a warmup (`generate: false`) is answered by
 * the gateway without calling an upstream.
 */
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import { hashKey } from '../../src/auth/keys.js';
import { FakeUpstream } from '../helpers/fake-upstream.js';
import { CLIENT_KEY, startGateway, waitFor, type TestGateway } from '../helpers/gateway.js';
import { metricValue } from '../helpers/metrics-text.js';
import { replay } from '../helpers/recordings.js';
import { WsClient, type WsEvent } from '../helpers/ws-client.js';

function configYaml(url: string): string {
  const t = '{ connect_ms: 2000, first_byte_ms: 5000, idle_ms: 5000 }';
  return `
routing:
  max_attempts: 1
upstreams:
  - { id: chat, provider: openai-compatible, base_url: "${url}/v1", api_key: "\${TEST_UPSTREAM_KEY}", timeouts: ${t} }
  - { id: oai, provider: openai-compatible, base_url: "${url}/v1", api_key: "\${TEST_UPSTREAM_KEY}", options: { responses: true }, timeouts: ${t} }
models:
  - name: chat-model
    reasoning: false
    price: { input: 2, output: 8 }
    targets: [{ upstream: chat, model: upstream-chat }]
  - name: resp-model
    reasoning: false
    price: { input: 2, output: 8 }
    targets: [{ upstream: oai, model: upstream-resp }]
keys:
  - { name: team-a, key_sha256: ${hashKey(CLIENT_KEY)} }
`;
}

/** The `request finished` lines of turns that came over a WebSocket. */
const wsLines = (gw: TestGateway): Record<string, unknown>[] => gw.finished().filter((l) => l['transport'] === 'websocket');

const completed = (events: WsEvent[]): Record<string, unknown> => {
  const last = events.at(-1)!;
  assert.equal(
    last.type,
    'response.completed',
    `the turn completed: ${JSON.stringify(events.filter((e) => e.type !== 'response.output_text.delta')).slice(0, 1500)}`,
  );
  return last['response'] as Record<string, unknown>;
};

describe('Responses API over WebSocket', () => {
  const upstream = new FakeUpstream();
  let gw: TestGateway;
  let sock: WsClient | undefined;

  before(async () => {
    await upstream.start();
    gw = await startGateway(configYaml(upstream.url));
  });
  beforeEach(() => {
    upstream.requests.length = 0;
  });
  after(async () => {
    sock?.close();
    await gw?.close();
    await upstream.close();
  });

  test('chat upstream: a tool call, then a follow-up with previous_response_id and the tool output only; two records', async () => {
    upstream.on(replay('openai-chat-stream-text-include-usage.sse'));
    const linesBefore = wsLines(gw).length;
    sock = await WsClient.open(gw.url);
    const first = completed(
      await sock.turn({
        model: 'chat-model',
        input: 'What is the capital of France?',
        tools: [{ type: 'function', name: 'get_capital', parameters: { type: 'object', properties: { country: { type: 'string' } } } }],
      }),
    );
    const call = (first['output'] as { type: string; call_id?: string }[]).find((o) => o.type === 'function_call');
    assert.ok(call?.call_id, 'turn 1 asked for the tool');

    const second = completed(
      await sock.turn({
        model: 'chat-model',
        previous_response_id: first['id'],
        input: [{ type: 'function_call_output', call_id: call.call_id, output: 'Paris' }],
      }),
    );
    assert.notEqual(second['id'], first['id']);

    // The chat upstream got the whole conversation back: the question, the tool call, its output.
    assert.equal(upstream.requests.length, 2);
    const messages = upstream.requests[1]!.json?.['messages'] as { role: string; content?: unknown; tool_call_id?: string; tool_calls?: unknown[] }[];
    assert.deepEqual(
      messages.map((m) => m.role),
      ['user', 'assistant', 'tool'],
    );
    assert.equal(messages[2]!.tool_call_id, call.call_id);
    assert.equal(messages[2]!.content, 'Paris');
    assert.equal(upstream.requests[1]!.json?.['stream'], true);

    const lines = await waitFor(() => (wsLines(gw).length >= linesBefore + 2 ? wsLines(gw).slice(linesBefore) : null), 3000, 'two turn lines');
    assert.equal(lines.length, 2);
    assert.notEqual(lines[0]!['request_id'], lines[1]!['request_id'], 'each turn has its own request id');
    for (const l of lines) {
      assert.equal(l['status'], 200);
      assert.equal(l['api'], 'responses');
      assert.equal(l['upstream'], 'chat');
      assert.equal(l['stream'], true);
      assert.equal(l['tokens_estimated'], false);
      assert.ok((l['tokens'] as { input: number }).input > 0, 'usage recorded');
      assert.ok(typeof l['ttft_ms'] === 'number', 'TTFT measured');
      assert.ok((l['cost_usd'] as number) > 0);
    }
    const text = await gw.metricsText();
    assert.ok((metricValue(text, 'switchyard_websocket_turns_total', {}) ?? 0) >= 2);
    assert.equal(metricValue(text, 'switchyard_websocket_connections', {}), 1);
    sock.close();
    await sock.closed();
    for (let i = 0; metricValue(await gw.metricsText(), 'switchyard_websocket_connections', {}) !== 0; i++) {
      assert.ok(i < 100, 'the connection gauge goes back to 0');
      await new Promise((r) => setTimeout(r, 20));
    }
  });

  test('Responses upstream: store:false follow-ups are rebuilt from the journal, stored ones go to the owner with previous_response_id', async () => {
    upstream.on(replay('openai-responses-stream-text.sse'));
    sock = await WsClient.open(gw.url);
    const first = completed(await sock.turn({ model: 'resp-model', input: 'Say "streamed".', store: false }));
    const usage = first['usage'] as { input_tokens: number };
    assert.equal(usage.input_tokens, 21, "the upstream's own usage");

    completed(await sock.turn({ model: 'resp-model', previous_response_id: first['id'], input: [{ role: 'user', content: 'Again.' }], store: false }));
    const rebuilt = upstream.requests[1]!.json!;
    assert.equal(rebuilt['previous_response_id'], undefined, 'no id the account kept nothing for (store: false)');
    const items = rebuilt['input'] as { role?: string; type?: string; content?: unknown }[];
    assert.deepEqual(
      items.map((i) => i.role),
      ['user', 'assistant', 'user'],
      JSON.stringify(items).slice(0, 800),
    );
    assert.equal(items[2]!.content, 'Again.');
    assert.equal(rebuilt['model'], 'upstream-resp');

    completed(await sock.turn({ model: 'resp-model', previous_response_id: first['id'], input: 'Once more.' }));
    const pinned = upstream.requests[2]!.json!;
    assert.equal(pinned['previous_response_id'], first['id'], 'a stored response is continued by its owner');
    assert.equal(pinned['input'], 'Once more.');
    const lines = await waitFor(
      () => (wsLines(gw).filter((l) => l['upstream'] === 'oai').length >= 3 ? wsLines(gw).filter((l) => l['upstream'] === 'oai') : null),
      3000,
      'three lines',
    );
    assert.deepEqual(
      lines.map((l) => (l['tokens'] as { input: number }).input),
      [21, 21, 21],
    );
    sock.close();
  });

  test('a warmup (generate: false) is answered without an upstream call; the next turn continues it', async () => {
    upstream.on(replay('openai-chat-stream-text-include-usage.sse'));
    sock = await WsClient.open(gw.url);
    const warm = await sock.turn({
      model: 'chat-model',
      generate: false,
      instructions: 'Be brief.',
      input: [{ role: 'developer', content: 'You are a test.' }],
    });
    assert.deepEqual(
      warm.map((e) => e.type),
      ['response.created', 'response.completed'],
    );
    const warmed = completed(warm);
    assert.deepEqual(warmed['output'], []);
    assert.equal(upstream.requests.length, 0, 'no upstream call');

    completed(
      await sock.turn({ model: 'chat-model', previous_response_id: warmed['id'], instructions: 'Be brief.', input: [{ role: 'user', content: 'Hi' }] }),
    );
    assert.equal(upstream.requests.length, 1);
    const messages = upstream.requests[0]!.json?.['messages'] as { role: string; content: unknown }[];
    // The warmup's items come first (the bridge sends a developer message as a system one), then the turn's.
    assert.deepEqual(
      messages.map((m) => m.content),
      ['Be brief.', 'You are a test.', 'Hi'],
    );
    const lines = await waitFor(
      () => {
        const l = wsLines(gw).filter((x) => x['model'] === 'chat-model');
        return l.length >= 2 ? l.slice(-2) : null;
      },
      3000,
      'warmup and turn lines',
    );
    assert.deepEqual([lines[0]!['attempts'], lines[0]!['cost_usd'], lines[0]!['status']], [0, 0, 200], 'the warmup is recorded, free');
    sock.close();
  });

  test('over HTTP too, a warmup is answered by the gateway: a completed response with no output', async () => {
    const res = await fetch(`${gw.url}/v1/responses`, {
      method: 'POST',
      headers: { authorization: `Bearer ${CLIENT_KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'resp-model', input: 'Prepare.', generate: false }),
    });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('x-switchyard-warmup'), 'true');
    const body = (await res.json()) as { id: string; status: string; output: unknown[]; usage: { total_tokens: number } };
    assert.match(body.id, /^resp_[0-9a-f]{48}$/);
    assert.deepEqual([body.status, body.output, body.usage.total_tokens], ['completed', [], 0]);
    assert.equal(upstream.requests.length, 0, 'no upstream call');
  });
});
