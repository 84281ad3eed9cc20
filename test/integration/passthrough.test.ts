/**
 * Passthrough of the endpoints the gateway does not model (embeddings, moderations, files,
 * audio …) to `passthrough.upstream`: key swapped, bodies byte-intact and streamed, gateway
 * errors in the OpenAI shape, and the gateway's own routes never shadowed.
 */
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import OpenAI, { toFile } from 'openai';
import { FakeUpstream, type ReceivedRequest, type ScriptedReply } from '../helpers/fake-upstream.js';
import { fixtureJson } from '../helpers/recordings.js';
import { CLIENT_KEY, UPSTREAM_KEY, closeAll, finishedLine, startGateway, testConfigYaml, waitFor, type TestGateway } from '../helpers/gateway.js';

const PASSTHROUGH = '\npassthrough:\n  upstream: fake\n';

const EMBEDDINGS = {
  object: 'list',
  data: [{ object: 'embedding', index: 0, embedding: [0.0023064255, -0.009327292, 0.015797347] }],
  model: 'text-embedding-3-small',
  usage: { prompt_tokens: 2, total_tokens: 2 },
};

/** An answer of 3 vectors of 1,536 dimensions (~100 KB: its usage comes long after the first bytes), as the OpenAPI spec's CreateEmbeddingResponse. */
const BIG_EMBEDDINGS = {
  object: 'list',
  data: [0, 1, 2].map((index) => ({ object: 'embedding', index, embedding: Array.from({ length: 1536 }, (_, i) => Math.sin(index * 1536 + i) / 7) })),
  model: 'gpt-test',
  usage: { prompt_tokens: 1200, total_tokens: 1200 },
};

const MODERATION = {
  id: 'modr-0123',
  model: 'omni-moderation-latest',
  results: [{ flagged: false, categories: { violence: false }, category_scores: { violence: 0.0001 }, category_applied_input_types: { violence: ['text'] } }],
};

const FILE_OBJECT = { id: 'file-abc123', object: 'file', bytes: 42, created_at: 1700000000, filename: 'batch.jsonl', purpose: 'batch', status: 'processed' };

function only(upstream: FakeUpstream, path: string): ReceivedRequest {
  const hits = upstream.requests.filter((r) => r.url.split('?')[0] === path);
  assert.equal(hits.length, 1, `one upstream request to ${path}`);
  return hits[0]!;
}

function assertKeySwapped(r: ReceivedRequest): void {
  assert.equal(r.headers['authorization'], `Bearer ${UPSTREAM_KEY}`);
  assert.equal(r.headers['api-key'], undefined);
  assert.equal(r.headers['x-api-key'], undefined);
  assert.ok(!JSON.stringify(r.headers).includes(CLIENT_KEY), 'the client key never reaches the upstream');
}

function assertNoUpstreamKey(gw: TestGateway): void {
  assert.ok(!gw.logs.join('\n').includes(UPSTREAM_KEY), 'the upstream key is never logged');
}

/** A port nothing listens on. */
async function deadPort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as AddressInfo).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

