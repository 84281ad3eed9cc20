/**
 * Whether and when a client should retry a gateway error, as the official SDKs and the agents
 * read it (`x-should-retry`, `Retry-After`, `retry-after-ms`), in each client API's own error
 * shape: errors retrying cannot heal say `x-should-retry: false` (a bad or missing key, an
 * unknown model, a bad body, a model not on this endpoint, a spent budget); an upstream that
 * keeps failing gets a final answer that names no wait (Codex CLI would sleep out each one
 * on every retry) and, for Messages clients, is no `overloaded_error` (which Claude Code
 * retries whatever `x-should-retry` says).
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import Anthropic from '@anthropic-ai/sdk';
import { hashKey } from '../../src/auth/keys.js';
import { FakeUpstream } from '../helpers/fake-upstream.js';
import { CLIENT_KEY, OTHER_KEY, anthropicConfigYaml, closeAll, startGateway, waitFor, type TestGateway } from '../helpers/gateway.js';

function yaml(claude: string, chat: string): string {
  return `
server: { log_level: info, body_limit_bytes: 4096 }
upstreams:
  - { id: claude, provider: anthropic, base_url: "${claude}/v1", api_key: "\${TEST_UPSTREAM_KEY}", options: { anthropic_version: "2023-06-01", default_max_tokens: 100 } }
  - { id: chat, provider: openai-compatible, base_url: "${chat}/v1", api_key: "\${TEST_UPSTREAM_KEY}" }
models:
  - name: claude-test
    price: { input: 3, output: 15 }
    targets: [{ upstream: claude, model: claude-up }]
  - name: chat-test
    price: { input: 1000000, output: 1000000 }
    targets: [{ upstream: chat, model: chat-up }]
keys:
  - { name: team-a, key_sha256: ${hashKey(CLIENT_KEY)} }
  - { name: tiny-budget, key_sha256: ${hashKey(OTHER_KEY)}, limits: { budget_usd: { amount: 0.01, period: day } } }
`;
}

interface Answer {
  readonly status: number;
  readonly headers: Headers;
  readonly body: Record<string, unknown>;
}

/** POSTs `body` (an object, or raw text) to `path` with `key` (none when null). */
async function post(gw: TestGateway, path: string, body: unknown, key: string | null = CLIENT_KEY): Promise<Answer> {
  const res = await fetch(`${gw.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01', ...(key ? { authorization: `Bearer ${key}` } : {}) },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  return { status: res.status, headers: res.headers, body: (await res.json()) as Record<string, unknown> };
}

const chatBody = { model: 'chat-test', messages: [{ role: 'user', content: 'hi' }] };
const messagesBody = { model: 'claude-test', max_tokens: 10, messages: [{ role: 'user' as const, content: 'hi' }] };

/** The answer is final: `x-should-retry: false`, in `api`'s error shape, with the status given. */
function assertFinal(a: Answer, status: number, api: 'openai' | 'anthropic', what: string): void {
  assert.equal(a.status, status, `${what}: ${JSON.stringify(a.body)}`);
  assert.equal(a.headers.get('x-should-retry'), 'false', `${what}: retrying cannot heal it`);
  if (api === 'anthropic') {
    assert.equal(a.body['type'], 'error', what);
    assert.equal(typeof (a.body['error'] as Record<string, unknown>)['type'], 'string', what);
  } else {
    assert.deepEqual(Object.keys(a.body), ['error'], what);
    assert.equal(typeof (a.body['error'] as Record<string, unknown>)['message'], 'string', what);
  }
}

describe('x-should-retry and Retry-After on the gateway errors', () => {
  const claude = new FakeUpstream();
  const chat = new FakeUpstream();
  let gw: TestGateway;
  before(async () => {
    await claude.start();
    await chat.start();
    gw = await startGateway(yaml(claude.url, chat.url));
  });
  after(() => closeAll(gw, claude, chat));

  test('errors retrying cannot heal: x-should-retry false, in the OpenAI shape on chat and responses, in Anthropic’s on messages', async () => {
    assertFinal(await post(gw, '/v1/chat/completions', chatBody, null), 401, 'openai', 'chat, no key');
    assertFinal(await post(gw, '/v1/chat/completions', chatBody, 'sk-wrong-key-0123456789'), 401, 'openai', 'chat, unknown key');
    assertFinal(await post(gw, '/v1/messages', messagesBody, 'sk-wrong-key-0123456789'), 401, 'anthropic', 'messages, unknown key');
    assertFinal(await post(gw, '/v1/responses', { model: 'chat-test', input: 'hi' }, null), 401, 'openai', 'responses, no key');
    assertFinal(await post(gw, '/v1/chat/completions', { ...chatBody, model: 'no-such-model' }), 404, 'openai', 'chat, unknown model');
    assertFinal(await post(gw, '/v1/messages', { ...messagesBody, model: 'no-such-model' }), 404, 'anthropic', 'messages, unknown model');
    assertFinal(await post(gw, '/v1/chat/completions', { model: 'chat-test' }), 400, 'openai', 'chat, no messages');
    assertFinal(await post(gw, '/v1/messages', { model: 'claude-test', max_tokens: 10 }), 400, 'anthropic', 'messages, no messages');
    assertFinal(await post(gw, '/v1/chat/completions', '{"model":'), 400, 'openai', 'chat, bad JSON');
    assertFinal(
      await post(gw, '/v1/chat/completions', { ...chatBody, messages: [{ role: 'user', content: 'x'.repeat(5000) }] }),
      413,
      'openai',
      'chat, body too large',
    );
    // A compaction is not translated: a model with no Responses account cannot take one (unsupported_api).
    assertFinal(await post(gw, '/v1/responses/compact', { model: 'claude-test', input: 'hi' }), 400, 'openai', 'compaction, model not on this endpoint');
    assert.equal(claude.requests.length + chat.requests.length, 0, 'none reached an upstream');

    // A spent budget: 429 insufficient_quota.
    chat.on(() => ({
      status: 200,
      body: {
        id: 'c',
        object: 'chat.completion',
        created: 1,
        model: 'chat-up',
        choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }],
        usage: { prompt_tokens: 10, completion_tokens: 10, total_tokens: 20 },
      },
    }));
    assert.equal((await post(gw, '/v1/chat/completions', chatBody, OTHER_KEY)).status, 200, 'the first call spends the whole budget');
    const spent = await post(gw, '/v1/chat/completions', chatBody, OTHER_KEY);
    assertFinal(spent, 429, 'openai', 'budget spent');
    assert.equal((spent.body['error'] as Record<string, unknown>)['code'], 'insufficient_quota');
  });

  test('an upstream that keeps answering 503: final answers that name no wait, api_error for Messages clients, and the SDK does not retry them', async () => {
    claude.on((req) => ({
      status: 503,
      body: req.url.startsWith('/v1/messages') ? { type: 'error', error: { type: 'api_error', message: 'Service unavailable (test).' } } : {},
    }));
    const before = claude.requests.length;
    // Past the retry budget (3 retries per 10 s) and into the target's cooldown.
    for (let i = 0; i < 4; i++) {
      const a = await post(gw, '/v1/messages', messagesBody);
      assertFinal(a, 503, 'anthropic', `outage call ${i}`);
      assert.equal(a.headers.get('retry-after'), null, `outage call ${i}: no wait is named on a final 5xx`);
      assert.equal(a.headers.get('retry-after-ms'), null, `outage call ${i}`);
      assert.equal((a.body['error'] as Record<string, unknown>)['type'], 'api_error', `outage call ${i}: not overloaded_error`);
    }
    const upstreamCalls = claude.requests.length - before;
    const logged = gw.finished().length;
    const sdk = new Anthropic({ apiKey: CLIENT_KEY, baseURL: gw.url }); // the SDK's default: 2 retries
    const err = await sdk.messages.create(messagesBody).then(
      () => null,
      (e: unknown) => e,
    );
    assert.ok(err instanceof Anthropic.APIError && err.status === 503, String(err));
    await waitFor(() => gw.finished().length > logged, 3_000, 'the request finished line');
    await sleep(1_500); // an SDK retry would come within its backoff (0.5 s, then 1 s)
    assert.equal(gw.finished().length - logged, 1, 'the SDK sent the request once: it did not retry a final answer');
    assert.ok(upstreamCalls >= 4, `the gateway itself tried the upstream (${upstreamCalls} calls)`);
  });
});

describe('an Anthropic account that keeps answering 529 overloaded', () => {
  test('the final answer to a Messages client is api_error (Claude Code retries overloaded_error whatever x-should-retry says), x-should-retry false', async () => {
    const claude = await new FakeUpstream().start();
    claude.on(() => ({ status: 529, body: { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } } }));
    const gw = await startGateway(anthropicConfigYaml(claude.url, '  max_attempts: 2\n  backoff_base_ms: 1\n  backoff_cap_ms: 1'));
    try {
      const a = await post(gw, '/v1/messages', { model: 'claude-test', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] });
      assert.ok(claude.requests.length >= 1);
      assertFinal(a, a.status, 'anthropic', 'overloaded to the end');
      assert.ok(a.status >= 500, String(a.status));
      assert.equal((a.body['error'] as Record<string, unknown>)['type'], 'api_error');
    } finally {
      await closeAll(gw, claude);
    }
  });
});
