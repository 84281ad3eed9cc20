/**
 * Client authentication, model access and request validation: every refusal is an
 * OpenAI-style error (`{"error":{message,type,param,code}}`) with the status and code the
 * official SDKs expect, and none of them reaches the upstream.
 */
import assert from 'node:assert/strict';
import { after, afterEach, before, describe, test } from 'node:test';
import OpenAI, { AuthenticationError, BadRequestError, NotFoundError } from 'openai';
import type { FakeUpstream } from '../helpers/fake-upstream.js';
import { fixtureJson } from '../helpers/recordings.js';
import { CLIENT_KEY, OTHER_KEY, closeAll, startWithUpstream, testConfigYaml, type TestGateway } from '../helpers/gateway.js';

const WRONG_KEY = 'sk-wrong-key-ZZZ-9f8e7d6c5b4a39281706';
const MESSAGES = [{ role: 'user', content: 'hello' }];

interface RawResponse {
  status: number;
  headers: Headers;
  text: string;
  json: unknown;
}

function parse(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

async function call(url: string, init: { method?: string; headers?: Record<string, string>; body?: string } = {}): Promise<RawResponse> {
  const res = await fetch(url, { method: init.method ?? 'GET', headers: init.headers, body: init.body });
  const text = await res.text();
  return { status: res.status, headers: res.headers, text, json: parse(text) };
}

/** POSTs a chat completion body (an object is JSON-encoded, a string is sent as is). */
function postChat(gw: TestGateway, body: unknown, headers: Record<string, string> = { authorization: `Bearer ${CLIENT_KEY}` }): Promise<RawResponse> {
  return call(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

/** Asserts the exact OpenAI error shape and the given fields. */
function assertOpenAIError(
  r: RawResponse,
  want: { status: number; type: string; code: string | null; param?: string | null },
  what: string,
): { message: string; type: string; param: string | null; code: string | null } {
  assert.equal(r.status, want.status, `${what}: status (body ${r.text})`);
  assert.match(r.headers.get('content-type') ?? '', /^application\/json/, `${what}: content-type`);
  assert.ok(r.json && typeof r.json === 'object', `${what}: JSON body, got ${r.text}`);
  const body = r.json as Record<string, unknown>;
  assert.deepEqual(Object.keys(body), ['error'], `${what}: top-level keys`);
  const e = body['error'] as Record<string, unknown>;
  assert.deepEqual(Object.keys(e).sort(), ['code', 'message', 'param', 'type'], `${what}: error keys`);
  assert.equal(typeof e['message'], 'string', `${what}: message is a string`);
  assert.ok((e['message'] as string).length > 0, `${what}: message is not empty`);
  assert.equal(e['type'], want.type, `${what}: type`);
  assert.equal(e['code'], want.code, `${what}: code`);
  if (want.param !== undefined) assert.equal(e['param'], want.param, `${what}: param`);
  return e as { message: string; type: string; param: string | null; code: string | null };
}

function noAuthClient(gw: TestGateway): OpenAI {
  // The placeholder key is never sent: the explicit null drops the Authorization header.
  return new OpenAI({ apiKey: 'unused', baseURL: `${gw.url}/v1`, maxRetries: 0, defaultHeaders: { Authorization: null } });
}

async function rejection(p: Promise<unknown>): Promise<unknown> {
  try {
    await p;
  } catch (err) {
    return err;
  }
  assert.fail('expected the call to be rejected');
}

describe('refusals never reach the upstream', () => {
  let upstream: FakeUpstream;
  let gw: TestGateway;

  before(async () => {
    ({ upstream, gw } = await startWithUpstream());
    // A working script: if the gateway forwarded anything it would succeed, and be counted.
    upstream.on(() => ({ status: 200, body: fixtureJson('openai-chat-gpt5.json') }));
  });
  afterEach(() => {
    assert.equal(upstream.requests.length, 0, 'the fake upstream received no request');
  });
  after(() => closeAll(gw, upstream));

  test('missing key via fetch: 401 invalid_api_key', async () => {
    const r = await postChat(gw, { model: 'gpt-test', messages: MESSAGES }, {});
    assertOpenAIError(r, { status: 401, type: 'invalid_request_error', code: 'invalid_api_key', param: null }, 'missing key');
    assert.ok(r.headers.get('x-request-id'), 'error responses carry x-request-id');

    const models = await call(`${gw.url}/v1/models`);
    assertOpenAIError(models, { status: 401, type: 'invalid_request_error', code: 'invalid_api_key', param: null }, 'missing key /v1/models');

    // An Authorization header that carries no bearer token counts as missing.
    const empty = await postChat(gw, { model: 'gpt-test', messages: MESSAGES }, { authorization: 'Bearer ' });
    assertOpenAIError(empty, { status: 401, type: 'invalid_request_error', code: 'invalid_api_key' }, 'empty bearer');
  });

  test('missing key via the openai client: AuthenticationError 401', async () => {
    const err = await rejection(noAuthClient(gw).chat.completions.create({ model: 'gpt-test', messages: [{ role: 'user', content: 'hi' }] }));
    assert.ok(err instanceof AuthenticationError, `AuthenticationError, got ${String(err)}`);
    assert.equal(err.status, 401);
    assert.equal(err.code, 'invalid_api_key');
    assert.equal(err.type, 'invalid_request_error');
  });

  test('wrong key via the openai client: AuthenticationError 401, key not echoed', async () => {
    const err = await rejection(gw.client({ apiKey: WRONG_KEY }).chat.completions.create({ model: 'gpt-test', messages: [{ role: 'user', content: 'hi' }] }));
    assert.ok(err instanceof AuthenticationError, `AuthenticationError, got ${String(err)}`);
    assert.equal(err.status, 401);
    assert.equal(err.code, 'invalid_api_key');
    assert.equal(err.type, 'invalid_request_error');
    assert.equal(err.param, null);
    assert.ok(!err.message.includes(WRONG_KEY), 'the SDK error message does not contain the key');
    assert.ok(!JSON.stringify(err.error).includes(WRONG_KEY), 'the error body does not contain the key');

    const listErr = await rejection(gw.client({ apiKey: WRONG_KEY }).models.list());
    assert.ok(listErr instanceof AuthenticationError, `models.list: AuthenticationError, got ${String(listErr)}`);
  });

  for (const [name, headers] of [
    ['Authorization: Bearer', { authorization: `Bearer ${WRONG_KEY}` }],
    ['api-key', { 'api-key': WRONG_KEY }],
    ['x-api-key', { 'x-api-key': WRONG_KEY }],
  ] as const) {
    test(`wrong key in ${name} via fetch: 401 invalid_api_key, key not echoed`, async () => {
      const r = await postChat(gw, { model: 'gpt-test', messages: MESSAGES }, headers);
      assertOpenAIError(r, { status: 401, type: 'invalid_request_error', code: 'invalid_api_key', param: null }, name);
      assert.ok(!r.text.includes(WRONG_KEY), `the body does not contain the wrong key: ${r.text}`);
      assert.ok(!r.text.includes(WRONG_KEY.slice(0, 12)), 'nor a prefix of it');
      for (const [h, v] of r.headers) assert.ok(!v.includes(WRONG_KEY), `header ${h} does not contain the wrong key`);
    });
  }

  test('a valid key for another model set does not unlock gpt-test: 404 model_not_found', async () => {
    const err = await rejection(gw.client({ apiKey: OTHER_KEY }).chat.completions.create({ model: 'gpt-test', messages: [{ role: 'user', content: 'hi' }] }));
    assert.ok(err instanceof NotFoundError, `NotFoundError, got ${String(err)}`);
    assert.equal(err.status, 404);
    assert.equal(err.code, 'model_not_found');
    assert.equal(err.param, 'model');

    const r = await postChat(gw, { model: 'gpt-test', messages: MESSAGES }, { authorization: `Bearer ${OTHER_KEY}` });
    assertOpenAIError(r, { status: 404, type: 'invalid_request_error', code: 'model_not_found', param: 'model' }, 'disallowed model');

    const one = await call(`${gw.url}/v1/models/gpt-test`, { headers: { authorization: `Bearer ${OTHER_KEY}` } });
    assertOpenAIError(one, { status: 404, type: 'invalid_request_error', code: 'model_not_found', param: 'model' }, 'GET disallowed model');
  });

  test('an unknown model: 404 model_not_found', async () => {
    const err = await rejection(gw.client().chat.completions.create({ model: 'no-such-model', messages: [{ role: 'user', content: 'hi' }] }));
    assert.ok(err instanceof NotFoundError, `NotFoundError, got ${String(err)}`);
    assert.equal(err.status, 404);
    assert.equal(err.code, 'model_not_found');

    const r = await postChat(gw, { model: 'no-such-model', messages: MESSAGES });
    const e = assertOpenAIError(r, { status: 404, type: 'invalid_request_error', code: 'model_not_found', param: 'model' }, 'unknown model');
    assert.match(e.message, /no-such-model/);

    const one = await call(`${gw.url}/v1/models/no-such-model`, { headers: { authorization: `Bearer ${CLIENT_KEY}` } });
    assertOpenAIError(one, { status: 404, type: 'invalid_request_error', code: 'model_not_found' }, 'GET unknown model');
  });

  test('GET /v1/models lists only the models each key may use, in OpenAI list shape', async () => {
    const check = (r: RawResponse, ids: string[], who: string): void => {
      assert.equal(r.status, 200, `${who}: ${r.text}`);
      const body = r.json as { object: unknown; data: Record<string, unknown>[] };
      assert.equal(body.object, 'list', who);
      assert.ok(Array.isArray(body.data), who);
      assert.deepEqual(body.data.map((m) => m['id']).sort(), ids, who);
      for (const m of body.data) {
        assert.equal(m['object'], 'model', who);
        assert.ok(Number.isInteger(m['created']) && (m['created'] as number) > 1_600_000_000, `${who}: created is epoch seconds`);
        assert.equal(typeof m['owned_by'], 'string', who);
      }
    };
    check(await call(`${gw.url}/v1/models`, { headers: { authorization: `Bearer ${CLIENT_KEY}` } }), ['gpt-test', 'reasoner-test'], 'client key');
    check(await call(`${gw.url}/v1/models`, { headers: { authorization: `Bearer ${OTHER_KEY}` } }), ['reasoner-test'], 'limited key');

    const viaSdk: string[] = [];
    for await (const m of gw.client({ apiKey: OTHER_KEY }).models.list()) viaSdk.push(m.id);
    assert.deepEqual(viaSdk, ['reasoner-test']);

    const one = await gw.client({ apiKey: OTHER_KEY }).models.retrieve('reasoner-test');
    assert.equal(one.id, 'reasoner-test');
    assert.equal(one.object, 'model');
  });

  test('invalid JSON body: 400 invalid_request_error', async () => {
    const r = await postChat(gw, '{"model": "gpt-test", "messages": [');
    const e = assertOpenAIError(r, { status: 400, type: 'invalid_request_error', code: 'invalid_json' }, 'invalid JSON');
    // There is no field to name in an unparseable body.
    assert.equal(e.param, null);

    const trailing = await postChat(gw, '{"model": "gpt-test", "messages": []}}');
    assertOpenAIError(trailing, { status: 400, type: 'invalid_request_error', code: 'invalid_json' }, 'trailing garbage');

    // Over 1 MiB a body is parsed in steps (server/http/json-body.ts): the same answer.
    const big = await postChat(gw, `{"model": "gpt-test", "messages": [{"role": "user", "content": "${'x'.repeat(2 * 1024 * 1024)}"}]`);
    assertOpenAIError(big, { status: 400, type: 'invalid_request_error', code: 'invalid_json' }, 'invalid 2 MB JSON');
  });

  const INVALID: { name: string; body: Record<string, unknown>; param: string; lists?: string }[] = [
    { name: 'missing model', body: { messages: MESSAGES }, param: 'model' },
    { name: 'missing messages', body: { model: 'gpt-test' }, param: 'messages' },
    { name: 'messages not an array', body: { model: 'gpt-test', messages: 'hello' }, param: 'messages' },
    { name: 'messages an object', body: { model: 'gpt-test', messages: { role: 'user', content: 'hi' } }, param: 'messages' },
    { name: 'stream as the string "true"', body: { model: 'gpt-test', messages: MESSAGES, stream: 'true' }, param: 'stream' },
    { name: 'temperature as a string', body: { model: 'gpt-test', messages: MESSAGES, temperature: '0.7' }, param: 'temperature' },
    {
      name: 'reasoning_effort "very high!" (not a level word)',
      body: { model: 'gpt-test', messages: MESSAGES, reasoning_effort: 'very high!' },
      param: 'reasoning_effort',
    },
    { name: 'reasoning_effort 3', body: { model: 'gpt-test', messages: MESSAGES, reasoning_effort: 3 }, param: 'reasoning_effort' },
    {
      name: 'cluster_routing "fastest"',
      body: { model: 'gpt-test', messages: MESSAGES, cluster_routing: 'fastest' },
      param: 'cluster_routing',
      lists: 'fast, balanced, cheap, sticky',
    },
  ];
  for (const c of INVALID) {
    test(`${c.name}: 400 invalid_request_error naming param ${c.param}`, async () => {
      const r = await postChat(gw, c.body);
      const e = assertOpenAIError(r, { status: 400, type: 'invalid_request_error', code: null, param: c.param }, c.name);
      assert.ok(e.message.includes(c.param), `the message names ${c.param}: ${e.message}`);
      if (c.lists) assert.ok(e.message.includes(`must be one of: ${c.lists}`), `the message lists the allowed values: ${e.message}`);
    });
  }

  test('reasoning.effort of 40 characters on the Responses API: 400 naming reasoning.effort', async () => {
    const res = await fetch(`${gw.url}/v1/responses`, {
      method: 'POST',
      headers: { authorization: `Bearer ${CLIENT_KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'gpt-test', input: 'hi', reasoning: { effort: 'x'.repeat(40) } }),
    });
    assert.equal(res.status, 400);
    const body = (await res.json()) as { error: { param: string; message: string } };
    assert.equal(body.error.param, 'reasoning.effort');
    assert.match(body.error.message, /reasoning\.effort/);
  });

  test('the openai client raises BadRequestError with param for a bad field', async () => {
    const err = await rejection(
      gw.client().chat.completions.create({ model: 'gpt-test', messages: [{ role: 'user', content: 'hi' }], temperature: '0.7' as unknown as number }),
    );
    assert.ok(err instanceof BadRequestError, `BadRequestError, got ${String(err)}`);
    assert.equal(err.status, 400);
    assert.equal(err.type, 'invalid_request_error');
    assert.equal(err.param, 'temperature');
  });

  test('unknown routes: 404 JSON error', async () => {
    const auth = { authorization: `Bearer ${CLIENT_KEY}` };
    const get = await call(`${gw.url}/v1/does-not-exist`, { headers: auth });
    const e = assertOpenAIError(get, { status: 404, type: 'invalid_request_error', code: 'unknown_url' }, 'GET unknown');
    assert.match(e.message, /\/v1\/does-not-exist/);

    const post = await call(`${gw.url}/v2/chat/completions`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: '{}' });
    assertOpenAIError(post, { status: 404, type: 'invalid_request_error', code: 'unknown_url' }, 'POST unknown');

    const root = await call(`${gw.url}/`);
    assertOpenAIError(root, { status: 404, type: 'invalid_request_error', code: 'unknown_url' }, 'GET /');
  });

  test('refused requests are still logged and counted, without the key', async () => {
    const before = gw.finished().length;
    const r = await postChat(gw, { model: 'gpt-test', messages: MESSAGES }, { authorization: 'Bearer sk-refused-0123456789' });
    assert.equal(r.status, 401);
    const bad = await postChat(gw, { model: 'gpt-test' }, { authorization: `Bearer ${CLIENT_KEY}` });
    assert.equal(bad.status, 400);
    await new Promise((res) => setTimeout(res, 50));
    const lines = gw.finished().slice(before);
    assert.deepEqual(
      lines.map((l) => [l['status'], l['outcome'], l['key']]),
      [
        [401, 'client_error', null],
        [400, 'client_error', 'team-a'],
      ],
    );
    assert.ok(lines.every((l) => typeof l['request_id'] === 'string'));
    assert.ok(!gw.logs.join('\n').includes('sk-refused-0123456789'));
    const metrics = await gw.metricsText();
    assert.match(metrics, /switchyard_requests_total\{model="none",upstream="none",status="401",outcome="client_error"\} [1-9]/);
  });
});

describe('request body limit', () => {
  let upstream: FakeUpstream;
  let gw: TestGateway;

  before(async () => {
    ({ upstream, gw } = await startWithUpstream((url) => testConfigYaml(url, { bodyLimit: 2048 })));
    upstream.on(() => ({ status: 200, body: fixtureJson('openai-chat-gpt5.json') }));
  });
  after(() => closeAll(gw, upstream));

  test('a body over body_limit_bytes: 413 with an OpenAI-style error, upstream untouched', async () => {
    const body = JSON.stringify({ model: 'gpt-test', messages: [{ role: 'user', content: 'x'.repeat(4096) }] });
    assert.ok(Buffer.byteLength(body) > 2048);
    const r = await postChat(gw, body);
    assertOpenAIError(r, { status: 413, type: 'invalid_request_error', code: 'request_too_large' }, 'too large');

    const err = await rejection(gw.client().chat.completions.create({ model: 'gpt-test', messages: [{ role: 'user', content: 'y'.repeat(4096) }] }));
    assert.ok(err instanceof OpenAI.APIError, `APIError, got ${String(err)}`);
    assert.equal(err.status, 413);
    assert.equal(upstream.requests.length, 0, 'the fake upstream received no request');
  });

  test('a body under the limit is served (the 413 came from the configured limit)', async () => {
    const body = JSON.stringify({ model: 'gpt-test', messages: [{ role: 'user', content: 'x'.repeat(1024) }] });
    assert.ok(Buffer.byteLength(body) < 2048);
    const r = await postChat(gw, body);
    assert.equal(r.status, 200, r.text);
    assert.equal(upstream.requests.length, 1);
  });
});

describe('accepted keys', () => {
  let upstream: FakeUpstream;
  let gw: TestGateway;

  before(async () => {
    ({ upstream, gw } = await startWithUpstream());
    upstream.on(() => ({ status: 200, body: fixtureJson('openai-chat-gpt5.json') }));
  });
  after(() => closeAll(gw, upstream));

  for (const [name, headers] of [
    ['Authorization: Bearer', { authorization: `Bearer ${CLIENT_KEY}` }],
    ['api-key', { 'api-key': CLIENT_KEY }],
    ['x-api-key', { 'x-api-key': CLIENT_KEY }],
  ] as const) {
    test(`the key is accepted from ${name}`, async () => {
      const models = await call(`${gw.url}/v1/models`, { headers });
      assert.equal(models.status, 200, models.text);
      assert.deepEqual((models.json as { data: { id: string }[] }).data.map((m) => m.id).sort(), ['gpt-test', 'reasoner-test']);

      const before = upstream.requests.length;
      const r = await postChat(gw, { model: 'gpt-test', messages: MESSAGES }, headers);
      assert.equal(r.status, 200, r.text);
      assert.deepEqual(r.json, fixtureJson('openai-chat-gpt5.json'));
      assert.equal(upstream.requests.length, before + 1);
    });
  }

  test('the limited key may use its one model', async () => {
    const completion = await gw.client({ apiKey: OTHER_KEY }).chat.completions.create({ model: 'reasoner-test', messages: [{ role: 'user', content: 'hi' }] });
    assert.equal(completion.id, fixtureJson('openai-chat-gpt5.json')['id']);
    assert.equal(upstream.requests.at(-1)!.json!['model'], 'upstream-reasoner');
  });
});

describe('a "__proto__" key in a valid JSON body', () => {
  test('is dropped, not refused as unparseable: the request is served, and the key never reaches the upstream', async () => {
    const { upstream, gw } = await startWithUpstream((url) => testConfigYaml(url));
    try {
      upstream.on(() => ({ status: 200, body: fixtureJson('openai-chat-gpt5.json') }));
      const r = await postChat(gw, '{"model": "gpt-test", "messages": [{"role": "user", "content": "hi"}], "__proto__": {"x": 1}}');
      assert.equal(r.status, 200, r.text);
      assert.equal(upstream.requests.length, 1);
      assert.ok(!upstream.requests[0]!.body.includes('__proto__'), upstream.requests[0]!.body);
    } finally {
      await closeAll(gw, upstream);
    }
  });

  test('in a body over 1 MiB (parsed in steps), plainly or with \\u escapes, and a constructor.prototype: dropped the same way', async () => {
    const { upstream, gw } = await startWithUpstream((url) => testConfigYaml(url));
    try {
      upstream.on(() => ({ status: 200, body: fixtureJson('openai-chat-gpt5.json') }));
      const long = 'y'.repeat(2 * 1024 * 1024);
      const bodies = [
        `{"model": "gpt-test", "messages": [{"role": "user", "content": "${long}"}], "__proto__": {"x": 1}}`,
        `{"model": "gpt-test", "messages": [{"role": "user", "content": "${long}", "\\u005f_proto__": {"x": 1}}]}`,
        `{"model": "gpt-test", "messages": [{"role": "user", "content": "${long}"}], "constructor": {"prototype": {"x": 1}}}`,
      ];
      for (const [i, body] of bodies.entries()) {
        const r = await postChat(gw, body);
        assert.equal(r.status, 200, r.text);
        const sent = upstream.requests[i]!.body;
        assert.ok(!sent.includes('__proto__') && !sent.includes('prototype'), `body ${i}: ${sent.slice(-200)}`);
        assert.ok(sent.includes(long), `body ${i}: the prompt went up whole`);
      }
    } finally {
      await closeAll(gw, upstream);
    }
  });
});
