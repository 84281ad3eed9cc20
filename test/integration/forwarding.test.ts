/**
 * What crosses the gateway: the request body and headers the upstream receives, the
 * routing and tracing headers the client gets back, content decoding, and the usage and
 * cost recorded for non-streaming completions.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { FakeUpstream, ReceivedRequest } from '../helpers/fake-upstream.js';
import { fixtureJson, replay } from '../helpers/recordings.js';
import {
  CLIENT_KEY,
  OTHER_KEY,
  UPSTREAM_KEY,
  closeAll,
  finishedLine,
  postChat,
  startWithUpstream,
  type RawReply,
  type TestGateway,
} from '../helpers/gateway.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const COOKIE_VALUE = 'session=cookie-secret-7b1d5e0a';
const GPT_TEST_PRICE = { input: 2.5, cached_input: 1.25, output: 10 };

type RawResponse = RawReply;

function post(gw: TestGateway, body: unknown, headers: Record<string, string> = {}): Promise<RawResponse> {
  return postChat(gw, body, { headers });
}

function lastRequest(upstream: FakeUpstream): ReceivedRequest {
  const r = upstream.requests.at(-1);
  assert.ok(r, 'the upstream received a request');
  return r;
}

/** A body using many OpenAI fields, some unknown to the gateway, plus gateway-only fields. */
function richBody(extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    model: 'gpt-test',
    messages: [
      { role: 'system', content: 'You are terse.' },
      { role: 'user', name: 'bob', content: [{ type: 'text', text: 'héllo 🌍 "quoted" \\ back' }] },
      { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'f', arguments: '{"x":1}' } }] },
      { role: 'tool', tool_call_id: 'call_1', content: '42' },
    ],
    temperature: 0.3,
    top_p: 0.9,
    max_completion_tokens: 50,
    seed: 42,
    metadata: { team: 'blue', trace: 'abc' },
    tools: [
      {
        type: 'function',
        function: { name: 'f', description: 'adds', parameters: { type: 'object', properties: { x: { type: 'integer' } }, required: ['x'] } },
      },
    ],
    tool_choice: 'auto',
    parallel_tool_calls: false,
    response_format: { type: 'json_object' },
    logit_bias: { '50256': -100 },
    user: 'user-1',
    store: false,
    some_future_field: { nested: [1, null, true, 'x', { deep: 1.5 }] },
    cluster_routing: 'cheap',
    switchyard: { tag: 'x' },
    ...extra,
  };
}

function withoutGatewayFields(body: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...body, model: 'upstream-model-x' };
  delete out['cluster_routing'];
  delete out['switchyard'];
  return out;
}

