/**
 * Parameter normalisation on `/v1/chat/completions`, through the official `openai` client:
 * the body each upstream receives is reshaped from the model's declared `capabilities`
 * (output-cap field, unsupported / accepted parameters, tools, vision, reasoning controls),
 * dropped parameters are listed in `x-switchyard-dropped-params`, `on_unsupported: reject`
 * answers 400 before any upstream call, and a fallback model never rejects.
 */
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import OpenAI, { BadRequestError } from 'openai';
import type { ChatCompletionCreateParams } from 'openai/resources/chat/completions';
import { hashKey } from '../../src/auth/keys.js';
import type { FakeUpstream, ReceivedRequest, Script } from '../helpers/fake-upstream.js';
import { fixtureJson, replay } from '../helpers/recordings.js';
import { CLIENT_KEY, closeAll, finishedLine, startWithUpstream, type TestGateway } from '../helpers/gateway.js';

const TIMEOUTS = '{ connect_ms: 2000, first_byte_ms: 5000, idle_ms: 5000 }';
const KEYS = `
keys:
  - name: team-a
    key_sha256: ${hashKey(CLIENT_KEY)}
    models: ["*"]
`;

/** One model on upstream `fake`, served as `upstream-<name>`. */
function model(name: string, extra: string): string {
  return `
  - name: ${name}
    price: { input: 1, output: 2 }${extra}
    targets:
      - { upstream: fake, model: upstream-${name} }`;
}

function configYaml(upstreamUrl: string, routing: string, models: string): string {
  return `
server:
  log_level: info
routing:
${routing}
upstreams:
  - id: fake
    provider: openai-compatible
    base_url: ${upstreamUrl}/v1
    api_key: \${TEST_UPSTREAM_KEY}
    timeouts: ${TIMEOUTS}
models:${models}
${KEYS}`;
}

const MODELS = [
  model('mct-reasoner', '\n    reasoning: true\n    capabilities: { max_tokens_field: max_completion_tokens }'),
  model('mt-model', '\n    capabilities: { max_tokens_field: max_tokens }'),
  model('drop-model', '\n    capabilities: { unsupported_params: [temperature, top_p] }'),
  model('reject-model', '\n    capabilities: { unsupported_params: [temperature, top_p], on_unsupported: reject }'),
  model('accepted-model', '\n    capabilities: { accepted_params: [temperature] }'),
  model('notools-model', '\n    capabilities: { tools: false }'),
  model('notools-reject', '\n    capabilities: { tools: false, on_unsupported: reject }'),
  model('novision-model', '\n    capabilities: { vision: false }'),
  model('plain-reject', '\n    reasoning: false\n    capabilities: { on_unsupported: reject }'),
  model('reasoner-reject', '\n    reasoning: true\n    capabilities: { on_unsupported: reject }'),
  model('plain-model', ''),
].join('');

const COMPLETION = fixtureJson('openai-chat-gpt5.json');
const ok: Script = () => ({ status: 200, body: COMPLETION });
const HI = [{ role: 'user' as const, content: 'hi' }];
const TOOLS: ChatCompletionCreateParams['tools'] = [
  { type: 'function', function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } } },
];

async function rejected(p: Promise<unknown>): Promise<BadRequestError> {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  assert.ok(err instanceof BadRequestError, `expected BadRequestError, got ${String(err)}`);
  assert.equal(err.status, 400);
  return err;
}

