/**
 * Cooldowns that follow the failure class, end to end: the real gateway on port 0 in front
 * of one scripted fake upstream account that serves two public models, called with the
 * official `openai` client.
 *
 * - A 403 permission_error for model A cools only A's target: A's calls fail (502
 *   upstream_auth_failed), B's keep being served.
 * - A 401 cools the whole account: both models answer 502 upstream_auth_failed, and the
 *   second model's call does not reach the upstream.
 * - Each cooldown writes exactly one warning line naming the upstream, the class and the
 *   upstream's reason; no log line carries the provider key.
 * - After the probe delay (credential_ms / 4) exactly one request probes; once the key
 *   works again the probe's success clears the account.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import OpenAI, { APIError } from 'openai';
import { hashKey } from '../../src/auth/keys.js';
import type { FakeUpstream, ScriptedReply } from '../helpers/fake-upstream.js';
import { CLIENT_KEY, UPSTREAM_KEY, closeAll, startWithUpstream, type TestGateway } from '../helpers/gateway.js';

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** One upstream `acct` serving `model-a` (as `up-a`) and `model-b` (as `up-b`). */
function configYaml(url: string, credentialMs: number): string {
  return `
server:
  log_level: info
routing:
  max_attempts: 2
  backoff_base_ms: 1
  backoff_cap_ms: 1
  cooldown: { failures: 1000, base_ms: 1, max_ms: 1, credential_ms: ${credentialMs} }
upstreams:
  - id: acct
    provider: openai-compatible
    base_url: ${url}/v1
    api_key: \${TEST_UPSTREAM_KEY}
models:
  - name: model-a
    price: { input: 1, output: 1 }
    targets:
      - { upstream: acct, model: up-a }
  - name: model-b
    price: { input: 1, output: 1 }
    targets:
      - { upstream: acct, model: up-b }
keys:
  - name: team-a
    key_sha256: ${hashKey(CLIENT_KEY)}
    models: ["*"]
`;
}

function ok(model: unknown): ScriptedReply {
  return {
    status: 200,
    body: {
      id: 'chatcmpl-1',
      object: 'chat.completion',
      created: 1700000000,
      model,
      choices: [{ index: 0, message: { role: 'assistant', content: `from ${String(model)}`, refusal: null }, finish_reason: 'stop' }],
      usage: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 },
    },
  };
}

/** The upstream's 403 for `up-a`; its message echoes the key, which the gateway must scrub. */
const PERMISSION = { error: { type: 'permission_error', message: `Key ${UPSTREAM_KEY} does not have permission to use model up-a`, param: null, code: null } };
const INVALID_KEY = {
  error: {
    message: `Incorrect API key provided: ${UPSTREAM_KEY.slice(0, 8)}***${UPSTREAM_KEY.slice(-4)}.`,
    type: 'invalid_request_error',
    param: null,
    code: 'invalid_api_key',
  },
};

async function chat(client: OpenAI, model: string): Promise<string | APIError> {
  try {
    const r = await client.chat.completions.create({ model, messages: [{ role: 'user', content: 'hi' }] });
    return r.choices[0]!.message.content ?? '';
  } catch (err) {
    assert.ok(err instanceof APIError, `APIError expected, got ${String(err)}`);
    return err;
  }
}

function assertAuthFailed(got: string | APIError, what: string): void {
  assert.ok(got instanceof APIError, `${what}: an error expected, got ${String(got)}`);
  assert.equal(got.status, 502, what);
  assert.equal(got.code, 'upstream_auth_failed', what);
}

const cooldownLines = (gw: TestGateway) => gw.logLines().filter((l) => l['msg'] === 'upstream cooling down');
const calls = (upstream: FakeUpstream, model: string) => upstream.requests.filter((r) => r.json?.['model'] === model).length;

function assertNoKeyInLogs(gw: TestGateway): void {
  for (const line of gw.logs) {
    assert.ok(!line.includes(UPSTREAM_KEY), `the provider key in a log line: ${line}`);
    assert.ok(!line.includes(UPSTREAM_KEY.slice(0, 12)), `part of the provider key in a log line: ${line}`);
  }
}

describe('a 403 permission_error cools only that model of the account', () => {
  let upstream: FakeUpstream;
  let gw: TestGateway;

  before(async () => {
    ({ upstream, gw } = await startWithUpstream((url) => configYaml(url, 60_000)));
    upstream.on((req) => (req.json?.['model'] === 'up-a' ? { status: 403, body: PERMISSION } : ok(req.json?.['model'])));
  });
  after(() => closeAll(gw, upstream));

  test("model A's calls fail, model B's keep being served, one warning line names the upstream and reason", async () => {
    const client = gw.client();
    assertAuthFailed(await chat(client, 'model-a'), 'first call to A');
    assert.equal(calls(upstream, 'up-a'), 1, 'A tried once (its only target; not again within the request)');
    for (let i = 0; i < 3; i++) assert.equal(await chat(client, 'model-b'), 'from up-b', `call ${i} to B`);
    assertAuthFailed(await chat(client, 'model-a'), 'second call to A');
    assert.equal(calls(upstream, 'up-a'), 1, 'A is cooling: no second upstream call');
    assert.equal(calls(upstream, 'up-b'), 3);

    const lines = cooldownLines(gw);
    assert.equal(lines.length, 1, JSON.stringify(lines));
    const line = lines[0]!;
    assert.equal(line['level'], 'warn');
    assert.equal(line['upstream'], 'acct');
    assert.equal(line['target'], 'acct/up-a');
    assert.equal(line['error_class'], 'permission');
    assert.match(String(line['reason']), /does not have permission to use model up-a/);
    assertNoKeyInLogs(gw);
  });
});

