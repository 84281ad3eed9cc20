/** Passthrough routes apply the caller's key limits: requests per minute and concurrency. */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import OpenAI from 'openai';
import { hashKey } from '../../src/auth/keys.js';
import { FakeUpstream } from '../helpers/fake-upstream.js';
import { startGateway, testConfigYaml, type TestGateway } from '../helpers/gateway.js';

const RPM_KEY = 'sk-test-passthrough-rpm-0123456789';
const CONC_KEY = 'sk-test-passthrough-conc-0123456789';
const EMBEDDINGS = {
  object: 'list',
  data: [{ object: 'embedding', index: 0, embedding: [0.1, 0.2] }],
  model: 'text-embedding-3-small',
  usage: { prompt_tokens: 2, total_tokens: 2 },
};

describe('passthrough and key limits', () => {
  const upstream = new FakeUpstream();
  let gw: TestGateway;

  before(async () => {
    await upstream.start();
    const keys = `
  - name: rpm-2
    key_sha256: ${hashKey(RPM_KEY)}
    limits: { rpm: 2 }
  - name: one-at-a-time
    key_sha256: ${hashKey(CONC_KEY)}
    limits: { max_concurrency: 1 }
`;
    gw = await startGateway(`${testConfigYaml(upstream.url).trimEnd()}${keys}\npassthrough:\n  upstream: fake\n`);
  });
  after(async () => {
    await gw?.close();
    await upstream.close();
  });

  test('a 2-RPM key gets two embeddings calls, then 429 with rate-limit headers; the upstream sees two', async () => {
    upstream.on(() => ({ status: 200, body: EMBEDDINGS }));
    upstream.requests.length = 0;
    const client = gw.client({ apiKey: RPM_KEY });
    for (let i = 0; i < 2; i++) {
      const { response } = await client.embeddings.create({ model: 'text-embedding-3-small', input: 'hi' }).withResponse();
      assert.equal(response.headers.get('x-ratelimit-limit-requests'), '2');
    }
    const err = await client.embeddings.create({ model: 'text-embedding-3-small', input: 'hi' }).catch((e: unknown) => e);
    assert.ok(err instanceof OpenAI.RateLimitError, String(err));
    assert.equal(upstream.requests.length, 2);
  });

  test('a key with max_concurrency 1: a second call while the first streams is refused; after it ends, accepted', async () => {
    upstream.requests.length = 0;
    upstream.on(() => ({ status: 200, headers: { 'content-type': 'audio/mpeg' }, steps: [{ delayMs: 400 }, 'audio-bytes'] }));
    const client = gw.client({ apiKey: CONC_KEY });
    const first = fetch(`${gw.url}/v1/audio/speech`, {
      method: 'POST',
      headers: { authorization: `Bearer ${CONC_KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'tts-1', input: 'hello', voice: 'alloy' }),
    }).then(async (r) => ({ status: r.status, body: await r.text() }));
    await new Promise((r) => setTimeout(r, 150));
    const second = await client.embeddings.create({ model: 'text-embedding-3-small', input: 'hi' }).catch((e: unknown) => e);
    assert.ok(second instanceof OpenAI.RateLimitError, String(second));
    assert.deepEqual(await first, { status: 200, body: 'audio-bytes' });
    upstream.on(() => ({ status: 200, body: EMBEDDINGS }));
    // The slot is returned when the first call's connection closes.
    let ok = false;
    for (let i = 0; i < 20 && !ok; i++) {
      ok = await client.embeddings.create({ model: 'text-embedding-3-small', input: 'hi' }).then(
        () => true,
        () => false,
      );
      if (!ok) await new Promise((r) => setTimeout(r, 25));
    }
    assert.ok(ok, 'accepted once the first call ended');
  });
});
