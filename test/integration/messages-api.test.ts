/**
 * `POST /v1/messages` for Anthropic-SDK clients: the official `@anthropic-ai/sdk` through
 * Switchyard (its key in `x-api-key`) to a fake Anthropic API replaying recordings.
 */
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import { hashKey } from '../../src/auth/keys.js';
import { FakeUpstream } from '../helpers/fake-upstream.js';
import { CLIENT_KEY, OTHER_KEY, startGateway, UPSTREAM_KEY, waitFor, type TestGateway } from '../helpers/gateway.js';
import { anthropicPayloads, fixtureJson, replayAnthropic } from '../helpers/recordings.js';

function yaml(claudeUrl: string, openaiUrl: string): string {
  return `
routing:
  max_attempts: 1
upstreams:
  - id: claude
    provider: anthropic
    base_url: ${claudeUrl}/v1
    api_key: \${TEST_UPSTREAM_KEY}
    timeouts: { connect_ms: 2000, first_byte_ms: 5000, idle_ms: 5000 }
  - id: oai
    provider: openai-compatible
    base_url: ${openaiUrl}/v1
    api_key: \${TEST_UPSTREAM_KEY}
  - id: oai-responses
    provider: openai-compatible
    base_url: ${openaiUrl}/v1
    api_key: \${TEST_UPSTREAM_KEY}
    options: { chat: false }
models:
  - name: claude-test
    reasoning: true
    price: { input: 3, cached_input: 0.3, cache_write: 3.75, output: 15 }
    targets:
      - { upstream: claude, model: claude-upstream-id }
  - name: gpt-only
    price: { input: 1, output: 1 }
    targets:
      - { upstream: oai, model: gpt-x }
  - name: responses-only
    price: { input: 1, output: 1 }
    targets:
      - { upstream: oai-responses, model: gpt-x-codex }
keys:
  - name: team-a
    key_sha256: ${hashKey(CLIENT_KEY)}
  - name: team-limited
    key_sha256: ${hashKey(OTHER_KEY)}
    models: ["gpt-only"]
`;
}