describe('forwarding', () => {
  let upstream: FakeUpstream;
  let gw: TestGateway;
  const json = () => ({ status: 200, body: fixtureJson('openai-chat-gpt5.json') });
  const sse = replay('openai-chat-stream-text-include-usage.sse');

  before(async () => {
    ({ upstream, gw } = await startWithUpstream());
  });
  after(() => closeAll(gw, upstream));

  test('non-stream: the upstream body is the client body with model rewritten and gateway fields stripped', async () => {
    upstream.on(json);
    const body = richBody({ stream: false });
    const r = await post(gw, body);
    assert.equal(r.status, 200, r.text);
    const got = lastRequest(upstream);
    assert.equal(got.method, 'POST');
    assert.equal(got.url, '/v1/chat/completions');
    assert.match(String(got.headers['content-type']), /^application\/json/);
    assert.deepEqual(got.json, withoutGatewayFields(body));
    assert.ok(!('stream_options' in got.json!), 'no stream_options added to a non-stream request');
  });

  test('non-stream: stream_options sent by the client are left alone', async () => {
    upstream.on(json);
    const body = { model: 'gpt-test', messages: [{ role: 'user', content: 'hi' }], stream_options: { include_usage: false } };
    const r = await post(gw, body);
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(lastRequest(upstream).json, { ...body, model: 'upstream-model-x' });
  });

  test('stream: same rewrite, and stream_options.include_usage forced true', async () => {
    upstream.on(sse);
    const body = richBody({ stream: true });
    const r = await post(gw, body);
    assert.equal(r.status, 200, r.text);
    assert.match(r.headers.get('content-type') ?? '', /^text\/event-stream/);
    assert.ok(r.text.includes('data: [DONE]'));
    const got = lastRequest(upstream);
    assert.equal(got.headers['accept'], 'text/event-stream');
    assert.deepEqual(got.json, { ...withoutGatewayFields(body), stream_options: { include_usage: true } });
  });

  test('stream: include_usage false is overridden, other stream_options fields kept', async () => {
    upstream.on(sse);
    const body = richBody({ stream: true, stream_options: { include_usage: false, include_obfuscation: false } });
    const r = await post(gw, body);
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(lastRequest(upstream).json, {
      ...withoutGatewayFields(body),
      stream_options: { include_usage: true, include_obfuscation: false },
    });
    // The client did not ask for usage, so it does not get the usage-only chunk.
    assert.ok(!/"choices":\[\]/.test(r.text), 'usage-only chunk withheld');
  });

  for (const stream of [false, true]) {
    test(`stream=${stream}: upstream gets the provider key and none of the client's credentials or cookies`, async () => {
      upstream.on(stream ? sse : json);
      const r = await post(
        gw,
        { model: 'gpt-test', messages: [{ role: 'user', content: 'hi' }], stream },
        {
          authorization: `Bearer ${CLIENT_KEY}`,
          'api-key': OTHER_KEY,
          'x-api-key': OTHER_KEY,
          cookie: COOKIE_VALUE,
        },
      );
      assert.equal(r.status, 200, r.text);
      const h = lastRequest(upstream).headers;
      assert.equal(h['authorization'], `Bearer ${UPSTREAM_KEY}`);
      assert.equal(h['api-key'], undefined);
      assert.equal(h['x-api-key'], undefined);
      assert.equal(h['cookie'], undefined);
      const all = JSON.stringify(h);
      for (const secret of [CLIENT_KEY, OTHER_KEY, COOKIE_VALUE, 'cookie-secret']) {
        assert.ok(!all.includes(secret), `upstream headers do not contain ${secret}`);
      }
    });
  }

  for (const stream of [false, true]) {
    test(`stream=${stream}: x-request-id echoed, routing headers set, id logged and sent upstream`, async () => {
      upstream.on(stream ? sse : json);
      const id = `req-${stream}.abc:XYZ_09-${Date.now()}`;
      const r = await post(gw, { model: 'gpt-test', messages: [{ role: 'user', content: 'hi' }], stream }, { 'x-request-id': id });
      assert.equal(r.status, 200, r.text);
      assert.equal(r.headers.get('x-request-id'), id);
      assert.equal(r.headers.get('x-switchyard-upstream'), 'fake');
      assert.equal(r.headers.get('x-switchyard-model'), 'upstream-model-x');
      assert.equal(lastRequest(upstream).headers['x-request-id'], id);
      const line = await finishedLine(gw, id);
      assert.equal(line['status'], 200);
      assert.equal(line['stream'], stream);
    });

    test(`stream=${stream}: a request id is generated when none (or an invalid one) is sent`, async () => {
      upstream.on(stream ? sse : json);
      const ids: string[] = [];
      for (const given of [undefined, 'has spaces in it', 'x'.repeat(200), 'bad/slash']) {
        const headers: Record<string, string> = given === undefined ? {} : { 'x-request-id': given };
        const r = await post(gw, { model: 'gpt-test', messages: [{ role: 'user', content: 'hi' }], stream }, headers);
        assert.equal(r.status, 200, r.text);
        const id = r.headers.get('x-request-id');
        assert.ok(id, 'x-request-id is set');
        assert.notEqual(id, given);
        assert.match(id, UUID);
        assert.equal(r.headers.get('x-switchyard-upstream'), 'fake');
        assert.equal(r.headers.get('x-switchyard-model'), 'upstream-model-x');
        assert.equal(lastRequest(upstream).headers['x-request-id'], id);
        await finishedLine(gw, id);
        ids.push(id);
      }
      assert.equal(new Set(ids).size, ids.length, 'each request gets its own id');
    });
  }

  test('the openai client sees the request id and routing headers', async () => {
    upstream.on(json);
    const { data, response, request_id } = await gw
      .client()
      .chat.completions.create({ model: 'gpt-test', messages: [{ role: 'user', content: 'hi' }] })
      .withResponse();
    assert.equal(data.id, fixtureJson('openai-chat-gpt5.json')['id']);
    assert.ok(request_id && UUID.test(request_id), `request id ${String(request_id)}`);
    assert.equal(response.headers.get('x-switchyard-upstream'), 'fake');
    assert.equal(lastRequest(upstream).headers['x-request-id'], request_id);
  });

  test('a gzip-compressed upstream response reaches the openai client decoded', async () => {
    const fixture = fixtureJson('openai-chat-gpt5.json');
    upstream.on(() => ({ status: 200, body: fixture, gzip: true }));
    const completion = await gw.client().chat.completions.create({ model: 'gpt-test', messages: [{ role: 'user', content: 'hi' }] });
    assert.deepEqual(completion, fixture);
    assert.match(String(lastRequest(upstream).headers['accept-encoding']), /gzip/);

    // Raw: the body is plain JSON and no stale content-encoding label is left on it.
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${CLIENT_KEY}`, 'accept-encoding': 'identity' },
      body: JSON.stringify({ model: 'gpt-test', messages: [{ role: 'user', content: 'hi' }] }),
    });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-encoding'), null);
    const raw = Buffer.from(await res.arrayBuffer());
    assert.notEqual(raw[0], 0x1f, 'not gzip magic bytes');
    assert.deepEqual(JSON.parse(raw.toString('utf8')), fixture);
    const line = await finishedLine(gw, res.headers.get('x-request-id')!);
    assert.deepEqual(line['tokens'], { input: 13, cached: 0, output: 11, reasoning: 0 });
  });

  const withCached = (): Record<string, unknown> => {
    const f = fixtureJson('openai-chat-o3-mini-reasoning-tokens.json');
    const usage = f['usage'] as { prompt_tokens_details: { cached_tokens: number } };
    usage.prompt_tokens_details.cached_tokens = 512;
    return f;
  };
  const USAGE_CASES: { name: string; body: () => Record<string, unknown>; tokens: Record<string, number>; cost: number }[] = [
    {
      name: 'openai-chat-gpt5.json',
      body: () => fixtureJson('openai-chat-gpt5.json'),
      tokens: { input: 13, cached: 0, output: 11, reasoning: 0 },
      cost: 0.0001425,
    },
    {
      name: 'openai-chat-o3-mini-reasoning-tokens.json',
      body: () => fixtureJson('openai-chat-o3-mini-reasoning-tokens.json'),
      tokens: { input: 577, cached: 0, output: 2320, reasoning: 1792 },
      cost: 0.0246425,
    },
    {
      name: 'o3-mini with 512 cached prompt tokens',
      body: withCached,
      tokens: { input: 577, cached: 512, output: 2320, reasoning: 1792 },
      cost: 0.0240025,
    },
  ];
  for (const c of USAGE_CASES) {
    test(`non-stream usage and cost: ${c.name}`, async () => {
      const fixture = c.body();
      upstream.on(() => ({ status: 200, body: fixture }));
      const { data, request_id } = await gw
        .client()
        .chat.completions.create({ model: 'gpt-test', messages: [{ role: 'user', content: 'hi' }] })
        .withResponse();
      assert.deepEqual(data, fixture);
      const line = await finishedLine(gw, request_id!);
      const u = fixture['usage'] as {
        prompt_tokens: number;
        completion_tokens: number;
        prompt_tokens_details: { cached_tokens: number };
        completion_tokens_details: { reasoning_tokens: number };
      };
      const tokens = {
        input: u.prompt_tokens,
        cached: u.prompt_tokens_details.cached_tokens,
        output: u.completion_tokens,
        reasoning: u.completion_tokens_details.reasoning_tokens,
      };
      assert.deepEqual(tokens, c.tokens, 'fixture usage is what the case expects');
      assert.deepEqual(line['tokens'], tokens);
      assert.equal(line['tokens_estimated'], false);
      const p = GPT_TEST_PRICE;
      const cost = ((tokens.input - tokens.cached) * p.input + tokens.cached * p.cached_input + tokens.output * p.output) / 1e6;
      assert.ok(Math.abs(cost - c.cost) < 1e-12, `price table arithmetic ${cost}`);
      assert.equal(typeof line['cost_usd'], 'number');
      assert.ok(Math.abs((line['cost_usd'] as number) - cost) < 1e-12, `cost_usd ${String(line['cost_usd'])} != ${cost}`);
      assert.equal(line['status'], 200);
      assert.equal(line['outcome'], 'ok');
      assert.equal(line['model'], 'gpt-test');
      assert.equal(line['upstream'], 'fake');
      assert.equal(line['upstream_model'], 'upstream-model-x');
      assert.equal(line['stream'], false);
      assert.equal(line['attempts'], 1);
      assert.equal(line['key'], 'team-a');
    });
  }
});
