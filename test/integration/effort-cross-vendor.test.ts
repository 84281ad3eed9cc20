/**
 * A deep call's reasoning effort crossing vendors (issue 32), end to end against local fake
 * upstreams: a chat call at `reasoning_effort: high` that fails over (429) or sheds (its only
 * OpenAI-style account hot) to a Claude model reaches the Anthropic upstream with the effort
 * table's `thinking.budget_tokens` (src/apis/effort.ts), a small cap raised to Anthropic's
 * minimum; and a Messages client's `thinking.budget_tokens` reaches an OpenAI-style account as
 * the table's nearest `reasoning_effort`.
 */
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import { MIN_THINKING_BUDGET, thinkingBudgetOf } from '../../src/apis/effort.js';
import { hashKey } from '../../src/auth/keys.js';
import { deferred, type Deferred } from '../helpers/accounts.js';
import { FakeUpstream } from '../helpers/fake-upstream.js';
import { ok } from '../helpers/failover.js';
import { CLIENT_KEY, closeAll, postChat, startGateway, waitFor, type TestGateway } from '../helpers/gateway.js';
import { fixtureJson } from '../helpers/recordings.js';

const DEFAULT_MAX_TOKENS = 1000;

function yaml(oai: string, claude: string): string {
  return `
server: { log_level: warn }
routing: { max_attempts: 2, backoff_base_ms: 0, backoff_cap_ms: 0, retry_after_cap_ms: 0 }
upstreams:
  - { id: oai, provider: openai-compatible, base_url: "${oai}/v1", api_key: "\${TEST_UPSTREAM_KEY}", capacity: { start: 1, ceiling: 1 } }
  - id: claude
    provider: anthropic
    base_url: "${claude}/v1"
    api_key: "\${TEST_UPSTREAM_KEY}"
    options: { default_max_tokens: ${DEFAULT_MAX_TOKENS} }
models:
  - name: gpt-deep
    reasoning: true
    price: { input: 1, output: 1 }
    shed: { wait_ms: 0 }
    fallbacks: [claude-deep]
    targets: [{ upstream: oai, model: gpt-5.5 }]
  - name: claude-deep
    reasoning: true
    price: { input: 1, output: 1 }
    targets: [{ upstream: claude, model: claude-sonnet-4-6 }]
keys:
  - { name: team-a, key_sha256: ${hashKey(CLIENT_KEY)} }
`;
}

describe('reasoning effort across vendors', () => {
  const oai = new FakeUpstream();
  const claude = new FakeUpstream();
  let gw: TestGateway;
  let gate: Deferred;
  before(async () => {
    await oai.start();
    await claude.start();
    claude.on(() => ({ status: 200, body: fixtureJson('anthropic-messages-text.json') }));
    gw = await startGateway(yaml(oai.url, claude.url));
  });
  beforeEach(() => {
    oai.requests.length = 0;
    claude.requests.length = 0;
  });
  after(() => closeAll(gw, oai, claude));

  const thinkingOf = (i: number) => claude.requests[i]!.json!['thinking'];

  test('failover: a deep chat call at high that gets 429 reaches Claude with the table budget for high', async () => {
    oai.on(() => ({ status: 429, headers: { 'retry-after': '0' }, body: fixtureJson('openai-error-429-rate-limit-exceeded.json') }));
    const r = await postChat(gw, { model: 'gpt-deep', reasoning_effort: 'high', messages: [{ role: 'user', content: 'think' }] });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.headers.get('x-switchyard-upstream'), 'claude');
    assert.equal(oai.requests[0]!.json!['reasoning_effort'], 'high');
    const high = thinkingBudgetOf('high')!;
    assert.equal(high, 16384);
    assert.deepEqual(thinkingOf(0), { type: 'enabled', budget_tokens: high });
    assert.equal(claude.requests[0]!.json!['max_tokens'], high + DEFAULT_MAX_TOKENS);
  });

  test("failover with a cap under Anthropic's minimum: the budget is raised to 1024 and max_tokens above it", async () => {
    oai.on(() => ({ status: 429, headers: { 'retry-after': '0' }, body: fixtureJson('openai-error-429-rate-limit-exceeded.json') }));
    const r = await postChat(gw, { model: 'gpt-deep', reasoning_effort: 'high', max_tokens: 300, messages: [{ role: 'user', content: 'think' }] });
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(thinkingOf(0), { type: 'enabled', budget_tokens: MIN_THINKING_BUDGET });
    assert.equal(claude.requests[0]!.json!['max_tokens'], MIN_THINKING_BUDGET + 1);
  });

  test('shed: with the OpenAI account hot, a second deep call moves to Claude with the table budget', async () => {
    gate = deferred();
    oai.on(async () => {
      await gate.promise;
      return ok('from oai');
    });
    const held = postChat(gw, { model: 'gpt-deep', reasoning_effort: 'high', messages: [{ role: 'user', content: 'hold' }] });
    await waitFor(() => oai.requests.length === 1, 3_000, 'the first deep call to reach oai');
    const r = await postChat(gw, { model: 'gpt-deep', reasoning_effort: 'high', messages: [{ role: 'user', content: 'think' }] });
    gate.resolve();
    assert.equal((await held).status, 200);
    assert.equal(r.status, 200, r.text);
    assert.match(r.headers.get('x-switchyard-shed') ?? '', /gpt-deep->claude-deep/);
    assert.deepEqual(thinkingOf(0), { type: 'enabled', budget_tokens: thinkingBudgetOf('high') });
  });

  test("the other way: a Messages client's budget_tokens reaches the OpenAI account as the nearest reasoning_effort", async () => {
    oai.on(() => ok('ok'));
    const sent: unknown[] = [];
    for (const budget_tokens of [1024, 10_000, 20_000, 32_000]) {
      const res = await fetch(`${gw.url}/v1/messages`, {
        method: 'POST',
        headers: { 'x-api-key': CLIENT_KEY, 'anthropic-version': '2023-06-01', 'content-type': 'application/json' },
        body: JSON.stringify({
          model: 'gpt-deep',
          max_tokens: 40_000,
          thinking: { type: 'enabled', budget_tokens },
          messages: [{ role: 'user', content: 'think' }],
        }),
      });
      assert.equal(res.status, 200, await res.text());
      sent.push(oai.requests.at(-1)!.json!['reasoning_effort']);
    }
    assert.deepEqual(sent, ['minimal', 'medium', 'high', 'high'], 'xhigh (32000) is sent to chat as high');
  });
});
