/**
 * A model id over 256 characters is refused with 400 in the client's API shape (OpenAI's
 * `string_above_max_length` on Chat Completions and Responses, Anthropic's
 * `invalid_request_error` on Messages and count_tokens), naming the bound, before any alias
 * or glob is looked at: here a `*` alias would otherwise send it to the upstream. An id of
 * exactly 256 characters still goes through the alias.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { hashKey } from '../../src/auth/keys.js';
import { FakeUpstream } from '../helpers/fake-upstream.js';
import { CLIENT_KEY, closeAll, startGateway, type TestGateway } from '../helpers/gateway.js';

const ROUTES: { path: string; shape: 'openai' | 'anthropic'; body: (model: string) => Record<string, unknown> }[] = [
  { path: '/v1/chat/completions', shape: 'openai', body: (model) => ({ model, messages: [{ role: 'user', content: 'hi' }] }) },
  { path: '/v1/responses', shape: 'openai', body: (model) => ({ model, input: 'hi' }) },
  { path: '/v1/messages', shape: 'anthropic', body: (model) => ({ model, max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] }) },
  { path: '/v1/messages/count_tokens', shape: 'anthropic', body: (model) => ({ model, messages: [{ role: 'user', content: 'hi' }] }) },
];

async function post(gw: TestGateway, path: string, body: unknown): Promise<{ status: number; json: Record<string, unknown> }> {
  const res = await fetch(`${gw.url}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${CLIENT_KEY}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: res.status, json: (await res.json()) as Record<string, unknown> };
}

describe('model ids longer than 256 characters', () => {
  const upstream = new FakeUpstream();
  let gw: TestGateway;
  before(async () => {
    await upstream.start();
    upstream.on(() => ({
      status: 200,
      body: {
        id: 'c1',
        object: 'chat.completion',
        created: 1,
        model: 'm',
        choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }],
        usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
      },
    }));
    gw = await startGateway(`
server: { log_level: warn }
routing: { max_attempts: 1 }
upstreams:
  - { id: fake, provider: openai-compatible, base_url: "${upstream.url}/v1", api_key: "\${TEST_UPSTREAM_KEY}" }
models:
  - name: anything
    aliases: ["*"]
    price: { input: 1, output: 1 }
    targets: [{ upstream: fake, model: m }]
keys:
  - { name: t, key_sha256: ${hashKey(CLIENT_KEY)} }
`);
  });
  after(() => closeAll(gw, upstream));

  for (const route of ROUTES) {
    test(`${route.path}: 257 characters get 400 naming the bound, in the ${route.shape} shape; the upstream is not called`, async () => {
      const before = upstream.requests.length;
      const { status, json } = await post(gw, route.path, route.body('m'.repeat(257)));
      assert.equal(status, 400, JSON.stringify(json));
      if (route.shape === 'openai') {
        const error = json['error'] as Record<string, unknown>;
        assert.equal(error['type'], 'invalid_request_error');
        assert.equal(error['code'], 'string_above_max_length');
        assert.equal(error['param'], 'model');
        assert.match(String(error['message']), /maximum length 256\b/);
      } else {
        assert.equal(json['type'], 'error');
        const error = json['error'] as Record<string, unknown>;
        assert.equal(error['type'], 'invalid_request_error');
        assert.match(String(error['message']), /maximum length 256\b/);
      }
      assert.equal(upstream.requests.length, before, 'no upstream call');
    });
  }

  test('256 characters still reach the model through its "*" alias', async () => {
    const { status, json } = await post(gw, '/v1/chat/completions', ROUTES[0]!.body('m'.repeat(256)));
    assert.equal(status, 200, JSON.stringify(json));
  });
});
