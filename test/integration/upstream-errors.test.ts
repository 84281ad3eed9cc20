/**
 * Upstream errors reach the client in OpenAI's shape with the upstream's status and
 * fields where that is the caller's business (429, 400, 404), scrubbed of key material;
 * the gateway's own problems (upstream 401, garbage bodies, unreachable hosts) become
 * 502s; failures before the first byte fail over invisibly; caller errors are not retried;
 * every failure is counted by class.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import OpenAI, { APIConnectionError, APIError, BadRequestError, InternalServerError, NotFoundError, RateLimitError } from 'openai';
import { FakeUpstream } from '../helpers/fake-upstream.js';
import { fixture, fixtureJson, replay } from '../helpers/recordings.js';
import {
  UPSTREAM_KEY,
  closeAll,
  postChat,
  startGateway,
  startWithUpstream,
  testConfigYaml,
  waitFor,
  type RawReply,
  type TestGateway,
} from '../helpers/gateway.js';
import { metricValue } from '../helpers/metrics-text.js';

type ErrorBody = { error: { message: string; type: string; param: string | null; code: string | null } };

async function upstreamErrors(gw: TestGateway, upstream: string, cls: string): Promise<number> {
  return metricValue(await gw.metricsText(), 'switchyard_upstream_errors_total', { upstream, class: cls }) ?? 0;
}

type Raw = RawReply;

function rawPost(gw: TestGateway, body: Record<string, unknown> = {}): Promise<Raw> {
  return postChat(gw, { model: 'gpt-test', messages: [{ role: 'user', content: 'hello' }], ...body });
}

/** Parses a JSON error response and checks it has exactly OpenAI's error shape. */
function openAiError(raw: Raw): ErrorBody['error'] {
  assert.match(raw.headers.get('content-type') ?? '', /^application\/json/);
  const body = JSON.parse(raw.text) as ErrorBody;
  assert.deepEqual(Object.keys(body), ['error']);
  assert.deepEqual(Object.keys(body.error).sort(), ['code', 'message', 'param', 'type']);
  assert.equal(typeof body.error.message, 'string');
  assert.ok(body.error.message.length > 0);
  assert.equal(typeof body.error.type, 'string');
  return body.error;
}

async function sdkError(client: OpenAI, stream = false): Promise<APIError> {
  try {
    if (stream) {
      const s = await client.chat.completions.create({ model: 'gpt-test', messages: [{ role: 'user', content: 'hello' }], stream: true });
      for await (const _c of s) {
        // drain
      }
    } else {
      await client.chat.completions.create({ model: 'gpt-test', messages: [{ role: 'user', content: 'hello' }] });
    }
  } catch (err) {
    assert.ok(err instanceof APIError, `APIError expected, got ${String(err)}`);
    assert.ok(!(err instanceof APIConnectionError), `an HTTP error response expected, got ${String(err)}`);
    return err;
  }
  assert.fail('the request should have failed');
}

const UPSTREAM_KEY_MASKED = `${UPSTREAM_KEY.slice(0, 8)}***${UPSTREAM_KEY.slice(-4)}`; // sk-upstr***wxyz

/** No trace of the upstream key, in full, masked, or in pieces. */
function assertNoKey(text: string): void {
  assert.ok(!text.includes(UPSTREAM_KEY), 'full upstream key leaked');
  assert.ok(!text.includes(UPSTREAM_KEY_MASKED), 'masked upstream key leaked');
  assert.ok(!text.includes('sk-upstr'), 'upstream key prefix leaked');
  assert.ok(!text.includes('abcdefghijklmnop'), 'upstream key body leaked');
  assert.doesNotMatch(text, /\bsk-[A-Za-z0-9*_.-]{4,}/, 'key-looking token leaked');
}