describe('a 401 cools the whole account, and a probe after the delay brings it back', () => {
  const CREDENTIAL_MS = 2_000;
  const PROBE_MS = CREDENTIAL_MS / 4;
  let upstream: FakeUpstream;
  let gw: TestGateway;

  before(async () => {
    ({ upstream, gw } = await startWithUpstream((url) => configYaml(url, CREDENTIAL_MS)));
  });
  after(() => closeAll(gw, upstream));

  test('both models answer 502 upstream_auth_failed; the second never reaches the upstream; one warning line', async () => {
    upstream.on(() => ({ status: 401, body: INVALID_KEY }));
    const client = gw.client();
    const t0 = Date.now();
    assertAuthFailed(await chat(client, 'model-a'), 'model A');
    assertAuthFailed(await chat(client, 'model-b'), 'model B');
    assert.ok(Date.now() - t0 < PROBE_MS, 'both calls ran before the probe delay');
    assert.equal(upstream.requests.length, 1, 'only the first call reached the upstream');

    const lines = cooldownLines(gw);
    assert.equal(lines.length, 1, JSON.stringify(lines));
    assert.equal(lines[0]!['upstream'], 'acct');
    assert.equal(lines[0]!['target'], null, 'the whole account');
    assert.equal(lines[0]!['error_class'], 'credential');
    assert.match(String(lines[0]!['reason']), /Incorrect API key provided/);
    assertNoKeyInLogs(gw);
  });

  test('after the probe delay exactly one of several concurrent calls probes; a failed probe is not logged again', async () => {
    await sleep(PROBE_MS + 50);
    upstream.on(() => ({ status: 401, body: INVALID_KEY, delayMs: 100 }));
    const n = upstream.requests.length;
    const got = await Promise.all([chat(gw.client(), 'model-a'), chat(gw.client(), 'model-b'), chat(gw.client(), 'model-a')]);
    got.forEach((g, i) => assertAuthFailed(g, `call ${i}`));
    assert.equal(upstream.requests.length, n + 1, 'one probe');
    assert.equal(cooldownLines(gw).length, 1);
  });

  test('once the key works, the next probe (after the doubled delay) succeeds and clears both models', async () => {
    upstream.on((req) => ok(req.json?.['model']));
    assertAuthFailed(await chat(gw.client(), 'model-b'), 'before the next probe is due');
    await sleep(2 * PROBE_MS + 50);
    assert.equal(await chat(gw.client(), 'model-b'), 'from up-b', 'the probe');
    assert.equal(await chat(gw.client(), 'model-a'), 'from up-a', 'the account is back for every model');
    assert.equal(await chat(gw.client(), 'model-b'), 'from up-b');
    assert.equal(cooldownLines(gw).length, 1);
    assertNoKeyInLogs(gw);
  });
});

describe("a caller's own 404 (a resource it named does not exist) cools nothing", () => {
  let upstream: FakeUpstream;
  let gw: TestGateway;
  before(async () => {
    ({ upstream, gw } = await startWithUpstream((url) => configYaml(url, 60_000)));
  });
  after(() => closeAll(gw, upstream));

  test('a 404 previous_response_not_found goes back to that caller; every later call of every model is served', async () => {
    upstream.on((req) =>
      JSON.stringify(req.json).includes('bad_resp_123')
        ? {
            status: 404,
            body: {
              error: {
                message: "Previous response with id 'bad_resp_123' not found.",
                type: 'invalid_request_error',
                param: 'previous_response_id',
                code: 'previous_response_not_found',
              },
            },
          }
        : ok(req.json?.['model']),
    );
    const bad = await gw
      .client()
      .chat.completions.create({ model: 'model-a', messages: [{ role: 'user', content: 'bad_resp_123' }] })
      .then(
        () => null,
        (e: unknown) => e,
      );
    assert.ok(bad instanceof APIError && bad.status === 404, `the caller gets the upstream's 404: ${String(bad)}`);
    assert.equal(bad.code, 'previous_response_not_found');
    for (let i = 0; i < 3; i++) {
      assert.equal(await chat(gw.client(), 'model-a'), 'from up-a');
      assert.equal(await chat(gw.client(), 'model-b'), 'from up-b');
    }
    assert.equal(cooldownLines(gw).length, 0, 'no cooldown was started');
    assert.equal(gw.finished().find((l) => l['status'] === 404)?.['outcome'], 'client_error');
  });
});