describe('passthrough to the configured upstream', () => {
  let upstream: FakeUpstream;
  let gw: TestGateway;
  let client: OpenAI;

  before(async () => {
    upstream = await new FakeUpstream().start();
    upstream.on((req): ScriptedReply => {
      const path = req.url.split('?')[0];
      if (path === '/v1/embeddings' && req.json?.['model'] === 'gpt-test') return { status: 200, body: BIG_EMBEDDINGS };
      if (path === '/v1/embeddings') return { status: 200, headers: { 'x-request-id': 'req_upstream_1', 'set-cookie': '__cf_bm=secret' }, body: EMBEDDINGS };
      if (path === '/v1/moderations') return { status: 200, body: MODERATION };
      if (path === '/v1/files') return { status: 200, body: FILE_OBJECT };
      if (path === '/v1/chat/completions') return { status: 200, body: fixtureJson('openai-chat-gpt5.json') };
      if (path === '/v1/audio/speech') return { status: 200, headers: { 'content-type': 'audio/mpeg' }, steps: ['ID3-first', { delayMs: 400 }, '-second'] };
      // Upstreams that echo the key they were sent, in an error body and a header.
      const echoed = String(req.headers['authorization'] ?? '').replace(/^Bearer /, '');
      if (path === '/v1/images/generations')
        return {
          status: 401,
          body: { error: { message: `Incorrect API key provided: ${echoed}.`, type: 'invalid_request_error', param: null, code: 'invalid_api_key' } },
        };
      if (path === '/v1/images/edits')
        return {
          status: 400,
          headers: { 'x-echo-key': echoed },
          body: { error: { message: `bad request for ${echoed}`, type: 'invalid_request_error', param: echoed, code: echoed } },
        };
      if (path === '/v1/batches') return { status: 503, body: { error: { message: 'overloaded', type: 'server_error', param: null, code: null } } };
      // The client's accept-encoding is passed on, so an error may come compressed.
      if (path === '/v1/images/variations')
        return { status: 400, gzip: true, body: { error: { message: `bad image for ${echoed}`, type: 'invalid_request_error', param: null, code: null } } };
      if (path === '/v1/audio/translations')
        return { status: 400, headers: { 'content-encoding': 'zstd' }, body: Buffer.from([0x28, 0xb5, 0x2f, 0xfd, 1, 2, 3]) };
      return { status: 404, body: { error: { message: `upstream has no ${path}`, type: 'invalid_request_error', param: null, code: 'unknown_url' } } };
    });
    gw = await startGateway(testConfigYaml(upstream.url) + PASSTHROUGH);
    client = gw.client();
  });
  after(() => closeAll(gw, upstream));

  test('embeddings: key swapped, body and response unchanged, one request-finished line', async () => {
    const { data, response } = await client.embeddings
      .create({ model: 'text-embedding-3-small', input: 'héllo', encoding_format: 'float' }, { headers: { 'OpenAI-Organization': 'org-client-choice' } })
      .withResponse();
    assert.deepEqual(JSON.parse(JSON.stringify(data)), EMBEDDINGS);
    const r = only(upstream, '/v1/embeddings');
    assertKeySwapped(r);
    assert.equal(r.method, 'POST');
    assert.deepEqual(r.json, { model: 'text-embedding-3-small', input: 'héllo', encoding_format: 'float' });
    assert.equal(r.headers['openai-organization'], undefined, 'the client does not pick the upstream account');
    const id = response.headers.get('x-request-id');
    assert.ok(id);
    assert.equal(r.headers['x-request-id'], id, 'the gateway request id is propagated');
    assert.equal(response.headers.get('x-upstream-request-id'), 'req_upstream_1');
    assert.equal(response.headers.get('x-switchyard-upstream'), 'fake');
    assert.equal(response.headers.get('set-cookie'), null);
    const line = await finishedLine(gw, id);
    assert.equal(line['status'], 200);
    // The usage the answer reported is booked; the model is not a configured one, so no price.
    assert.deepEqual(line['tokens'], { input: 2, cached: 0, output: 0, reasoning: 0 });
    assert.equal(line['cost_usd'], 0);
    assertNoUpstreamKey(gw);
  });

  test('embeddings of a configured model: the usage at the end of a large answer is booked and priced at the model input price', async () => {
    const { data, response } = await client.embeddings.create({ model: 'gpt-test', input: ['a', 'b', 'c'], encoding_format: 'float' }).withResponse();
    assert.deepEqual(JSON.parse(JSON.stringify(data)), BIG_EMBEDDINGS);
    const line = await finishedLine(gw, response.headers.get('x-request-id')!);
    assert.deepEqual(line['tokens'], { input: 1200, cached: 0, output: 0, reasoning: 0 });
    // gpt-test: input $2.5 per 1M tokens.
    assert.ok(Math.abs(Number(line['cost_usd']) - (1200 * 2.5) / 1e6) < 1e-12, String(line['cost_usd']));
  });

  test('an upstream error never carries the upstream key to the client; a refused provider key is the gateway 502', async () => {
    const refused = await fetch(`${gw.url}/v1/images/generations`, {
      method: 'POST',
      headers: { authorization: `Bearer ${CLIENT_KEY}`, 'content-type': 'application/json' },
      body: '{"prompt":"x"}',
    });
    const refusedText = await refused.text();
    assert.equal(refused.status, 502);
    assert.equal((await finishedLine(gw, refused.headers.get('x-request-id')!))['outcome'], 'upstream_error');
    assert.equal((JSON.parse(refusedText) as { error: { code: string } }).error.code, 'upstream_auth_failed');
    const bad = await fetch(`${gw.url}/v1/images/edits`, {
      method: 'POST',
      headers: { authorization: `Bearer ${CLIENT_KEY}`, 'content-type': 'application/json' },
      body: '{"prompt":"x"}',
    });
    const badText = await bad.text();
    assert.equal(bad.status, 400);
    assert.equal((await finishedLine(gw, bad.headers.get('x-request-id')!))['outcome'], 'client_error', "a refused request is the caller's");
    const overloaded = await fetch(`${gw.url}/v1/batches`, {
      method: 'POST',
      headers: { authorization: `Bearer ${CLIENT_KEY}`, 'content-type': 'application/json' },
      body: '{"input_file_id":"file-abc123"}',
    });
    assert.equal(overloaded.status, 503);
    assert.match(await overloaded.text(), /overloaded/);
    assert.equal((await finishedLine(gw, overloaded.headers.get('x-request-id')!))['outcome'], 'upstream_error', 'a relayed 5xx is the upstream failing');
    assert.match(badText, /bad request for \[redacted\]/);
    for (const [text, headers] of [
      [refusedText, refused.headers],
      [badText, bad.headers],
    ] as const) {
      assert.ok(!text.includes(UPSTREAM_KEY), `the upstream key is in a body: ${text}`);
      assert.ok(![...headers.values()].some((v) => v.includes(UPSTREAM_KEY)), 'the upstream key is in a header');
    }
    assertNoUpstreamKey(gw);
  });

  test('a compressed error answer is sent decoded and scrubbed; one in an encoding not decoded here goes out as its status alone', async () => {
    const post = (path: string) =>
      fetch(`${gw.url}${path}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${CLIENT_KEY}`, 'content-type': 'application/json', 'accept-encoding': 'gzip, zstd' },
        body: '{"prompt":"x"}',
      });
    const gz = await post('/v1/images/variations');
    assert.equal(gz.status, 400);
    assert.equal(gz.headers.get('content-encoding'), null, 'the body is sent plain, so it is not labelled gzip');
    const text = await gz.text();
    assert.match((JSON.parse(text) as { error: { message: string } }).error.message, /^bad image for \[redacted\]\.?$/);
    assert.ok(!text.includes(UPSTREAM_KEY));
    const zstd = await post('/v1/audio/translations');
    assert.equal(zstd.status, 400);
    assert.equal(zstd.headers.get('content-encoding'), null);
    assert.equal(await zstd.text(), '');
    assertNoUpstreamKey(gw);
  });

  test('moderations', async () => {
    const res = await client.moderations.create({ model: 'omni-moderation-latest', input: 'hi' });
    assert.deepEqual(JSON.parse(JSON.stringify(res)), MODERATION);
    assertKeySwapped(only(upstream, '/v1/moderations'));
  });

  test('multipart file upload reaches the upstream byte for byte, unparsed', async () => {
    const content = Buffer.from('{"custom_id":"a","body":{"x":"é✓\\u0000"}}\n\u0000\u0001\u007f tab\there 🌍\r\n--not-a-boundary\n', 'utf8');
    const file = await client.files.create({ file: await toFile(content, 'batch.jsonl'), purpose: 'batch' });
    assert.equal(file.id, FILE_OBJECT.id);
    const r = only(upstream, '/v1/files');
    assertKeySwapped(r);
    const ct = String(r.headers['content-type']);
    const boundary = /^multipart\/form-data; boundary=(.+)$/.exec(ct)?.[1];
    assert.ok(boundary, `multipart content type, got ${ct}`);
    assert.ok(r.body.includes(`--${boundary}`), 'the boundary is intact');
    assert.ok(r.body.includes('name="purpose"') && r.body.includes('batch'));
    const start = r.body.indexOf('filename="batch.jsonl"');
    assert.ok(start > 0, 'the file part is there');
    const dataAt = r.body.indexOf('\r\n\r\n', start) + 4;
    const end = r.body.indexOf(`\r\n--${boundary}`, dataAt);
    assert.equal(Buffer.from(r.body.slice(dataAt, end), 'utf8').compare(content), 0, 'the file bytes arrive unchanged');
  });

  test('a streamed response is relayed as it arrives, not buffered', async () => {
    const t0 = Date.now();
    const res = await fetch(`${gw.url}/v1/audio/speech`, {
      method: 'POST',
      headers: { authorization: `Bearer ${CLIENT_KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'gpt-4o-mini-tts', input: 'hi', voice: 'alloy' }),
    });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'audio/mpeg');
    const reader = res.body!.getReader();
    const first = await reader.read();
    const firstAt = Date.now() - t0;
    assert.equal(Buffer.from(first.value!).toString(), 'ID3-first');
    assert.ok(firstAt < 350, `first bytes after ${firstAt} ms, before the upstream finished`);
    let rest = '';
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      rest += Buffer.from(value).toString();
    }
    assert.equal(rest, '-second');
  });

  test('a bad client key is refused with 401 before anything reaches the upstream', async () => {
    const before = upstream.requests.length;
    await assert.rejects(gw.client({ apiKey: 'sk-not-a-key' }).embeddings.create({ model: 'text-embedding-3-small', input: 'x' }), (err: unknown) => {
      assert.ok(err instanceof OpenAI.APIError);
      assert.equal(err.status, 401);
      assert.equal((err.error as { code?: string }).code, 'invalid_api_key');
      return true;
    });
    const res = await fetch(`${gw.url}/v1/files`, { method: 'POST', headers: { 'content-type': 'multipart/form-data; boundary=x' }, body: '--x--\r\n' });
    assert.equal(res.status, 401);
    assert.equal(upstream.requests.length, before);
  });

  test('chat completions stay on the gateway route (model rewritten), /v1/models too', async () => {
    const { response } = await client.chat.completions.create({ model: 'gpt-test', messages: [{ role: 'user', content: 'hi' }] }).withResponse();
    assert.ok(response.headers.get('x-switchyard-strategy'), 'routed by the pipeline');
    const r = only(upstream, '/v1/chat/completions');
    assert.equal(r.json?.['model'], 'upstream-model-x', 'the pipeline rewrote the model: not proxied');
    const models = await client.models.list();
    assert.ok(models.data.some((m) => m.id === 'gpt-test'));
  });

  test('an unlisted /v1 path gets the gateway 404, not the upstream', async () => {
    const before = upstream.requests.length;
    const res = await fetch(`${gw.url}/v1/fine_tuning/jobs`, { headers: { authorization: `Bearer ${CLIENT_KEY}` } });
    assert.equal(res.status, 404);
    const body = (await res.json()) as { error: { code: string; type: string } };
    assert.equal(body.error.code, 'unknown_url');
    assert.equal(upstream.requests.length, before);
  });

  test('query strings pass; path traversal is refused', async () => {
    await fetch(`${gw.url}/v1/files?purpose=batch&limit=2`, { headers: { authorization: `Bearer ${CLIENT_KEY}` } });
    assert.ok(upstream.requests.some((r) => r.url === '/v1/files?purpose=batch&limit=2'));
    const before = upstream.requests.length;
    const res = await fetch(`${gw.url}/v1/files/%2e%2e/%2e%2e/admin`, { headers: { authorization: `Bearer ${CLIENT_KEY}` } });
    assert.ok(res.status === 400 || res.status === 404, `got ${res.status}`);
    assert.ok(((await res.json()) as { error?: unknown }).error, 'OpenAI error shape');
    assert.equal(upstream.requests.length, before);
  });
});

describe('passthrough errors', () => {
  test('no passthrough upstream configured: 404 in the OpenAI shape', async () => {
    const upstream = await new FakeUpstream().start();
    const gw = await startGateway(testConfigYaml(upstream.url));
    try {
      await assert.rejects(gw.client().embeddings.create({ model: 'text-embedding-3-small', input: 'x' }), (err: unknown) => {
        assert.ok(err instanceof OpenAI.APIError);
        assert.equal(err.status, 404);
        assert.deepEqual(err.error, {
          message:
            'POST /v1/embeddings is proxied to the passthrough upstream, and none is configured: set passthrough.upstream in the gateway config to the id of an OpenAI-compatible upstream.',
          type: 'invalid_request_error',
          param: null,
          code: 'unknown_url',
        });
        return true;
      });
      assert.equal(upstream.requests.length, 0);
    } finally {
      await gw.close();
      await upstream.close();
    }
  });

  test('passthrough upstream off (its key unset): 404', async () => {
    const upstream = await new FakeUpstream().start();
    const gw = await startGateway(testConfigYaml(upstream.url) + PASSTHROUGH, {});
    try {
      const res = await fetch(`${gw.url}/v1/moderations`, {
        method: 'POST',
        headers: { authorization: `Bearer ${CLIENT_KEY}`, 'content-type': 'application/json' },
        body: '{"input":"x"}',
      });
      assert.equal(res.status, 404);
      assert.equal(((await res.json()) as { error: { code: string } }).error.code, 'unknown_url');
      assert.equal(upstream.requests.length, 0);
    } finally {
      await gw.close();
      await upstream.close();
    }
  });

  test('dead upstream: 502 in the OpenAI shape, recorded, key never logged', async () => {
    const port = await deadPort();
    const gw = await startGateway(testConfigYaml(`http://127.0.0.1:${port}`) + PASSTHROUGH);
    try {
      const res = await fetch(`${gw.url}/v1/embeddings`, {
        method: 'POST',
        headers: { authorization: `Bearer ${CLIENT_KEY}`, 'content-type': 'application/json' },
        body: '{"model":"text-embedding-3-small","input":"x"}',
      });
      assert.equal(res.status, 502);
      const text = await res.text();
      assert.ok(!text.includes(UPSTREAM_KEY));
      const body = JSON.parse(text) as { error: Record<string, unknown> };
      assert.deepEqual(Object.keys(body.error).sort(), ['code', 'message', 'param', 'type']);
      assert.equal(body.error['code'], 'upstream_unreachable');
      assert.equal(body.error['type'], 'server_error');
      const id = res.headers.get('x-request-id');
      const line = await waitFor(() => gw.finished().find((l) => l['request_id'] === id), 2000, 'request finished');
      assert.equal(line['status'], 502);
      assert.equal(line['outcome'], 'upstream_error', 'the upstream failed, not the gateway');
      assertNoUpstreamKey(gw);
    } finally {
      await gw.close();
    }
  });
});
