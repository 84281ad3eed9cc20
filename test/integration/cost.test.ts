/**
 * Cost accounting end to end: the logged `cost_usd` and the `x-switchyard-cost-usd` header
 * follow the price table for every recorded response with usage, a reasoning price of its
 * own changes the cost, an aborted stream without usage is counted with the tokenizer,
 * key globs allow and deny models, and spend metrics carry the key's name only.
 */
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { hashKey } from '../../src/auth/keys.js';
import type { FakeUpstream } from '../helpers/fake-upstream.js';
import { FIXTURES, fixture, fixtureJson, replay, sseEvents } from '../helpers/recordings.js';
import { CLIENT_KEY, OTHER_KEY, closeAll, finishedLine, startWithUpstream, testConfigYaml, waitFor, type TestGateway } from '../helpers/gateway.js';
import { metricValue } from '../helpers/metrics-text.js';

const SUFFIX_KEY = 'sk-test-suffix-0123456789abcdef';

interface Price {
  input: number;
  cached_input: number;
  output: number;
  reasoning: number;
}
const GPT_TEST: Price = { input: 2.5, cached_input: 1.25, output: 10, reasoning: 10 };
const GPT_PRICED: Price = { input: 2.5, cached_input: 1.25, output: 10, reasoning: 40 };
const TARGET_OVERRIDE: Price = { input: 3, cached_input: 0.5, output: 6, reasoning: 12 };

function yaml(upstreamUrl: string): string {
  return `
server:
  log_level: info
routing:
  max_attempts: 1
upstreams:
  - id: fake
    provider: openai-compatible
    base_url: ${upstreamUrl}/v1
    api_key: \${TEST_UPSTREAM_KEY}
    timeouts: { connect_ms: 2000, first_byte_ms: 5000, idle_ms: 5000 }
models:
  - name: gpt-test
    price: { input: 2.5, cached_input: 1.25, output: 10 }
    targets:
      - { upstream: fake, model: upstream-model-x }
  - name: gpt-priced
    price: { input: 2.5, cached_input: 1.25, output: 10, reasoning: 40 }
    targets:
      - { upstream: fake, model: upstream-model-x }
  - name: deep-reasoner
    reasoning: true
    price: { input: 1, output: 2 }
    targets:
      - { upstream: fake, model: upstream-reasoner, price: { input: 3, cached_input: 0.5, output: 6, reasoning: 12 } }
keys:
  - name: team-a
    key_sha256: ${hashKey(CLIENT_KEY)}
    models: ["*"]
  - name: team-gpt
    key_sha256: ${hashKey(OTHER_KEY)}
    models: ["gpt-*"]
  - name: team-suffix
    key_sha256: ${hashKey(SUFFIX_KEY)}
    models: ["*-reasoner"]
`;
}

/** The price-table formula, from a raw OpenAI/DeepSeek `usage` object. */
function expectedCost(usage: Record<string, unknown>, p: Price): number {
  const pd = (usage['prompt_tokens_details'] ?? {}) as Record<string, number>;
  const cd = (usage['completion_tokens_details'] ?? {}) as Record<string, number>;
  const input = usage['prompt_tokens'] as number;
  const cached = pd['cached_tokens'] || (usage['prompt_cache_hit_tokens'] as number | undefined) || 0;
  const output = usage['completion_tokens'] as number;
  const reasoning = cd['reasoning_tokens'] ?? 0;
  return ((input - cached) * p.input + cached * p.cached_input + (output - reasoning) * p.output + reasoning * p.reasoning) / 1e6;
}

const close = (got: number, want: number, what: string) => assert.ok(Math.abs(got - want) < 1e-8, `${what}: got ${got}, want ${want}`);

/** The usage of a recorded stream (its last chunk with usage), or null. */
function streamUsage(name: string): Record<string, unknown> | null {
  let usage: Record<string, unknown> | null = null;
  for (const e of sseEvents(name)) {
    const m = /^data: (\{.*\})\s*$/s.exec(e);
    if (!m) continue;
    const chunk = JSON.parse(m[1]!) as { usage?: Record<string, unknown> };
    if (chunk.usage) usage = chunk.usage;
  }
  return usage;
}

// Chat-completions recordings (Anthropic and Responses ones are priced in their own tests).
const withUsage = readdirSync(FIXTURES).filter(
  (f) => /\.(json|sse)$/.test(f) && !/^(anthropic|openai-responses)-/.test(f) && fixture(f).toString('utf8').includes('"usage"'),
);
const JSON_FIXTURES = withUsage.filter((f) => f.endsWith('.json'));
// The mid-stream-error recording carries its usage on the error chunk, which ends the stream.
const SSE_FIXTURES = withUsage.filter((f) => f.endsWith('.sse') && !f.includes('midstream-error'));

async function post(gw: TestGateway, body: unknown, key = CLIENT_KEY): Promise<Response> {
  return fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    body: JSON.stringify(body),
  });
}