describe('/v1/messages with the Anthropic SDK', () => {
  const claude = new FakeUpstream();
  const openai = new FakeUpstream();
  let gw: TestGateway;
  let client: Anthropic;

  before(async () => {
    await claude.start();
    await openai.start();
    gw = await startGateway(yaml(claude.url, openai.url));
    client = new Anthropic({ apiKey: CLIENT_KEY, baseURL: gw.url, maxRetries: 0 });
  });
  after(async () => {
    await gw?.close();
    await claude.close();
    await openai.close();
  });
  beforeEach(() => {
    claude.requests.length = 0;
  });

  test('non-stream: the recorded message comes back as sent; the upstream sees its own key and model id', async () => {
    const rec = fixtureJson('anthropic-messages-parallel-tool-use.json');
    claude.on(() => ({ status: 200, body: rec }));
    const msg = await client.messages.create({ model: 'claude-test', max_tokens: 100, messages: [{ role: 'user', content: 'hi' }] });
    assert.deepEqual(msg.content, rec['content']);
    assert.deepEqual(msg.usage, rec['usage']);
    const sent = claude.requests[0]!;
    assert.equal(sent.url, '/v1/messages');
    assert.equal(sent.headers['x-api-key'], UPSTREAM_KEY);
    assert.ok(sent.headers['anthropic-version']);
    assert.equal(sent.json?.['model'], 'claude-upstream-id');
    assert.equal(sent.json?.['max_tokens'], 100);
    const line = await waitFor(() => gw.finished().find((l) => l['status'] === 200 && l['model'] === 'claude-test'), 2000, 'log line');
    const usage = rec['usage'] as { input_tokens: number; output_tokens: number };
    assert.equal((line['tokens'] as { input: number }).input, usage.input_tokens);
    assert.equal((line['tokens'] as { output: number }).output, usage.output_tokens);
  });

  test('cache reads and writes reported by Anthropic are priced apart in the request record', async () => {
    const rec = fixtureJson('anthropic-messages-text.json');
    const usage = { ...(rec['usage'] as object), input_tokens: 100, cache_read_input_tokens: 2000, cache_creation_input_tokens: 1000, output_tokens: 50 };
    claude.on(() => ({ status: 200, body: { ...rec, usage } }));
    const { response } = await client.messages
      .create({ model: 'claude-test', max_tokens: 100, messages: [{ role: 'user', content: 'cache me' }] })
      .withResponse();
    const id = response.headers.get('x-request-id');
    const line = await waitFor(() => gw.finished().find((l) => l['request_id'] === id), 2000, 'log line');
    assert.deepEqual(line['tokens'], { input: 3100, cached: 2000, output: 50, reasoning: 0, cache_write: 1000 });
    const want = (100 * 3 + 2000 * 0.3 + 1000 * 3.75 + 50 * 15) / 1e6;
    assert.ok(Math.abs((line['cost_usd'] as number) - want) < 1e-9, `${String(line['cost_usd'])} vs ${want}`);
  });

  for (const name of ['anthropic-messages-stream-thinking.sse', 'anthropic-messages-stream-tool-use.sse', 'anthropic-messages-stream-text.chunks.jsonl']) {
    test(`stream ${name}: messages.stream().finalMessage() assembles what was recorded, usage logged`, async () => {
      claude.on(replayAnthropic(name));
      const payloads = anthropicPayloads(name);
      const start = payloads.find((p) => p['type'] === 'message_start')!['message'] as { id: string; usage: { input_tokens: number } };
      const delta = payloads.filter((p) => p['type'] === 'message_delta').at(-1)!;
      const text = payloads
        .filter((p) => p['type'] === 'content_block_delta' && (p['delta'] as { type: string }).type === 'text_delta')
        .map((p) => (p['delta'] as { text: string }).text)
        .join('');
      const stream = client.messages.stream({ model: 'claude-test', max_tokens: 2000, messages: [{ role: 'user', content: 'hi' }] });
      const final = await stream.finalMessage();
      assert.equal(final.id, start.id);
      const gotText = final.content
        .filter((b) => b.type === 'text')
        .map((b) => (b as { text: string }).text)
        .join('');
      assert.equal(gotText, text);
      assert.equal(final.stop_reason, (delta['delta'] as { stop_reason: string }).stop_reason);
      assert.equal(final.usage.output_tokens, (delta['usage'] as { output_tokens: number }).output_tokens);
      assert.equal(claude.requests[0]!.json?.['stream'], true);
      const line = await waitFor(
        () =>
          gw
            .finished()
            .find(
              (l) =>
                l['request_id'] === stream.request_id ||
                (l['stream'] === true && l['model'] === 'claude-test' && (l['tokens'] as { output: number }).output === final.usage.output_tokens),
            ),
        2000,
        'log line',
      );
      assert.equal((line['tokens'] as { output: number }).output, final.usage.output_tokens);
      assert.ok((line['tokens'] as { input: number }).input >= start.usage.input_tokens);
    });
  }

  test('errors come back in Anthropic shape and raise the SDK error classes', async () => {
    // Unknown model: the gateway's own 404.
    const notFound = await client.messages
      .create({ model: 'no-such-model', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] })
      .catch((e: unknown) => e);
    assert.ok(notFound instanceof Anthropic.NotFoundError, String(notFound));
    assert.equal((notFound as unknown as { error: { type: string } }).error.type, 'error');
    assert.equal((notFound as unknown as { error: { error: { type: string } } }).error.error.type, 'not_found_error');

    // Bad key: 401 authentication_error, upstream never called.
    const bad = new Anthropic({ apiKey: 'sk-wrong', baseURL: gw.url, maxRetries: 0 });
    const unauth = await bad.messages.create({ model: 'claude-test', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] }).catch((e: unknown) => e);
    assert.ok(unauth instanceof Anthropic.AuthenticationError, String(unauth));
    assert.equal((unauth as unknown as { error: { error: { type: string } } }).error.error.type, 'authentication_error');

    // An upstream 400 is relayed with its Anthropic type and message.
    const rec = fixtureJson('anthropic-error-400-invalid-request.json') as { error: { message: string; type: string } };
    claude.on(() => ({ status: 400, body: rec }));
    const badReq = await client.messages.create({ model: 'claude-test', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] }).catch((e: unknown) => e);
    assert.ok(badReq instanceof Anthropic.BadRequestError, String(badReq));
    assert.equal((badReq as unknown as { error: { error: { type: string; message: string } } }).error.error.type, rec.error.type);
    assert.equal((badReq as unknown as { error: { error: { message: string } } }).error.error.message, rec.error.message);
    assert.equal(claude.requests.length, 1);

    // Missing messages: schema error, Anthropic-shaped.
    const invalid = await fetch(`${gw.url}/v1/messages`, {
      method: 'POST',
      headers: { 'x-api-key': CLIENT_KEY, 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
      body: JSON.stringify({ model: 'claude-test', max_tokens: 10 }),
    });
    assert.equal(invalid.status, 400);
    const body = (await invalid.json()) as { type: string; error: { type: string; message: string } };
    assert.equal(body.type, 'error');
    assert.equal(body.error.type, 'invalid_request_error');

    // A system that is neither text nor blocks, a negative thinking budget: 400s naming the field, nothing sent.
    const before = claude.requests.length;
    for (const [extra, field] of [
      [{ system: 42 }, 'system'],
      [{ thinking: { type: 'enabled', budget_tokens: -5 } }, 'budget_tokens'],
    ] as const) {
      const r = await fetch(`${gw.url}/v1/messages`, {
        method: 'POST',
        headers: { 'x-api-key': CLIENT_KEY, 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
        body: JSON.stringify({ model: 'claude-test', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }], ...extra }),
      });
      assert.equal(r.status, 400, field);
      const e = (await r.json()) as { type: string; error: { type: string; message: string } };
      assert.equal(e.error.type, 'invalid_request_error');
      assert.match(e.error.message, new RegExp(field), e.error.message);
    }
    assert.equal(claude.requests.length, before, 'nothing reached the upstream');
  });

  test('a model with only a chat-completions upstream is served on /v1/messages through the bridge; key allow-lists apply', async () => {
    openai.requests.length = 0;
    openai.on(() => ({ status: 200, body: fixtureJson('openai-chat-gpt5.json') }));
    const bridged = await client.messages.create({ model: 'gpt-only', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] });
    assert.equal(bridged.type, 'message');
    assert.equal(bridged.content[0]?.type, 'text');
    assert.equal(openai.requests[0]?.url, '/v1/chat/completions');
    const limited = new Anthropic({ apiKey: OTHER_KEY, baseURL: gw.url, maxRetries: 0 });
    const e2 = await limited.messages.create({ model: 'claude-test', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] }).catch((e: unknown) => e);
    assert.ok(e2 instanceof Anthropic.NotFoundError, String(e2));
    assert.equal(claude.requests.length, 0);
  });

  test("count_tokens: an Anthropic account counts (its model id, the client's betas); a model without one gets an estimate marked estimated; the key's models apply", async () => {
    claude.on((req) => (req.url.endsWith('/messages/count_tokens') ? { status: 200, body: { input_tokens: 42 } } : { status: 500, body: {} }));
    const counted = await client.messages
      .countTokens({ model: 'claude-test', messages: [{ role: 'user', content: 'hi' }] }, { headers: { 'anthropic-beta': 'token-counting-2024-11-01' } })
      .withResponse();
    assert.equal(counted.data.input_tokens, 42);
    assert.equal(counted.response.headers.get('x-switchyard-estimated'), null);
    const sent = claude.requests.at(-1)!;
    assert.equal(sent.url, '/v1/messages/count_tokens');
    assert.equal(sent.json?.['model'], 'claude-upstream-id');
    assert.equal(sent.headers['x-api-key'], UPSTREAM_KEY);
    assert.match(String(sent.headers['anthropic-beta']), /token-counting-2024-11-01/);
    const short = await client.messages.countTokens({ model: 'gpt-only', messages: [{ role: 'user', content: 'hi' }] }).withResponse();
    assert.equal(short.response.headers.get('x-switchyard-estimated'), 'true');
    const long = await client.messages.countTokens({ model: 'gpt-only', system: 'Be brief.', messages: [{ role: 'user', content: 'hi '.repeat(500) }] });
    assert.ok(short.data.input_tokens > 0 && long.input_tokens > short.data.input_tokens + 400, `${short.data.input_tokens} then ${long.input_tokens}`);
    const limited = new Anthropic({ apiKey: OTHER_KEY, baseURL: gw.url, maxRetries: 0 });
    const before = claude.requests.length;
    const err = await limited.messages.countTokens({ model: 'claude-test', messages: [{ role: 'user', content: 'hi' }] }).catch((e: unknown) => e);
    assert.ok(err instanceof Anthropic.NotFoundError, String(err));
    assert.equal(claude.requests.length, before);
  });

  test('an error event mid-stream reaches the SDK as an error after the text so far', async () => {
    const events = anthropicPayloads('anthropic-messages-stream-text.chunks.jsonl').slice(0, 5);
    const steps = events.map((p) => `event: ${String(p['type'])}\ndata: ${JSON.stringify(p)}\n\n`);
    steps.push(`event: error\ndata: ${JSON.stringify({ type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } })}\n\n`);
    claude.on(() => ({ status: 200, headers: { 'content-type': 'text/event-stream' }, steps }));
    const stream = client.messages.stream({ model: 'claude-test', max_tokens: 100, messages: [{ role: 'user', content: 'hi' }] });
    let text = '';
    stream.on('text', (t) => (text += t));
    const err = await stream.finalMessage().then(
      () => null,
      (e: unknown) => e,
    );
    assert.ok(err instanceof Anthropic.APIError, String(err));
    assert.match((err as Error).message, /Overloaded/);
    assert.ok(text.length > 0);
  });
});
