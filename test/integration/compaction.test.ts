/**
 * `POST /v1/responses/compact` is a model call (issue 29: it went to the provider outside the
 * pipeline, so a key over budget got 200, a 2-rpm key got 3 of 3, and no cost was recorded):
 * the key's rpm and budget apply, a failed account fails over to the model's next Responses
 * account, the answer carries its cost, and the `request finished` line has the usage and
 * cost of the upstream's answer. Driven with the `openai` SDK's `responses.compact`.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import OpenAI from 'openai';
import { hashKey } from '../../src/auth/keys.js';
import { FakeUpstream, type ReceivedRequest, type ScriptedReply } from '../helpers/fake-upstream.js';
import { CLIENT_KEY, closeAll, finishedLine, startGateway, type TestGateway } from '../helpers/gateway.js';

const RPM_KEY = 'sk-test-compact-rpm-0123456789abcdef';
const BUDGET_KEY = 'sk-test-compact-budget-0123456789ab';
const PRICE = { input: 1.25, output: 10 };

/** OpenAI's example answer of "Compact a response" (OpenAPI spec, fixtures/openai-openapi.yaml, `/responses/compact`). */
const COMPACTED = {
  id: 'resp_001',
  object: 'response.compaction',
  created_at: 1764967971,
  output: [
    {
      id: 'msg_000',
      type: 'message',
      status: 'completed',
      content: [{ type: 'input_text', text: 'Create a simple landing page for a dog petting cafe.' }],
      role: 'user',
    },
    { id: 'cmp_001', type: 'compaction', encrypted_content: 'gAAAAABpM0Yj-...=' },
  ],
  usage: {
    input_tokens: 139,
    input_tokens_details: { cached_tokens: 0, cache_write_tokens: 0 },
    output_tokens: 438,
    output_tokens_details: { reasoning_tokens: 64 },
    total_tokens: 577,
  },
};
const COST = (139 * PRICE.input + 438 * PRICE.output) / 1e6;
const INPUT: OpenAI.Responses.ResponseInputItem[] = [
  { role: 'user', content: 'Create a simple landing page for a dog petting cafe.' },
  {
    id: 'msg_001',
    type: 'message',
    status: 'completed',
    role: 'assistant',
    content: [{ type: 'output_text', annotations: [], text: 'Below is a single file landing page.' }],
  },
];

const compacts = (r: ReceivedRequest): boolean => r.url === '/v1/responses/compact';

function yaml(a: string, b: string): string {
  return `
routing:
  max_attempts: 2
upstreams:
  - { id: resp-a, provider: openai-compatible, base_url: "${a}/v1", api_key: "\${TEST_UPSTREAM_KEY}", options: { responses: true } }
  - { id: resp-b, provider: openai-compatible, base_url: "${b}/v1", api_key: "\${TEST_UPSTREAM_KEY}", options: { responses: true } }
  - { id: chat-only, provider: openai-compatible, base_url: "${a}/v1", api_key: "\${TEST_UPSTREAM_KEY}" }
models:
  - name: codex-test
    price: { input: ${PRICE.input}, output: ${PRICE.output} }
    strategy: cheap
    targets:
      - { upstream: resp-a, model: up-codex }
      - { upstream: resp-b, model: up-codex, price: { input: 5, output: 20 } }
  - name: chat-test
    price: { input: 1, output: 1 }
    targets: [{ upstream: chat-only, model: up-chat }]
keys:
  - { name: team-a, key_sha256: ${hashKey(CLIENT_KEY)} }
  - { name: rpm-2, key_sha256: ${hashKey(RPM_KEY)}, limits: { rpm: 2 } }
  - { name: tiny-budget, key_sha256: ${hashKey(BUDGET_KEY)}, limits: { budget_usd: { amount: 0.001, period: day } } }
`;
}

