/**
 * A passthrough route (`/v1/embeddings`, `/v1/audio/*` …) whose upstream is not there says
 * why in its OpenAI-shaped 404: the route exists, no passthrough upstream is configured (or
 * the one named is off), and the config field to set. An unknown `/v1` path keeps the plain
 * `Unknown request URL`.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { FakeUpstream } from '../helpers/fake-upstream.js';
import { CLIENT_KEY, closeAll, startGateway, testConfigYaml, type TestGateway } from '../helpers/gateway.js';

interface OpenAIError {
  message: string;
  type: string;
  param: string | null;
  code: string | null;
}

async function post(gw: TestGateway, path: string): Promise<{ status: number; error: OpenAIError }> {
  const res = await fetch(`${gw.url}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${CLIENT_KEY}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'text-embedding-3-small', input: 'x' }),
  });
  return { status: res.status, error: ((await res.json()) as { error: OpenAIError }).error };
}

describe('passthrough routes with no passthrough upstream', () => {
  const upstream = new FakeUpstream();
  let gw: TestGateway;
  before(async () => {
    await upstream.start();
    gw = await startGateway(testConfigYaml(upstream.url));
  });
  after(() => closeAll(gw, upstream));

  for (const path of ['/v1/embeddings', '/v1/audio/speech', '/v1/moderations']) {
    test(`${path}: 404 unknown_url saying the route exists and naming passthrough.upstream`, async () => {
      const { status, error } = await post(gw, path);
      assert.equal(status, 404);
      assert.equal(error.type, 'invalid_request_error');
      assert.equal(error.code, 'unknown_url');
      assert.ok(error.message.startsWith(`POST ${path} is proxied to the passthrough upstream, and none is configured`), error.message);
      assert.match(error.message, /set passthrough\.upstream/);
      assert.equal(upstream.requests.length, 0);
    });
  }

  test('an unknown /v1 path keeps the plain 404', async () => {
    const { status, error } = await post(gw, '/v1/nothing-here');
    assert.equal(status, 404);
    assert.doesNotMatch(error.message, /passthrough/);
  });
});

describe('a passthrough upstream that is off (its key unset)', () => {
  const upstream = new FakeUpstream();
  let gw: TestGateway;
  before(async () => {
    await upstream.start();
    gw = await startGateway(`${testConfigYaml(upstream.url)}\npassthrough:\n  upstream: fake\n`, {});
  });
  after(() => closeAll(gw, upstream));

  test('404 naming the upstream and why it is off', async () => {
    const { status, error } = await post(gw, '/v1/embeddings');
    assert.equal(status, 404);
    assert.equal(error.code, 'unknown_url');
    assert.match(error.message, /passthrough\.upstream "fake" is off \(TEST_UPSTREAM_KEY is not set\)/);
    assert.equal(upstream.requests.length, 0);
  });
});