describe('cost accounting', () => {
  let upstream: FakeUpstream;
  let gw: TestGateway;

  before(async () => {
    ({ upstream, gw } = await startWithUpstream((url) => yaml(url)));
  });
  after(() => closeAll(gw, upstream));

  test('the fixture list is not empty', () => {
    assert.ok(JSON_FIXTURES.length >= 3, JSON_FIXTURES.join());
    assert.ok(SSE_FIXTURES.length >= 4, SSE_FIXTURES.join());
  });

  for (const name of JSON_FIXTURES) {
    test(`non-stream ${name}: header and log cost follow the price table`, async () => {
      const recorded = fixtureJson(name);
      upstream.on(() => ({ status: 200, body: recorded }));
      const res = await post(gw, { model: 'gpt-test', messages: [{ role: 'user', content: 'hi' }] });
      assert.equal(res.status, 200);
      await res.text();
      const want = expectedCost(recorded['usage'] as Record<string, unknown>, GPT_TEST);
      assert.ok(want > 0);
      const header = res.headers.get('x-switchyard-cost-usd');
      assert.ok(header && /^\d+(\.\d{1,8})?$/.test(header), `header ${header}`);
      close(Number(header), want, 'header');
      const line = await finishedLine(gw, res.headers.get('x-request-id')!);
      close(line['cost_usd'] as number, want, 'cost_usd');
      assert.equal(line['tokens_estimated'], false);
    });
  }

  for (const name of SSE_FIXTURES) {
    test(`stream ${name}: logged cost follows the price table`, async () => {
      const usage = streamUsage(name);
      assert.ok(usage);
      upstream.on(replay(name));
      const res = await post(gw, { model: 'gpt-priced', stream: true, messages: [{ role: 'user', content: 'hi' }] });
      assert.equal(res.status, 200);
      await res.text();
      const line = await finishedLine(gw, res.headers.get('x-request-id')!);
      assert.equal(line['outcome'], 'ok');
      assert.equal(line['tokens_estimated'], false);
      close(line['cost_usd'] as number, expectedCost(usage, GPT_PRICED), 'cost_usd');
    });
  }

  test('a reasoning price different from output changes the cost by reasoning × the difference', async () => {
    const recorded = fixtureJson('openai-chat-o3-mini-reasoning-tokens.json');
    const usage = recorded['usage'] as Record<string, unknown>;
    const reasoning = (usage['completion_tokens_details'] as Record<string, number>)['reasoning_tokens']!;
    assert.ok(reasoning > 0);
    upstream.on(() => ({ status: 200, body: recorded }));
    const cost = async (model: string) => {
      const res = await post(gw, { model, messages: [{ role: 'user', content: 'hi' }] });
      await res.text();
      return Number(res.headers.get('x-switchyard-cost-usd'));
    };
    const plain = await cost('gpt-test');
    const priced = await cost('gpt-priced');
    close(priced - plain, (reasoning * (40 - 10)) / 1e6, 'difference');
    close(priced, expectedCost(usage, GPT_PRICED), 'priced');
  });

  test("a target's price override (reasoning included) prices the request", async () => {
    const recorded = fixtureJson('deepseek-reasoner.json');
    upstream.on(() => ({ status: 200, body: recorded }));
    const res = await post(gw, { model: 'deep-reasoner', messages: [{ role: 'user', content: 'hi' }] });
    await res.text();
    const want = expectedCost(recorded['usage'] as Record<string, unknown>, TARGET_OVERRIDE);
    close(Number(res.headers.get('x-switchyard-cost-usd')), want, 'header');
    close((await finishedLine(gw, res.headers.get('x-request-id')!))['cost_usd'] as number, want, 'cost_usd');
  });

  test('an aborted stream without usage is counted with the tokenizer, marked estimated', async () => {
    upstream.on(replay('openai-chat-stream-text-no-usage-2023.sse', { delayMs: 15 }));
    const logIndex = gw.finished().length;
    const ac = new AbortController();
    let text = '';
    let chunks = 0;
    try {
      const stream = await gw.client().chat.completions.create(
        {
          model: 'gpt-test',
          messages: [
            { role: 'system', content: 'You are terse.' },
            { role: 'user', content: 'Tell me a long story about a lighthouse keeper.' },
          ],
          stream: true,
        },
        { signal: ac.signal },
      );
      for await (const c of stream) {
        text += c.choices[0]?.delta?.content ?? '';
        if (++chunks === 60) ac.abort();
      }
    } catch {
      // the caller's own abort
    }
    const words = text.split(/\s+/).filter(Boolean).length;
    assert.ok(words >= 10, `words received ${words}`);
    const line = await waitFor(() => gw.finished()[logIndex], 3000, 'request log line');
    assert.equal(line['status'], 499);
    assert.equal(line['tokens_estimated'], true);
    const tokens = line['tokens'] as Record<string, number>;
    assert.ok(tokens['output']! >= 0.5 * words && tokens['output']! <= 2 * words, `output ${tokens['output']} for ${words} words`);
    assert.ok(tokens['input']! > 10 && tokens['input']! < 60, `input ${tokens['input']}`);
    assert.equal(tokens['reasoning'], 0);
    close(line['cost_usd'] as number, (tokens['input']! * GPT_TEST.input + tokens['output']! * GPT_TEST.output) / 1e6, 'estimated cost');
  });

  test('key globs: `gpt-*` and `*-reasoner` allow matching models only; /v1/models is filtered', async () => {
    upstream.on(() => ({ status: 200, body: fixtureJson('openai-chat-gpt5.json') }));
    const cases: [string, string, number][] = [
      [OTHER_KEY, 'gpt-test', 200],
      [OTHER_KEY, 'gpt-priced', 200],
      [OTHER_KEY, 'deep-reasoner', 404],
      [SUFFIX_KEY, 'deep-reasoner', 200],
      [SUFFIX_KEY, 'gpt-test', 404],
      [CLIENT_KEY, 'deep-reasoner', 200],
    ];
    for (const [key, model, status] of cases) {
      const res = await post(gw, { model, messages: [{ role: 'user', content: 'hi' }] }, key);
      const body = (await res.json()) as { error?: { code?: string } };
      assert.equal(res.status, status, `${model}`);
      if (status === 404) assert.equal(body.error?.code, 'model_not_found');
    }
    const list = async (key: string) => {
      const res = await fetch(`${gw.url}/v1/models`, { headers: { authorization: `Bearer ${key}` } });
      return ((await res.json()) as { data: { id: string }[] }).data.map((m) => m.id).sort();
    };
    assert.deepEqual(await list(OTHER_KEY), ['gpt-priced', 'gpt-test']);
    assert.deepEqual(await list(SUFFIX_KEY), ['deep-reasoner']);
    assert.deepEqual(await list(CLIENT_KEY), ['deep-reasoner', 'gpt-priced', 'gpt-test']);
    const one = await fetch(`${gw.url}/v1/models/deep-reasoner`, { headers: { authorization: `Bearer ${OTHER_KEY}` } });
    assert.equal(one.status, 404);
  });

  test('spend metrics carry the key name, never the key', async () => {
    const recorded = fixtureJson('openai-chat-gpt5.json');
    upstream.on(() => ({ status: 200, body: recorded }));
    const before = await gw.metricsText();
    const spendBefore = metricValue(before, 'switchyard_spend_usd_total', { key: 'team-gpt', model: 'gpt-test' }) ?? 0;
    const outBefore = metricValue(before, 'switchyard_key_tokens_total', { key: 'team-gpt', kind: 'output' }) ?? 0;
    const res = await post(gw, { model: 'gpt-test', messages: [{ role: 'user', content: 'hi' }] }, OTHER_KEY);
    await res.text();
    await finishedLine(gw, res.headers.get('x-request-id')!);
    const text = await gw.metricsText();
    const usage = recorded['usage'] as Record<string, number>;
    close((metricValue(text, 'switchyard_spend_usd_total', { key: 'team-gpt', model: 'gpt-test' }) ?? 0) - spendBefore, expectedCost(usage, GPT_TEST), 'spend');
    assert.equal((metricValue(text, 'switchyard_key_tokens_total', { key: 'team-gpt', kind: 'output' }) ?? 0) - outBefore, usage['completion_tokens']);
    assert.ok((metricValue(text, 'switchyard_spend_usd_total', { key: 'team-a', model: 'gpt-test' }) ?? 0) > 0);
    for (const secret of [CLIENT_KEY, OTHER_KEY, SUFFIX_KEY, hashKey(CLIENT_KEY), hashKey(OTHER_KEY)]) assert.ok(!text.includes(secret), 'a key in /metrics');
    for (const line of text.split('\n').filter((l) => /^switchyard_(spend_usd|key_tokens)_total\{/.test(l))) {
      assert.match(line, /key="(team-a|team-gpt|team-suffix)"/);
    }
  });
});

describe('usage that is not a count', () => {
  test('a negative or string token count is not booked as 0 tokens and $0: the call is counted by the tokenizer, marked estimated', async () => {
    const { upstream, gw } = await startWithUpstream((url) => testConfigYaml(url));
    try {
      const answer = fixtureJson('openai-chat-gpt5.json') as Record<string, unknown>;
      for (const usage of [
        { prompt_tokens: -5, completion_tokens: 12, total_tokens: 7 },
        { prompt_tokens: 20, completion_tokens: '12', total_tokens: 32 },
      ]) {
        upstream.on(() => ({ status: 200, body: { ...answer, usage } }));
        const res = await fetch(`${gw.url}/v1/chat/completions`, {
          method: 'POST',
          headers: { authorization: `Bearer ${CLIENT_KEY}`, 'content-type': 'application/json' },
          body: JSON.stringify({ model: 'gpt-test', messages: [{ role: 'user', content: 'Count the words in this sentence for me, please.' }] }),
        });
        assert.equal(res.status, 200);
        const line = await finishedLine(gw, res.headers.get('x-request-id')!);
        assert.equal(line['tokens_estimated'], true, JSON.stringify(usage));
        const tokens = line['tokens'] as { input: number; output: number };
        assert.ok(tokens.input > 0 && tokens.output > 0, JSON.stringify(tokens));
        assert.ok(Number(line['cost_usd']) > 0);
      }
    } finally {
      await closeAll(gw, upstream);
    }
  });
});