describe('POST /v1/responses/compact is a model call', () => {
  let a: FakeUpstream;
  let b: FakeUpstream;
  let gw: TestGateway;
  const client = (apiKey = CLIENT_KEY): OpenAI => new OpenAI({ apiKey, baseURL: `${gw.url}/v1`, maxRetries: 0 });
  const answer = (reply: ScriptedReply | ((r: ReceivedRequest) => ScriptedReply)): void => {
    a.on(typeof reply === 'function' ? reply : () => reply);
  };

  before(async () => {
    a = await new FakeUpstream().start();
    b = await new FakeUpstream().start();
    a.on(() => ({ status: 200, body: COMPACTED }));
    b.on(() => ({ status: 200, body: COMPACTED }));
    gw = await startGateway(yaml(a.url, b.url));
  });
  after(() => closeAll(gw, a, b));

  test('the compaction goes to /responses/compact with the target model id; answered as sent, with its cost; one finished line with usage and cost', async () => {
    a.requests.length = 0;
    const { data, response } = await client().responses.compact({ model: 'codex-test', input: INPUT }).withResponse();
    assert.equal(data.object, 'response.compaction');
    assert.deepEqual(data.output, COMPACTED.output);
    const sent = a.requests.filter(compacts);
    assert.equal(sent.length, 1);
    assert.equal(sent[0]!.json?.['model'], 'up-codex');
    assert.deepEqual(sent[0]!.json?.['input'], INPUT);
    assert.equal(response.headers.get('x-switchyard-upstream'), 'resp-a');
    assert.ok(Math.abs(Number(response.headers.get('x-switchyard-cost-usd')) - COST) < 1e-9, String(response.headers.get('x-switchyard-cost-usd')));
    const line = await finishedLine(gw, response.headers.get('x-request-id')!);
    assert.equal(line['api'], 'responses/compact');
    assert.equal(line['model'], 'codex-test');
    assert.equal(line['upstream'], 'resp-a');
    assert.equal(line['outcome'], 'ok');
    assert.deepEqual(line['tokens'], { input: 139, cached: 0, output: 438, reasoning: 64 });
    assert.ok(Math.abs(Number(line['cost_usd']) - COST) < 1e-12, String(line['cost_usd']));
  });

  test('a key over its budget gets the budget error, and the upstream is not called', async () => {
    const c = client(BUDGET_KEY);
    await c.responses.compact({ model: 'codex-test', input: INPUT });
    const sent = a.requests.filter(compacts).length;
    const err = await c.responses.compact({ model: 'codex-test', input: INPUT }).catch((e: unknown) => e);
    assert.ok(err instanceof OpenAI.RateLimitError, String(err));
    assert.equal((err as InstanceType<typeof OpenAI.APIError>).code, 'insufficient_quota');
    assert.equal(a.requests.filter(compacts).length, sent);
  });

  test('a 2-rpm key gets its 429 on the third compaction', async () => {
    const c = client(RPM_KEY);
    const sent = a.requests.filter(compacts).length;
    for (let i = 0; i < 2; i++) await c.responses.compact({ model: 'codex-test', input: INPUT });
    const err = await c.responses.compact({ model: 'codex-test', input: INPUT }).catch((e: unknown) => e);
    assert.ok(err instanceof OpenAI.RateLimitError, String(err));
    assert.notEqual((err as InstanceType<typeof OpenAI.APIError>).code, 'insufficient_quota');
    assert.equal(a.requests.filter(compacts).length, sent + 2);
  });

  test('a failing account fails over to the next Responses account of the model', async () => {
    answer({ status: 500, body: { error: { message: 'boom', type: 'server_error', param: null, code: null } } });
    try {
      b.requests.length = 0;
      const { data, response } = await client().responses.compact({ model: 'codex-test', input: INPUT }).withResponse();
      assert.equal(data.object, 'response.compaction');
      assert.equal(response.headers.get('x-switchyard-upstream'), 'resp-b');
      assert.equal(response.headers.get('x-switchyard-attempts'), '2');
      assert.equal(b.requests.filter(compacts).length, 1);
    } finally {
      answer({ status: 200, body: COMPACTED });
    }
  });

  test("the upstream's refusal reaches the client in OpenAI's shape; a model with no Responses account is a 400 unsupported_api", async () => {
    answer({ status: 400, body: { error: { message: "Invalid 'input': empty.", type: 'invalid_request_error', param: 'input', code: null } } });
    try {
      const err = await client()
        .responses.compact({ model: 'codex-test', input: [] })
        .catch((e: unknown) => e);
      assert.ok(err instanceof OpenAI.BadRequestError, String(err));
      assert.match(err.message, /Invalid 'input'/);
    } finally {
      answer({ status: 200, body: COMPACTED });
    }
    const sent = a.requests.length;
    const refused = await client()
      .responses.compact({ model: 'chat-test', input: INPUT })
      .catch((e: unknown) => e);
    assert.ok(refused instanceof OpenAI.BadRequestError, String(refused));
    assert.equal(refused.code, 'unsupported_api');
    assert.match(refused.message, /responses API/);
    assert.equal(a.requests.length, sent);
  });
});