describe('parameter normalisation (chat completions)', () => {
  let upstream: FakeUpstream;
  let gw: TestGateway;
  let client: OpenAI;

  before(async () => {
    ({ upstream, gw } = await startWithUpstream((url) => configYaml(url, '  max_attempts: 1', MODELS)));
    client = gw.client();
  });
  after(() => closeAll(gw, upstream));
  beforeEach(() => {
    upstream.requests.length = 0;
    upstream.on(ok);
  });

  function onlyRequest(): ReceivedRequest & { json: Record<string, unknown> } {
    assert.equal(upstream.requests.length, 1, 'the upstream received exactly one request');
    const r = upstream.requests[0]!;
    assert.ok(r.json, 'the upstream body is JSON');
    return r as ReceivedRequest & { json: Record<string, unknown> };
  }

  /** Non-streaming call; returns the completion and the response headers. */
  async function call(body: ChatCompletionCreateParams & { stream?: false }): Promise<{ data: unknown; headers: Headers }> {
    const { data, response } = await client.chat.completions.create(body as ChatCompletionCreateParams & { stream?: false }).withResponse();
    return { data, headers: response.headers };
  }

  // (1) output-cap field -------------------------------------------------------------

  test('max_tokens_field: max_completion_tokens: max_tokens 50 arrives as max_completion_tokens 50, no max_tokens', async () => {
    const { data, headers } = await call({ model: 'mct-reasoner', messages: HI, max_tokens: 50 });
    assert.deepEqual(data, COMPLETION);
    const got = onlyRequest();
    assert.equal(got.json['max_completion_tokens'], 50);
    assert.ok(!('max_tokens' in got.json), 'max_tokens is not sent (OpenAI reasoning models reject it)');
    assert.equal(got.json['model'], 'upstream-mct-reasoner');
    assert.equal(headers.get('x-switchyard-dropped-params'), null, 'a renamed field is not a dropped one');
  });

  test('max_tokens_field: max_completion_tokens: the recorded 400 is what the rename avoids (sanity of the fixture)', () => {
    const err = fixtureJson('openai-chat-error-400-unsupported-parameter.json') as { error: { param: string; code: string; message: string } };
    assert.equal(err.error.param, 'max_tokens');
    assert.equal(err.error.code, 'unsupported_parameter');
    assert.match(err.error.message, /max_completion_tokens/);
  });

  test('max_tokens_field: max_completion_tokens: streaming too', async () => {
    upstream.on(replay('openai-chat-stream-text-include-usage.sse'));
    const { data: stream, response } = await client.chat.completions
      .create({ model: 'mct-reasoner', messages: HI, max_tokens: 50, stream: true })
      .withResponse();
    for await (const _ of stream) void _;
    const got = onlyRequest();
    assert.equal(got.json['max_completion_tokens'], 50);
    assert.ok(!('max_tokens' in got.json));
    assert.equal(response.headers.get('x-switchyard-dropped-params'), null);
  });

  test('max_tokens_field: max_completion_tokens: the client already sent max_completion_tokens: unchanged', async () => {
    await call({ model: 'mct-reasoner', messages: HI, max_completion_tokens: 70 });
    const got = onlyRequest();
    assert.equal(got.json['max_completion_tokens'], 70);
    assert.ok(!('max_tokens' in got.json));
  });

  test("max_tokens_field: max_completion_tokens: both sent: the model's own field is kept, the other removed", async () => {
    await call({ model: 'mct-reasoner', messages: HI, max_tokens: 50, max_completion_tokens: 70 });
    const got = onlyRequest();
    assert.equal(got.json['max_completion_tokens'], 70);
    assert.ok(!('max_tokens' in got.json));
  });

  test('max_tokens_field: max_tokens: max_completion_tokens 50 arrives as max_tokens 50, no max_completion_tokens', async () => {
    const { headers } = await call({ model: 'mt-model', messages: HI, max_completion_tokens: 50 });
    const got = onlyRequest();
    assert.equal(got.json['max_tokens'], 50);
    assert.ok(!('max_completion_tokens' in got.json));
    assert.equal(headers.get('x-switchyard-dropped-params'), null);
  });

  test("no max_tokens_field: the client's spelling passes unchanged", async () => {
    await call({ model: 'plain-model', messages: HI, max_tokens: 50 });
    let got = onlyRequest();
    assert.equal(got.json['max_tokens'], 50);
    assert.ok(!('max_completion_tokens' in got.json));
    upstream.requests.length = 0;
    await call({ model: 'plain-model', messages: HI, max_completion_tokens: 50 });
    got = onlyRequest();
    assert.equal(got.json['max_completion_tokens'], 50);
    assert.ok(!('max_tokens' in got.json));
  });

  // (2) unsupported_params, drop -------------------------------------------------------

  test('unsupported_params (drop): temperature and top_p never reach the upstream and are listed in request order', async () => {
    const { data, headers } = await call({ model: 'drop-model', messages: HI, temperature: 0.5, top_p: 0.9, seed: 7 });
    assert.deepEqual(data, COMPLETION, 'the completion still succeeds');
    const got = onlyRequest();
    assert.ok(!('temperature' in got.json), 'temperature not sent');
    assert.ok(!('top_p' in got.json), 'top_p not sent');
    assert.equal(got.json['seed'], 7, 'other parameters pass');
    assert.deepEqual(got.json['messages'], HI);
    assert.equal(headers.get('x-switchyard-dropped-params'), 'temperature,top_p');
  });

  test('unsupported_params (drop): the list follows the request body order (top_p first)', async () => {
    const { headers } = await call({ model: 'drop-model', messages: HI, top_p: 0.9, temperature: 0.5 });
    assert.equal(headers.get('x-switchyard-dropped-params'), 'top_p,temperature');
    const got = onlyRequest();
    assert.ok(!('temperature' in got.json) && !('top_p' in got.json));
  });

  test('unsupported_params (drop): only what was sent is listed', async () => {
    const { headers } = await call({ model: 'drop-model', messages: HI, top_p: 0.9 });
    assert.equal(headers.get('x-switchyard-dropped-params'), 'top_p');
    upstream.requests.length = 0;
    const second = await call({ model: 'drop-model', messages: HI });
    assert.equal(second.headers.get('x-switchyard-dropped-params'), null);
  });

  test('unsupported_params (drop): streaming: the SSE response carries the header, the stream completes', async () => {
    upstream.on(replay('openai-chat-stream-text-include-usage.sse'));
    const { data: stream, response } = await client.chat.completions
      .create({ model: 'drop-model', messages: HI, temperature: 0.5, top_p: 0.9, stream: true })
      .withResponse();
    const finish: (string | null | undefined)[] = [];
    for await (const c of stream) finish.push(c.choices[0]?.finish_reason);
    assert.ok(
      finish.some((f) => typeof f === 'string'),
      'the stream runs to its finish reason',
    );
    assert.equal(response.headers.get('x-switchyard-dropped-params'), 'temperature,top_p');
    const got = onlyRequest();
    assert.ok(!('temperature' in got.json) && !('top_p' in got.json));
    assert.deepEqual(got.json['stream_options'], { include_usage: true });
  });

  // (3) unsupported_params, reject -----------------------------------------------------

  for (const stream of [false, true]) {
    test(`unsupported_params (reject), stream=${stream}: 400 unsupported_parameter naming temperature; the upstream gets nothing`, async () => {
      const err = await rejected(client.chat.completions.create({ model: 'reject-model', messages: HI, temperature: 0.5, stream }));
      assert.equal(err.code, 'unsupported_parameter');
      assert.equal(err.param, 'temperature');
      assert.equal(err.type, 'invalid_request_error');
      assert.match(err.message, /temperature/);
      assert.match(err.message, /reject-model/);
      assert.equal(upstream.requests.length, 0, 'nothing was sent upstream');
      const requestId = err.headers?.get('x-request-id');
      assert.ok(requestId);
      const line = await finishedLine(gw, requestId);
      assert.equal(line['status'], 400);
      assert.equal(line['outcome'], 'client_error');
    });
  }

  test('unsupported_params (reject): a request without them passes', async () => {
    const { data, headers } = await call({ model: 'reject-model', messages: HI, seed: 1 });
    assert.deepEqual(data, COMPLETION);
    assert.equal(onlyRequest().json['seed'], 1);
    assert.equal(headers.get('x-switchyard-dropped-params'), null);
  });

  // (4) accepted_params -----------------------------------------------------------------

  test('accepted_params: [temperature]: seed and logprobs are dropped and listed, temperature and the always-fields pass', async () => {
    const { data, headers } = await call({ model: 'accepted-model', messages: HI, temperature: 0.3, seed: 42, logprobs: true });
    assert.deepEqual(data, COMPLETION);
    const got = onlyRequest();
    assert.deepEqual(got.json, { model: 'upstream-accepted-model', messages: HI, temperature: 0.3 });
    assert.equal(headers.get('x-switchyard-dropped-params'), 'seed,logprobs');
  });

  test('accepted_params: stream and stream_options always pass', async () => {
    upstream.on(replay('openai-chat-stream-text-include-usage.sse'));
    const { data: stream, response } = await client.chat.completions
      .create({ model: 'accepted-model', messages: HI, temperature: 0.3, stream: true, stream_options: { include_usage: true } })
      .withResponse();
    for await (const _ of stream) void _;
    const got = onlyRequest();
    assert.equal(got.json['stream'], true);
    assert.deepEqual(got.json['stream_options'], { include_usage: true });
    assert.equal(got.json['temperature'], 0.3);
    assert.equal(response.headers.get('x-switchyard-dropped-params'), null);
  });

  // (5) tools: false ------------------------------------------------------------------

  test('tools: false (drop): tools and tool_choice are dropped and listed; the call succeeds', async () => {
    const { data, headers } = await call({ model: 'notools-model', messages: HI, tools: TOOLS, tool_choice: 'auto', temperature: 1 });
    assert.deepEqual(data, COMPLETION);
    const got = onlyRequest();
    assert.ok(!('tools' in got.json), 'tools not sent');
    assert.ok(!('tool_choice' in got.json), 'tool_choice not sent');
    assert.equal(got.json['temperature'], 1);
    assert.equal(headers.get('x-switchyard-dropped-params'), 'tools,tool_choice');
  });

  test('tools: false (drop): parallel_tool_calls is dropped too', async () => {
    const { headers } = await call({ model: 'notools-model', messages: HI, tools: TOOLS, parallel_tool_calls: false });
    const got = onlyRequest();
    assert.ok(!('tools' in got.json) && !('parallel_tool_calls' in got.json));
    assert.equal(headers.get('x-switchyard-dropped-params'), 'tools,parallel_tool_calls');
  });

  test('tools: false (reject): 400 unsupported_parameter naming tools; nothing sent', async () => {
    const err = await rejected(client.chat.completions.create({ model: 'notools-reject', messages: HI, tools: TOOLS, tool_choice: 'auto' }));
    assert.equal(err.code, 'unsupported_parameter');
    assert.equal(err.param, 'tools');
    assert.equal(upstream.requests.length, 0);
  });

  test('tools: true (default): tools pass unchanged', async () => {
    const { headers } = await call({ model: 'plain-model', messages: HI, tools: TOOLS, tool_choice: 'auto' });
    const got = onlyRequest();
    assert.deepEqual(got.json['tools'], TOOLS);
    assert.equal(got.json['tool_choice'], 'auto');
    assert.equal(headers.get('x-switchyard-dropped-params'), null);
  });

  // (6) vision: false -----------------------------------------------------------------

  test('vision: false: an image_url part is a 400 naming the model; nothing sent', async () => {
    const err = await rejected(
      client.chat.completions.create({
        model: 'novision-model',
        messages: [
          {
            role: 'user',
            content: [
              { type: 'text', text: 'What is in this picture?' },
              { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=' } },
            ],
          },
        ],
      }),
    );
    assert.match(err.message, /novision-model/);
    assert.equal(err.code, 'unsupported_parameter');
    assert.equal(err.param, 'messages');
    assert.equal(upstream.requests.length, 0);
  });

  test('vision: false: text-only content parts pass', async () => {
    const messages = [{ role: 'user' as const, content: [{ type: 'text' as const, text: 'hello' }] }];
    await call({ model: 'novision-model', messages });
    assert.deepEqual(onlyRequest().json['messages'], messages);
  });

  test('vision: true (default): an image_url part passes', async () => {
    const messages = [{ role: 'user' as const, content: [{ type: 'image_url' as const, image_url: { url: 'data:image/png;base64,iVBORw0KGgo=' } }] }];
    await call({ model: 'plain-model', messages });
    assert.deepEqual(onlyRequest().json['messages'], messages);
  });

  // (7) reasoning_effort --------------------------------------------------------------

  test('reasoning_effort to a non-reasoning model is dropped and listed, even with on_unsupported: reject', async () => {
    const { data, headers } = await call({ model: 'plain-reject', messages: HI, reasoning_effort: 'high' });
    assert.deepEqual(data, COMPLETION);
    const got = onlyRequest();
    assert.ok(!('reasoning_effort' in got.json), 'reasoning_effort not sent');
    assert.equal(headers.get('x-switchyard-dropped-params'), 'reasoning_effort');
  });

  test('reasoning_effort to a non-reasoning model with the default drop mode is dropped and listed', async () => {
    const { headers } = await call({ model: 'plain-model', messages: HI, reasoning_effort: 'low' });
    assert.ok(!('reasoning_effort' in onlyRequest().json));
    assert.equal(headers.get('x-switchyard-dropped-params'), 'reasoning_effort');
  });

  test('reasoning_effort to a reasoning model passes (reject mode, nothing dropped)', async () => {
    const { headers } = await call({ model: 'reasoner-reject', messages: HI, reasoning_effort: 'high' });
    assert.equal(onlyRequest().json['reasoning_effort'], 'high');
    assert.equal(headers.get('x-switchyard-dropped-params'), null);
  });
});

// (8) fallbacks never reject ------------------------------------------------------------

describe('parameter normalisation on a fallback model', () => {
  let upstream: FakeUpstream;
  let gw: TestGateway;
  let client: OpenAI;

  const models = [
    model('primary-model', '\n    capabilities: { on_unsupported: reject }\n    fallbacks: [fallback-model]'),
    model('fallback-model', '\n    capabilities: { unsupported_params: [temperature], on_unsupported: reject }'),
    model('vision-primary', '\n    fallbacks: [novision-fallback]'),
    model('novision-fallback', '\n    capabilities: { vision: false }'),
  ].join('');

  before(async () => {
    ({ upstream, gw } = await startWithUpstream((url) => configYaml(url, '  max_attempts: 3\n  backoff_base_ms: 1\n  backoff_cap_ms: 5', models)));
    client = gw.client();
  });
  after(() => closeAll(gw, upstream));
  beforeEach(() => {
    upstream.requests.length = 0;
  });

  const primaryFails: Script = (req) =>
    req.json?.['model'] === 'upstream-primary-model'
      ? { status: 500, body: { error: { message: 'The server had an error while processing your request.', type: 'server_error', param: null, code: null } } }
      : { status: 200, body: COMPLETION };

  test('primary fails with 500; the fallback (reject mode, no temperature) gets the call with temperature dropped', async () => {
    upstream.on(primaryFails);
    const { data, response } = await client.chat.completions.create({ model: 'primary-model', messages: HI, temperature: 0.7, seed: 3 }).withResponse();
    assert.deepEqual(data, COMPLETION);
    assert.equal(upstream.requests.length, 2, 'primary then fallback');
    const [first, second] = upstream.requests;
    assert.equal(first!.json?.['model'], 'upstream-primary-model');
    assert.equal(first!.json?.['temperature'], 0.7, 'the primary takes temperature');
    assert.equal(second!.json?.['model'], 'upstream-fallback-model');
    assert.ok(second!.json && !('temperature' in second!.json), 'the fallback attempt does not send temperature');
    assert.equal(second!.json?.['seed'], 3);
    assert.equal(response.headers.get('x-switchyard-dropped-params'), 'temperature');
    assert.equal(response.headers.get('x-switchyard-fallback'), 'primary-model->fallback-model');
    assert.equal(response.headers.get('x-switchyard-attempts'), '2');
  });

  test('streaming: same, the fallback stream is relayed with the dropped-params header', async () => {
    const sse = replay('openai-chat-stream-text-include-usage.sse');
    upstream.on((req) => (req.json?.['model'] === 'upstream-primary-model' ? primaryFails(req, 0) : sse(req)));
    const { data: stream, response } = await client.chat.completions
      .create({ model: 'primary-model', messages: HI, temperature: 0.7, stream: true })
      .withResponse();
    const finish: (string | null | undefined)[] = [];
    for await (const c of stream) finish.push(c.choices[0]?.finish_reason);
    assert.ok(
      finish.some((f) => typeof f === 'string'),
      'the fallback stream runs to its finish reason',
    );
    assert.equal(upstream.requests.length, 2);
    assert.ok(upstream.requests[1]!.json && !('temperature' in upstream.requests[1]!.json));
    assert.equal(response.headers.get('x-switchyard-dropped-params'), 'temperature');
  });

  test('the fallback model asked for directly still rejects temperature (it is primary then)', async () => {
    upstream.on(primaryFails);
    const err = await rejected(client.chat.completions.create({ model: 'fallback-model', messages: HI, temperature: 0.7 }));
    assert.equal(err.code, 'unsupported_parameter');
    assert.equal(err.param, 'temperature');
    assert.equal(upstream.requests.length, 0);
  });

  test("a fallback that cannot take the images is skipped: the client gets the primary's upstream failure, not a 400 blaming the fallback", async () => {
    upstream.on((req) =>
      req.json?.['model'] === 'upstream-vision-primary'
        ? { status: 500, body: { error: { message: 'The server had an error while processing your request.', type: 'server_error', param: null, code: null } } }
        : { status: 200, body: COMPLETION },
    );
    const err = await client.chat.completions
      .create({
        model: 'vision-primary',
        messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=' } }] }],
      })
      .then(
        () => null,
        (e: unknown) => e as { status?: number; message?: string; headers?: Headers },
      );
    assert.ok(err, 'the call fails (the only model that takes images failed)');
    // The primary may be retried (max_attempts 3); the non-vision fallback is never called.
    const models = upstream.requests.map((q) => q.json?.['model']);
    assert.ok(models.length >= 1);
    assert.deepEqual(new Set(models), new Set(['upstream-vision-primary']), 'the non-vision fallback is never called');
    // Fallbacks never reject: the caller asked for a vision model, so a 400 naming a model it
    // never asked for is wrong; the primary's 500 (a server error) is what happened.
    assert.doesNotMatch(err.message ?? '', /novision-fallback/);
    // A server-side failure (the primary's 500, or 503 once its retries or breaker ran out), never a 400.
    assert.ok((err.status ?? 0) >= 500, `status ${err.status}`);
  });
});
