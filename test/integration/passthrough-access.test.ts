/**
 * Passthrough routes apply the key's model allow-list as the model routes do (issue 29: a
 * key held to `gpt-*` could call any embeddings model, list and upload the shared account's
 * files and start batches), before its rate limit; and their record names the endpoint,
 * the model and the upstream. A JSON body is read for its model and forwarded byte for byte.
 */
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { brotliCompressSync, gzipSync } from 'node:zlib';
import OpenAI, { toFile } from 'openai';
import { hashKey } from '../../src/auth/keys.js';
import { FakeUpstream } from '../helpers/fake-upstream.js';
import { CLIENT_KEY, closeAll, finishedLine, startGateway, testConfigYaml, type TestGateway } from '../helpers/gateway.js';

const GPT_KEY = 'sk-test-pass-gpt-only-0123456789ab';
const EMBED_KEY = 'sk-test-pass-embed-rpm-0123456789a';
const EMBEDDINGS = {
  object: 'list',
  data: [{ object: 'embedding', index: 0, embedding: [0.1, 0.2] }],
  model: 'text-embedding-3-small',
  usage: { prompt_tokens: 2, total_tokens: 2 },
};
const FILES = { object: 'list', data: [], has_more: false };

describe('passthrough: the key models list, then its limits; the record names what was called', () => {
  let upstream: FakeUpstream;
  let gw: TestGateway;
  const client = (apiKey: string): OpenAI => gw.client({ apiKey, maxRetries: 0 });

  before(async () => {
    upstream = await new FakeUpstream().start();
    upstream.on((req) => (req.url.startsWith('/v1/embeddings') ? { status: 200, body: EMBEDDINGS } : { status: 200, body: FILES }));
    const keys = `  - name: gpt-only\n    key_sha256: ${hashKey(GPT_KEY)}\n    models: ["gpt-*"]\n  - name: embed-rpm-1\n    key_sha256: ${hashKey(EMBED_KEY)}\n    models: ["gpt-*", "text-embedding-*"]\n    limits: { rpm: 1 }\n`;
    gw = await startGateway(`${testConfigYaml(upstream.url)}${keys}\npassthrough:\n  upstream: fake\n`);
  });
  after(() => closeAll(gw, upstream));

  test('a model the key may not use is a 404 model_not_found, the upstream untouched; a listed one passes byte for byte', async () => {
    upstream.requests.length = 0;
    const err = await client(GPT_KEY)
      .embeddings.create({ model: 'text-embedding-3-small', input: 'hi' })
      .catch((e: unknown) => e);
    assert.ok(err instanceof OpenAI.NotFoundError, String(err));
    assert.equal(err.code, 'model_not_found');
    assert.equal(upstream.requests.length, 0);
    const body = '{ "model": "text-embedding-3-small",\n  "input": ["héllo", "✓"] }';
    const res = await fetch(`${gw.url}/v1/embeddings`, {
      method: 'POST',
      headers: { authorization: `Bearer ${CLIENT_KEY}`, 'content-type': 'application/json; charset=utf-8' },
      body,
    });
    assert.equal(res.status, 200, await res.clone().text());
    assert.deepEqual(await res.json(), EMBEDDINGS);
    assert.equal(upstream.requests.length, 1);
    assert.equal(upstream.requests[0]!.body, body, 'the JSON body reaches the upstream unchanged');
  });

  test('a JSON body sent chunked is forwarded whole', async () => {
    upstream.requests.length = 0;
    const parts = ['{"model":"text-embedding-3-small",', '"input":"chunked"}'];
    const stream = new ReadableStream<Uint8Array>({
      start(c) {
        for (const p of parts) c.enqueue(new TextEncoder().encode(p));
        c.close();
      },
    });
    const res = await fetch(`${gw.url}/v1/embeddings`, {
      method: 'POST',
      headers: { authorization: `Bearer ${CLIENT_KEY}`, 'content-type': 'application/json' },
      body: stream,
      duplex: 'half',
    } as RequestInit);
    assert.equal(res.status, 200, await res.clone().text());
    assert.equal(upstream.requests[0]?.body, parts.join(''));
  });

  test('a gzip or br JSON body is read for its model and forwarded compressed as it came; a bomb is 413, corrupt data 400, an unknown coding 415', async () => {
    const post = (key: string, body: Buffer, encoding: string) =>
      fetch(`${gw.url}/v1/embeddings`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'content-encoding': encoding },
        body,
      });
    const json = JSON.stringify({ model: 'text-embedding-3-small', input: 'compressed' });
    for (const [encoding, bytes] of [
      ['gzip', gzipSync(json)],
      ['br', brotliCompressSync(json)],
    ] as const) {
      upstream.requests.length = 0;
      const refused = await post(GPT_KEY, bytes, encoding);
      assert.equal(refused.status, 404, `${encoding}: the model inside was read and refused`);
      assert.equal(((await refused.json()) as { error: { code: string } }).error.code, 'model_not_found');
      assert.equal(upstream.requests.length, 0);
      const res = await post(CLIENT_KEY, bytes, encoding);
      assert.equal(res.status, 200, await res.clone().text());
      assert.equal(upstream.requests.length, 1);
      assert.equal(upstream.requests[0]!.headers['content-encoding'], encoding);
      assert.ok(upstream.requests[0]!.bytes.equals(bytes), `${encoding}: the body went up as the client sent it`);
    }
    upstream.requests.length = 0;
    const bomb = await post(CLIENT_KEY, gzipSync(Buffer.alloc(40 * 1024 * 1024, 0x20)), 'gzip');
    assert.equal(bomb.status, 413, await bomb.clone().text());
    const corrupt = await post(CLIENT_KEY, Buffer.from('not gzip at all'), 'gzip');
    assert.equal(corrupt.status, 400);
    assert.equal(((await corrupt.json()) as { error: { code: string } }).error.code, 'invalid_body_encoding');
    const unknown = await post(CLIENT_KEY, Buffer.from(json), 'compress');
    assert.equal(unknown.status, 415);
    assert.equal(upstream.requests.length, 0, 'nothing undecodable went upstream');
  });

  test('where no model can be read (files, multipart uploads, batches), a key held to some models gets 403; a key allowed every model passes', async () => {
    upstream.requests.length = 0;
    const limited = client(GPT_KEY);
    const listing = await limited.files.list().catch((e: unknown) => e);
    assert.ok(listing instanceof OpenAI.PermissionDeniedError, String(listing));
    assert.match(listing.message, /only keys allowed every model/);
    const upload = await limited.files.create({ file: await toFile(Buffer.from('{}\n'), 'batch.jsonl'), purpose: 'batch' }).catch((e: unknown) => e);
    assert.ok(upload instanceof OpenAI.PermissionDeniedError, String(upload));
    const transcription = await limited.audio.transcriptions
      .create({ file: await toFile(Buffer.from('RIFF'), 'a.wav'), model: 'gpt-4o-transcribe' })
      .catch((e: unknown) => e);
    assert.ok(transcription instanceof OpenAI.PermissionDeniedError, String(transcription));
    const batch = await limited.batches
      .create({ input_file_id: 'file-1', endpoint: '/v1/chat/completions', completion_window: '24h' })
      .catch((e: unknown) => e);
    assert.ok(batch instanceof OpenAI.PermissionDeniedError, String(batch));
    assert.equal(upstream.requests.length, 0, 'nothing reached the upstream');
    await client(CLIENT_KEY).files.list();
    assert.equal(upstream.requests.length, 1);
  });

  test('a body that is not JSON under a JSON content type is a 400 invalid_json, not forwarded', async () => {
    upstream.requests.length = 0;
    const res = await fetch(`${gw.url}/v1/embeddings`, {
      method: 'POST',
      headers: { authorization: `Bearer ${CLIENT_KEY}`, 'content-type': 'application/json' },
      body: '{"model": "text-embedding-3-small", "input": ',
    });
    assert.equal(res.status, 400);
    assert.equal(((await res.json()) as { error: { code: string } }).error.code, 'invalid_json');
    assert.equal(upstream.requests.length, 0);
  });

  test('a refused model takes nothing from the key rpm: the 1-rpm key still makes its one call, then gets 429', async () => {
    const c = client(EMBED_KEY);
    const refused = await c.embeddings.create({ model: 'other-embedding', input: 'hi' }).catch((e: unknown) => e);
    assert.ok(refused instanceof OpenAI.NotFoundError, String(refused));
    await c.embeddings.create({ model: 'text-embedding-3-small', input: 'hi' });
    const limited = await c.embeddings.create({ model: 'text-embedding-3-small', input: 'hi' }).catch((e: unknown) => e);
    assert.ok(limited instanceof OpenAI.RateLimitError, String(limited));
  });

  test('the record of a passthrough call names its endpoint, model and upstream; a refused one too', async () => {
    const { response } = await client(CLIENT_KEY).embeddings.create({ model: 'text-embedding-3-small', input: 'hi' }).withResponse();
    const ok = await finishedLine(gw, response.headers.get('x-request-id')!);
    assert.deepEqual(
      [ok['api'], ok['model'], ok['requested_model'], ok['upstream'], ok['status'], ok['outcome']],
      ['embeddings', 'text-embedding-3-small', 'text-embedding-3-small', 'fake', 200, 'ok'],
    );
    const res = await fetch(`${gw.url}/v1/embeddings`, {
      method: 'POST',
      headers: { authorization: `Bearer ${GPT_KEY}`, 'content-type': 'application/json' },
      body: '{"model":"text-embedding-3-large","input":"x"}',
    });
    assert.equal(res.status, 404);
    const refused = await finishedLine(gw, res.headers.get('x-request-id')!);
    assert.deepEqual(
      [refused['api'], refused['model'], refused['key'], refused['outcome']],
      ['embeddings', 'text-embedding-3-large', 'gpt-only', 'client_error'],
    );
  });
});

describe('a passthrough JSON body trickled slower than request_timeout_ms', () => {
  test('is cut with the 408 of the model routes, not held while it is read for its model', async () => {
    const upstream = await new FakeUpstream().start();
    const gw = await startGateway(`${testConfigYaml(upstream.url, { server: '  request_timeout_ms: 400' })}\npassthrough:\n  upstream: fake\n`);
    try {
      const t0 = Date.now();
      const out = await new Promise<string>((resolve) => {
        const s = connect(Number(new URL(gw.url).port), '127.0.0.1', () =>
          s.write(
            `POST /v1/embeddings HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${CLIENT_KEY}\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{`,
          ),
        );
        let got = '';
        s.on('data', (d: Buffer) => (got += d.toString()));
        s.on('close', () => resolve(got));
        setTimeout(() => s.destroy(), 3000);
      });
      assert.match(out, /^HTTP\/1.1 408/);
      assert.ok(Date.now() - t0 < 2900, 'cut well before the test gave up');
      assert.equal(upstream.requests.length, 0);
    } finally {
      await closeAll(gw, upstream);
    }
  });
});
