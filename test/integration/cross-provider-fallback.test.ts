/**
 * Routing across providers: a burst of streaming calls to an OpenAI-compatible model whose
 * account starts throttling mid-burst (429) falls back to a Claude model on an `anthropic`
 * upstream; every client gets a complete OpenAI-style stream, the translated ones from the
 * Anthropic recording.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { hashKey } from '../../src/auth/keys.js';
import { FakeUpstream } from '../helpers/fake-upstream.js';
import { CLIENT_KEY, startGateway, type TestGateway } from '../helpers/gateway.js';
import { anthropicPayloads, fixture, replay, replayAnthropic } from '../helpers/recordings.js';

const CLAUDE = 'anthropic-messages-stream-text.chunks.jsonl';
const OPENAI = 'openai-chat-stream-text-no-usage-2023.sse';

function yaml(openaiUrl: string, claudeUrl: string): string {
  return `
routing:
  max_attempts: 3
  backoff_base_ms: 0
  backoff_cap_ms: 0
  retry_after_cap_ms: 0
  retry_budget: { ratio: 1, min_retries: 50 }
upstreams:
  - id: oai
    provider: openai-compatible
    base_url: ${openaiUrl}/v1
    api_key: \${TEST_UPSTREAM_KEY}
  - id: claude
    provider: anthropic
    base_url: ${claudeUrl}/v1
    api_key: \${TEST_UPSTREAM_KEY}
models:
  - name: gpt-codex
    reasoning: true
    capabilities: { max_tokens_field: max_completion_tokens }
    price: { input: 1.25, output: 10 }
    fallbacks: [claude-sonnet]
    targets:
      - { upstream: oai, model: gpt-5.5-codex }
  - name: claude-sonnet
    reasoning: true
    price: { input: 3, cached_input: 0.3, output: 15 }
    targets:
      - { upstream: claude, model: claude-sonnet-4-6 }
keys:
  - name: team-a
    key_sha256: ${hashKey(CLIENT_KEY)}
`;
}

describe('fallback from an OpenAI-compatible model to an Anthropic one in a burst', () => {
  const oai = new FakeUpstream();
  const claude = new FakeUpstream();
  let gw: TestGateway;

  before(async () => {
    await oai.start();
    await claude.start();
    gw = await startGateway(yaml(oai.url, claude.url));
  });
  after(async () => {
    await gw?.close();
    await oai.close();
    await claude.close();
  });

  test('8 concurrent streams: the first 3 served by the OpenAI account, the throttled rest by Claude, all complete', async () => {
    const rateLimited = {
      status: 429,
      headers: { 'retry-after': '0' },
      body: JSON.parse(fixture('openai-error-429-rate-limit-exceeded.json').toString('utf8')) as unknown,
    };
    const ok = replay(OPENAI, { delayMs: 20 });
    oai.on((req, i) => (i < 3 ? ok(req) : rateLimited));
    claude.on(replayAnthropic(CLAUDE, { delayMs: 5 }));

    const claudeText = anthropicPayloads(CLAUDE)
      .filter((p) => p['type'] === 'content_block_delta')
      .map((p) => (p['delta'] as { text?: string }).text ?? '')
      .join('');
    const client = gw.client();
    const results = await Promise.all(
      Array.from({ length: 8 }, async () => {
        const { data: stream, response } = await client.chat.completions
          .create({ model: 'gpt-codex', stream: true, max_tokens: 20000, reasoning_effort: 'high', messages: [{ role: 'user', content: 'refactor this' }] })
          .withResponse();
        let text = '';
        let finish: string | null = null;
        for await (const c of stream) {
          text += c.choices[0]?.delta?.content ?? '';
          finish = c.choices[0]?.finish_reason ?? finish;
        }
        return { text, finish, upstream: response.headers.get('x-switchyard-upstream'), fallback: response.headers.get('x-switchyard-fallback') };
      }),
    );
    const viaClaude = results.filter((r) => r.upstream === 'claude');
    const viaOai = results.filter((r) => r.upstream === 'oai');
    assert.equal(viaOai.length, 3);
    assert.equal(viaClaude.length, 5);
    for (const r of viaClaude) {
      assert.equal(r.text, claudeText);
      assert.equal(r.finish, 'stop');
      assert.match(r.fallback ?? '', /gpt-codex->claude-sonnet/);
    }
    for (const r of viaOai) {
      assert.ok(r.text.length > 0);
      assert.equal(r.fallback, null);
    }
    // Each Claude call got a translated body: max_completion_tokens -> max_tokens, effort -> thinking.
    assert.equal(claude.requests.length, 5);
    for (const req of claude.requests) {
      assert.equal(req.url, '/v1/messages');
      assert.equal(req.json?.['model'], 'claude-sonnet-4-6');
      assert.ok(typeof req.json?.['max_tokens'] === 'number');
      assert.equal((req.json?.['thinking'] as { type: string }).type, 'enabled');
    }
    // The OpenAI account saw max_completion_tokens (its capability), never max_tokens.
    for (const req of oai.requests) {
      assert.equal(req.json?.['max_completion_tokens'], 20000);
      assert.equal(req.json?.['max_tokens'], undefined);
    }
    const lines = gw.finished();
    assert.equal(lines.filter((l) => l['upstream'] === 'claude' && l['status'] === 200).length, 5);
  });
});