describe('upstream error responses', () => {
  let upstream: FakeUpstream;
  let gw: TestGateway;

  before(async () => {
    // One attempt per request, and a 401 does not keep the upstream out of later tests.
    ({ upstream, gw } = await startWithUpstream((url) => testConfigYaml(url, { routing: '  max_attempts: 1\n  cooldown: { credential_ms: 1 }' })));
  });
  after(() => closeAll(gw, upstream));

  test('429 passes through with the upstream message/code and Retry-After (RateLimitError)', async () => {
    const upstreamBody = fixtureJson('openai-error-429-rate-limit-exceeded.json') as ErrorBody;
    upstream.on(() => ({ status: 429, headers: { 'retry-after': '7' }, body: fixture('openai-error-429-rate-limit-exceeded.json') }));
    const before = await upstreamErrors(gw, 'fake', 'rate_limited');

    const raw = await rawPost(gw);
    assert.equal(raw.status, 429);
    assert.equal(raw.headers.get('retry-after'), '7');
    const e = openAiError(raw);
    assert.equal(e.message, upstreamBody.error.message);
    assert.equal(e.code, 'rate_limit_exceeded');
    assert.equal(e.type, upstreamBody.error.type);
    assert.equal(e.param, null);

    const err = await sdkError(gw.client({ maxRetries: 0 }));
    assert.ok(err instanceof RateLimitError, `RateLimitError expected, got ${err.constructor.name}`);
    assert.equal(err.status, 429);
    assert.equal(err.code, 'rate_limit_exceeded');
    assert.match(err.message, /Rate limit reached for gpt-3\.5-turbo/);
    assert.equal(err.headers?.get('retry-after'), '7');

    // Streaming requests get the same JSON error (nothing was streamed yet).
    const errStream = await sdkError(gw.client({ maxRetries: 0 }), true);
    assert.ok(errStream instanceof RateLimitError);
    assert.equal(errStream.code, 'rate_limit_exceeded');

    assert.equal(await upstreamErrors(gw, 'fake', 'rate_limited'), before + 3);
  });

  test('400 passes through with status, message, param and code (BadRequestError)', async () => {
    const upstreamBody = fixtureJson('openai-chat-error-400-unsupported-parameter.json') as ErrorBody;
    upstream.on(() => ({ status: 400, body: fixture('openai-chat-error-400-unsupported-parameter.json') }));
    const before = await upstreamErrors(gw, 'fake', 'bad_request');
    const logIndex = gw.finished().length;

    const raw = await rawPost(gw);
    assert.equal(raw.status, 400);
    assert.deepEqual(openAiError(raw), upstreamBody.error);
    const line = await waitFor(() => gw.finished()[logIndex], 2000, 'request log line');
    assert.equal(line['status'], 400);
    assert.equal(line['error_class'], 'bad_request');

    const err = await sdkError(gw.client());
    assert.ok(err instanceof BadRequestError, `BadRequestError expected, got ${err.constructor.name}`);
    assert.equal(err.status, 400);
    assert.equal(err.param, 'max_tokens');
    assert.equal(err.code, 'unsupported_parameter');
    assert.equal(err.type, 'invalid_request_error');
    assert.match(err.message, /Unsupported parameter: 'max_tokens'/);

    assert.equal(await upstreamErrors(gw, 'fake', 'bad_request'), before + 2);
  });

  test('404 passes through with status, message, param and code (NotFoundError)', async () => {
    const upstreamBody = fixtureJson('openai-chat-error-404-model-not-found.json') as ErrorBody;
    upstream.on(() => ({ status: 404, body: fixture('openai-chat-error-404-model-not-found.json') }));
    const before = await upstreamErrors(gw, 'fake', 'not_found');

    const raw = await rawPost(gw);
    assert.equal(raw.status, 404);
    assert.deepEqual(openAiError(raw), upstreamBody.error);

    const err = await sdkError(gw.client());
    assert.ok(err instanceof NotFoundError, `NotFoundError expected, got ${err.constructor.name}`);
    assert.equal(err.code, 'model_not_found');
    assert.equal(err.param, null);
    assert.match(err.message, /gpt-5\.2-proo/);

    assert.equal(await upstreamErrors(gw, 'fake', 'not_found'), before + 2);
  });

  test('key material in an upstream error message is scrubbed (masked echo, full key, string error)', async () => {
    const bodies: unknown[] = [
      {
        error: {
          message: `Incorrect API key provided: ${UPSTREAM_KEY_MASKED}. You can find your API key at https://platform.openai.com/account/api-keys.`,
          type: 'invalid_request_error',
          param: null,
          code: 'bad_request',
        },
      },
      { error: { message: `Request with key ${UPSTREAM_KEY} was rejected`, type: 'invalid_request_error', param: null, code: null } },
      { error: `upstream said: Authorization: Bearer ${UPSTREAM_KEY}` },
    ];
    for (const body of bodies) {
      upstream.on(() => ({ status: 400, body }));
      const raw = await rawPost(gw);
      assert.equal(raw.status, 400);
      const e = openAiError(raw);
      assertNoKey(raw.text);
      for (const [, v] of raw.headers) assertNoKey(v);
      // The rest of the message survives.
      assert.match(e.message, /Incorrect API key provided|was rejected|upstream said/);
    }
  });

  test('key material anywhere in an upstream error body (param, code, type) is scrubbed', async () => {
    upstream.on(() => ({
      status: 400,
      body: {
        error: {
          message: 'Invalid header.',
          type: `invalid_request_error ${UPSTREAM_KEY}`,
          param: `authorization: Bearer ${UPSTREAM_KEY}`,
          code: UPSTREAM_KEY_MASKED,
        },
      },
    }));
    const raw = await rawPost(gw);
    assert.equal(raw.status, 400);
    openAiError(raw);
    assertNoKey(raw.text);
  });

  test('key material in a mid-stream error event is scrubbed', async () => {
    upstream.on(() => ({
      status: 200,
      headers: { 'content-type': 'text/event-stream' },
      steps: [
        'data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":null}]}\n\n',
        { delayMs: 20 },
        `data: {"error":{"message":"key ${UPSTREAM_KEY} (${UPSTREAM_KEY_MASKED}) was revoked","type":"server_error","code":"revoked"}}\n\n`,
      ],
    }));
    const raw = await rawPost(gw, { stream: true });
    assert.equal(raw.status, 200);
    assert.match(raw.text, /"content":"Hi"/);
    assert.match(raw.text, /data: \{"error":\{"message":"key .*was revoked"/);
    assertNoKey(raw.text);
  });

  test('a mid-stream error saying the key is bad ends the stream as upstream_auth_failed, its key material not relayed', async () => {
    upstream.on(() => ({
      status: 200,
      headers: { 'content-type': 'text/event-stream' },
      steps: [
        'data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":null}]}\n\n',
        { delayMs: 20 },
        `event: error\ndata: {"error":{"message":"credential revoked","type":"auth ${UPSTREAM_KEY}","code":"${UPSTREAM_KEY_MASKED}"}}\n\n`,
      ],
    }));
    const raw = await rawPost(gw, { stream: true });
    assert.equal(raw.status, 200);
    assert.match(raw.text, /"code":"upstream_auth_failed"/);
    assert.doesNotMatch(raw.text, /credential revoked/, "the upstream's words about the key stay in the gateway's log");
    assertNoKey(raw.text);
  });

  test('upstream 401 becomes 502 upstream_auth_failed without the upstream body', async () => {
    const upstreamText = `Incorrect API key provided: ${UPSTREAM_KEY_MASKED}. You can find your API key at https://platform.openai.com/account/api-keys.`;
    upstream.on(() => ({ status: 401, body: { error: { message: upstreamText, type: 'invalid_request_error', param: null, code: 'invalid_api_key' } } }));
    const before = await upstreamErrors(gw, 'fake', 'credential');

    const raw = await rawPost(gw);
    assert.equal(raw.status, 502);
    const e = openAiError(raw);
    assert.equal(e.code, 'upstream_auth_failed');
    assert.equal(e.type, 'server_error');
    assert.ok(!raw.text.includes('Incorrect API key'), 'upstream message leaked');
    assert.ok(!raw.text.includes('invalid_api_key'), 'upstream code leaked (client would blame its own key)');
    assertNoKey(raw.text);

    const err = await sdkError(gw.client());
    assert.ok(err instanceof InternalServerError, `InternalServerError (502) expected, got ${err.constructor.name}`);
    assert.equal(err.status, 502);
    assert.equal(err.code, 'upstream_auth_failed');

    assert.equal(await upstreamErrors(gw, 'fake', 'credential'), before + 2);
  });

  test('an HTML 502 page from the upstream becomes a 502 OpenAI-style JSON error', async () => {
    const html =
      '<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n';
    upstream.on(() => ({ status: 502, headers: { 'content-type': 'text/html' }, body: html }));
    const before = await upstreamErrors(gw, 'fake', 'server');

    const raw = await rawPost(gw);
    assert.equal(raw.status, 502);
    const e = openAiError(raw);
    assert.equal(e.type, 'server_error');
    assert.ok(!raw.text.includes('<html>') && !raw.text.includes('nginx'), 'HTML body relayed');

    const rawStream = await rawPost(gw, { stream: true });
    assert.equal(rawStream.status, 502);
    openAiError(rawStream);

    const err = await sdkError(gw.client());
    assert.equal(err.status, 502);
    assert.equal(await upstreamErrors(gw, 'fake', 'server'), before + 3);
  });

  test('a 200 with an HTML body (non-streaming) becomes a 502 upstream_bad_response', async () => {
    upstream.on(() => ({ status: 200, headers: { 'content-type': 'text/html' }, body: '<html><body>Welcome to nginx!</body></html>' }));
    const raw = await rawPost(gw);
    assert.equal(raw.status, 502);
    const e = openAiError(raw);
    assert.equal(e.code, 'upstream_bad_response');
    assert.ok(!raw.text.includes('nginx'));
  });
});

describe('unreachable upstream', () => {
  let gw: TestGateway;

  before(async () => {
    const closed = await new FakeUpstream().start();
    const url = closed.url;
    await closed.close();
    gw = await startGateway(testConfigYaml(url, { timeouts: { connect_ms: 1000 } }));
  });
  after(async () => {
    await gw.close();
  });

  test('connection refused gives 502 upstream_unreachable and counts class connect', async () => {
    const before = await upstreamErrors(gw, 'fake', 'connect');
    const raw = await rawPost(gw);
    assert.equal(raw.status, 502);
    const e = openAiError(raw);
    assert.equal(e.code, 'upstream_unreachable');
    assert.equal(e.type, 'server_error');

    const err = await sdkError(gw.client(), true);
    assert.equal(err.status, 502);
    assert.equal(err.code, 'upstream_unreachable');
    assert.equal(await upstreamErrors(gw, 'fake', 'connect'), before + 2);
  });
});

describe('failover before the first byte', () => {
  let first: FakeUpstream;
  let second: FakeUpstream;
  let gw: TestGateway;
  let direct: OpenAI;
  const RECORDING = 'openai-chat-stream-text-include-usage.sse';

  before(async () => {
    first = await new FakeUpstream().start();
    second = await new FakeUpstream().start();
    // cheap: the first upstream is the cheaper one, so it is always tried first; no cooldown
    // and no retry budget limit, so every request here fails over the same way.
    gw = await startGateway(
      testConfigYaml(first.url, {
        extraUpstreams: [second.url],
        routing: '  strategy: cheap\n  max_attempts: 4\n  cooldown: { failures: 1000 }\n  retry_budget: { min_retries: 1000 }',
      }),
    );
    direct = new OpenAI({ apiKey: 'direct', baseURL: `${second.url}/v1`, maxRetries: 0 });
  });
  after(async () => {
    await gw.close();
    await first.close();
    await second.close();
  });

  async function collect(client: OpenAI): Promise<unknown[]> {
    const chunks: unknown[] = [];
    const s = await client.chat.completions.create({ model: 'gpt-test', messages: [{ role: 'user', content: 'hello' }], stream: true });
    for await (const c of s) chunks.push(c);
    return chunks;
  }

  async function assertInvisibleFailover(failFirst: Parameters<FakeUpstream['on']>[0], label: string): Promise<void> {
    first.on(failFirst);
    second.on(replay(RECORDING));
    const want = await collect(direct);
    assert.ok(want.length > 0);

    const n1 = first.requests.length;
    const n2 = second.requests.length;
    const logIndex = gw.finished().length;

    const raw = await rawPost(gw, { stream: true });
    assert.equal(raw.status, 200, `${label}: status`);
    assert.match(raw.headers.get('content-type') ?? '', /^text\/event-stream/);
    assert.equal(raw.headers.get('x-switchyard-upstream'), 'fake2');
    assert.ok(raw.text.trimEnd().endsWith('data: [DONE]'), `${label}: clean end`);
    assert.doesNotMatch(raw.text, /"error"/, `${label}: no error reached the client`);
    assert.doesNotMatch(raw.text, /overloaded|keep-alive/i, `${label}: nothing of the first upstream reached the client`);
    const line = await waitFor(() => gw.finished()[logIndex], 2000, 'request log line');
    assert.equal(line['outcome'], 'ok');
    assert.equal(line['status'], 200);
    assert.equal(line['attempts'], 2);
    assert.equal(line['upstream'], 'fake2');

    const got = await collect(gw.client());
    assert.deepEqual(got, want, `${label}: the client gets the second upstream's stream unchanged`);

    assert.equal(first.requests.length, n1 + 2, `${label}: first upstream tried each time`);
    assert.equal(second.requests.length, n2 + 2, `${label}: second upstream served each time`);
  }

  test('a 503 from the first upstream fails over to the second; the client sees a clean stream', async () => {
    const before = await upstreamErrors(gw, 'fake', 'overloaded');
    await assertInvisibleFailover(
      () => ({ status: 503, body: { error: { message: 'The engine is currently overloaded.', type: 'server_error', code: null } } }),
      '503',
    );
    assert.equal(await upstreamErrors(gw, 'fake', 'overloaded'), before + 2);
  });

  test('a socket reset before any event fails over invisibly', async () => {
    await assertInvisibleFailover(() => ({ status: 200, steps: [{ destroy: true }] }), 'reset');
  });

  test('a socket reset after only an SSE comment (no event) fails over invisibly', async () => {
    await assertInvisibleFailover(() => ({ status: 200, steps: [': keep-alive\n\n', { delayMs: 20 }, { destroy: true }] }), 'comment+reset');
  });

  test('a caller error (400) from the first upstream is not retried on the second', async () => {
    first.on(() => ({ status: 400, body: fixture('openai-chat-error-400-unsupported-parameter.json') }));
    second.on(replay(RECORDING));
    const n1 = first.requests.length;
    const n2 = second.requests.length;
    const before = await upstreamErrors(gw, 'fake', 'bad_request');

    const raw = await rawPost(gw, { stream: true });
    assert.equal(raw.status, 400);
    assert.equal(openAiError(raw).param, 'max_tokens');
    const err = await sdkError(gw.client(), true);
    assert.ok(err instanceof BadRequestError);
    assert.equal(err.code, 'unsupported_parameter');

    assert.equal(first.requests.length, n1 + 2);
    assert.equal(second.requests.length, n2, 'second upstream received no request');
    assert.equal(await upstreamErrors(gw, 'fake', 'bad_request'), before + 2);
    assert.equal(await upstreamErrors(gw, 'fake2', 'bad_request'), 0);
  });
});
