/**
 * Compressed request bodies (issue 30): gzip, deflate, br and (where Node has it) zstd
 * bodies are decoded on the model-call routes; a decompression bomb gets 413 naming the
 * limit without taking the process down; corrupt data 400; an unknown coding 415.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import zlib from 'node:zlib';
import { request } from 'undici';
import { CLIENT_KEY, closeAll, startWithUpstream, testConfigYaml, type GatewayWithUpstream } from '../helpers/gateway.js';

const LIMIT = 1024 * 1024;
const zstdCompress = (zlib as unknown as { zstdCompressSync?: (b: Buffer) => Buffer }).zstdCompressSync;

const ENCODERS: Record<string, (b: Buffer) => Buffer> = {
  gzip: (b) => zlib.gzipSync(b),
  deflate: (b) => zlib.deflateSync(b),
  br: (b) => zlib.brotliCompressSync(b),
};

describe('compressed request bodies', () => {
  let g: GatewayWithUpstream;
  const seen: string[] = [];

  before(async () => {
    g = await startWithUpstream((url) => testConfigYaml(url, { bodyLimit: LIMIT }));
    g.upstream.on((req) => {
      const msgs = req.json?.['messages'] as { content: string }[] | undefined;
      seen.push(String(msgs?.at(-1)?.content ?? ''));
      return {
        status: 200,
        body: {
          id: 'c',
          object: 'chat.completion',
          created: 1,
          model: 'm',
          choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }],
          usage: { prompt_tokens: 3, completion_tokens: 1, total_tokens: 4 },
        },
      };
    });
  });
  after(() => closeAll(g?.gw, g?.upstream));

  const post = async (path: string, body: Buffer, encoding: string) => {
    const res = await request(`${g.gw.url}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${CLIENT_KEY}`, 'x-api-key': CLIENT_KEY, 'content-type': 'application/json', 'content-encoding': encoding },
      body,
    });
    const text = await res.body.text();
    return { status: res.statusCode, json: JSON.parse(text) as Record<string, unknown> };
  };
  const chat = (content: string) => Buffer.from(JSON.stringify({ model: 'gpt-test', messages: [{ role: 'user', content }] }));
  const anthropic = (content: string) => Buffer.from(JSON.stringify({ model: 'gpt-test', max_tokens: 16, messages: [{ role: 'user', content }] }));
  const healthy = async () => assert.equal((await request(`${g.gw.url}/healthz`)).statusCode, 200);

  for (const [name, encode] of Object.entries(ENCODERS)) {
    test(`${name}: chat completions and messages decode the body`, async () => {
      const c = await post('/v1/chat/completions', encode(chat(`hello ${name}`)), name);
      assert.equal(c.status, 200, JSON.stringify(c.json));
      assert.equal(seen.at(-1), `hello ${name}`);
      const m = await post('/v1/messages', encode(anthropic(`hi ${name}`)), name);
      assert.equal(m.status, 200, JSON.stringify(m.json));
      assert.equal(m.json['type'], 'message');
      assert.equal(seen.at(-1), `hi ${name}`);
    });
  }

  test('raw deflate (no zlib header) is taken as deflate too', async () => {
    const c = await post('/v1/chat/completions', zlib.deflateRawSync(chat('raw one')), 'deflate');
    assert.equal(c.status, 200, JSON.stringify(c.json));
    assert.equal(seen.at(-1), 'raw one');
  });

  test('count_tokens decodes a gzip body', async () => {
    const c = await post('/v1/messages/count_tokens', zlib.gzipSync(anthropic('count me')), 'gzip');
    assert.equal(c.status, 200, JSON.stringify(c.json));
    assert.equal(typeof c.json['input_tokens'], 'number');
  });

  test('zstd: decoded where Node has zstd, else 415 naming it', async () => {
    if (zstdCompress) {
      const c = await post('/v1/chat/completions', zstdCompress(chat('zstd one')), 'zstd');
      assert.equal(c.status, 200, JSON.stringify(c.json));
      assert.equal(seen.at(-1), 'zstd one');
    } else {
      const c = await post('/v1/chat/completions', chat('not really zstd'), 'zstd');
      assert.equal(c.status, 415);
      const err = c.json['error'] as Record<string, string>;
      assert.equal(err['code'], 'unsupported_content_encoding');
      assert.match(err['message']!, /zstd/);
      assert.match(err['message']!, /uncompressed/);
    }
  });

  test('a gzip bomb gets 413 naming the limit, in each API shape, and the gateway lives', async () => {
    const bomb = zlib.gzipSync(Buffer.alloc(10 * 1024 * 1024));
    assert.ok(bomb.length < 64 * 1024);
    const c = await post('/v1/chat/completions', bomb, 'gzip');
    assert.equal(c.status, 413);
    const err = c.json['error'] as Record<string, string>;
    assert.equal(err['code'], 'request_too_large');
    assert.match(err['message']!, new RegExp(`server.body_limit_bytes, ${LIMIT} bytes`));
    const m = await post('/v1/messages', bomb, 'gzip');
    assert.equal(m.status, 413);
    assert.equal(m.json['type'], 'error');
    assert.equal((m.json['error'] as Record<string, string>)['type'], 'request_too_large');
    await healthy();
    // and the next request is served
    assert.equal((await post('/v1/chat/completions', zlib.gzipSync(chat('after')), 'gzip')).status, 200);
  });

  test('corrupt data gets 400 saying it could not be decoded', async () => {
    const good = zlib.gzipSync(chat('x'.repeat(2000)));
    const bad = Buffer.concat([good.subarray(0, 20), Buffer.alloc(200, 0xab)]);
    const c = await post('/v1/chat/completions', bad, 'gzip');
    assert.equal(c.status, 400);
    const err = c.json['error'] as Record<string, string>;
    assert.equal(err['code'], 'invalid_body_encoding');
    assert.match(err['message']!, /could not be decoded as gzip/);
    await healthy();
  });

  test('an unknown coding gets 415 naming it', async () => {
    const c = await post('/v1/chat/completions', chat('x'), 'compress-9000');
    assert.equal(c.status, 415);
    const err = c.json['error'] as Record<string, string>;
    assert.equal(err['code'], 'unsupported_content_encoding');
    assert.match(err['message']!, /compress-9000/);
    const m = await post('/v1/messages', anthropic('x'), 'lzma');
    assert.equal(m.status, 415);
    assert.equal(m.json['type'], 'error');
  });
});
