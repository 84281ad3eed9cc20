/**
 * The `azure-openai` provider against a fake Azure endpoint: the deployment URL with
 * `api-version`, the `api-key` header (never `Authorization`), and recorded OpenAI chat
 * answers relayed to the official client, streaming and not.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { FakeUpstream, type ReceivedRequest, type ScriptedReply } from '../helpers/fake-upstream.js';
import { hashKey } from '../../src/auth/keys.js';
import { parseTestConfig } from '../helpers/config.js';
import { CLIENT_KEY, UPSTREAM_KEY, closeAll, startGateway, type TestGateway } from '../helpers/gateway.js';
import { fixtureJson, replay, sseEvents } from '../helpers/recordings.js';

const DEPLOYMENT = 'my-gpt4o-deployment';
const STREAM = 'openai-chat-stream-text-no-usage-2023.sse';

function azureYaml(baseUrl: string, options = '{ api_version: "2024-10-21" }'): string {
  return `
routing:
  max_attempts: 1
upstreams:
  - id: azure
    provider: azure-openai
    base_url: ${baseUrl}
    api_key: \${TEST_UPSTREAM_KEY}
    options: ${options}
    timeouts: { connect_ms: 2000, first_byte_ms: 5000, idle_ms: 5000 }
models:
  - name: gpt-azure
    price: { input: 2.5, output: 10 }
    targets:
      - { upstream: azure, model: ${DEPLOYMENT} }
keys:
  - name: team-a
    key_sha256: ${hashKey(CLIENT_KEY)}
`;
}

/** The text a recorded chat stream spells out. */
function streamedText(name: string): string {
  return sseEvents(name)
    .map((e) => /^data: (\{.*\})\s*$/s.exec(e)?.[1])
    .filter((j): j is string => j !== undefined)
    .map((j) => (JSON.parse(j) as { choices: { delta?: { content?: string } }[] }).choices[0]?.delta?.content ?? '')
    .join('');
}

function assertAzureRequest(r: ReceivedRequest): void {
  assert.equal(r.method, 'POST');
  assert.equal(r.url, `/openai/deployments/${DEPLOYMENT}/chat/completions?api-version=2024-10-21`);
  assert.equal(r.headers['api-key'], UPSTREAM_KEY);
  assert.equal(r.headers['authorization'], undefined, 'Azure gets the key in api-key only');
  assert.ok(!JSON.stringify(r.headers).includes(CLIENT_KEY));
  assert.equal(r.json?.['model'], DEPLOYMENT);
}

describe('azure-openai provider', () => {
  let upstream: FakeUpstream;
  let gw: TestGateway;

  before(async () => {
    upstream = await new FakeUpstream().start();
    upstream.on((req): ScriptedReply | Promise<ScriptedReply> =>
      req.json?.['stream'] === true ? replay(STREAM)(req) : { status: 200, body: fixtureJson('openai-chat-gpt5.json') },
    );
    gw = await startGateway(azureYaml(upstream.url));
  });
  after(() => closeAll(gw, upstream));

  test('non-streaming: deployment URL, api-version, api-key header', async () => {
    const res = await gw.client().chat.completions.create({ model: 'gpt-azure', messages: [{ role: 'user', content: 'Capital of France?' }] });
    assert.equal(res.choices[0]?.message.content, 'Paris.');
    assertAzureRequest(upstream.requests.at(-1)!);
  });

  test('streaming: every recorded chunk reaches the client', async () => {
    const stream = await gw.client().chat.completions.create({ model: 'gpt-azure', stream: true, messages: [{ role: 'user', content: 'hi' }] });
    let text = '';
    let chunks = 0;
    for await (const chunk of stream) {
      chunks++;
      text += chunk.choices[0]?.delta?.content ?? '';
    }
    assert.ok(chunks > 1);
    assert.equal(text, streamedText(STREAM));
    const r = upstream.requests.at(-1)!;
    assertAzureRequest(r);
    assert.equal(r.headers['accept'], 'text/event-stream');
  });

  test('a path on base_url (API Management prefix) is kept; api_version is configurable', async () => {
    const up = await new FakeUpstream().start();
    up.on(() => ({ status: 200, body: fixtureJson('openai-chat-gpt5.json') }));
    const g = await startGateway(azureYaml(`${up.url}/apim/aoai/`, '{ api_version: "2025-04-01-preview" }'));
    try {
      await g.client().chat.completions.create({ model: 'gpt-azure', messages: [{ role: 'user', content: 'x' }] });
      assert.equal(up.requests[0]?.url, `/apim/aoai/openai/deployments/${DEPLOYMENT}/chat/completions?api-version=2025-04-01-preview`);
    } finally {
      await g.close();
      await up.close();
    }
  });

  test('responses: with options.responses, the v1 API path, deployment as the body model', async () => {
    const up = await new FakeUpstream().start();
    up.on(replay('openai-responses-stream-text.sse'));
    const g = await startGateway(azureYaml(up.url, '{ responses: true }'));
    try {
      const stream = await g.client().responses.create({ model: 'gpt-azure', input: 'hi', stream: true });
      let done = false;
      for await (const ev of stream) if (ev.type === 'response.completed') done = true;
      assert.ok(done, 'the stream completed');
      const r = up.requests[0]!;
      assert.equal(r.url, '/openai/v1/responses');
      assert.equal(r.headers['api-key'], UPSTREAM_KEY);
      assert.equal(r.headers['authorization'], undefined);
      assert.equal(r.json?.['model'], DEPLOYMENT);
    } finally {
      await g.close();
      await up.close();
    }
  });

  test('config: api_version defaults to 2024-10-21; unknown options are rejected', () => {
    const env = { TEST_UPSTREAM_KEY: UPSTREAM_KEY };
    const c = parseTestConfig(azureYaml('https://r.openai.azure.com', '{}'), env);
    assert.equal(c.upstreams.get('azure')?.options['api_version'], '2024-10-21');
    assert.equal(c.upstreams.get('azure')?.options['responses'], false);
    assert.throws(() => parseTestConfig(azureYaml('https://r.openai.azure.com', '{ deployment: x }'), env), /options/);
  });
});
