/**
 * The OpenAI Responses API (`POST /v1/responses`) through Switchyard, driven by the official
 * `openai` client against a fake upstream replaying recorded Responses streams and bodies:
 * events relay unchanged, the model id is rewritten for the upstream, the provider key
 * replaces the client's, usage (reasoning tokens included) and cost are recorded, upstream
 * errors (before and during the stream) reach the SDK as its own error types, models with
 * no Responses-capable upstream are refused, and `reasoning` is only sent to reasoning models.
 */
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import OpenAI, { APIError, AuthenticationError, BadRequestError } from 'openai';
import type { ResponseStreamEvent } from 'openai/resources/responses/responses';
import { hashKey } from '../../src/auth/keys.js';
import type { FakeUpstream, ReceivedRequest, ScriptedReply } from '../helpers/fake-upstream.js';
import { fixture, fixtureJson, sseEvents } from '../helpers/recordings.js';
import { CLIENT_KEY, UPSTREAM_KEY, closeAll, finishedLine, startWithUpstream, type TestGateway } from '../helpers/gateway.js';

interface Price {
  input: number;
  cached_input: number;
  output: number;
  reasoning: number;
}

/** Public model -> upstream model id and price (mirrors the YAML below). */
const TEXT_MODEL = { name: 'gpt-resp', upstream: 'upstream-gpt-4.1', price: { input: 2, cached_input: 0.5, output: 8, reasoning: 8 } };
const REASONING_MODEL = { name: 'gpt5-resp', upstream: 'upstream-gpt-5', price: { input: 1.25, cached_input: 0.125, output: 10, reasoning: 30 } };

function configYaml(upstreamUrl: string): string {
  const timeouts = '{ connect_ms: 2000, first_byte_ms: 5000, idle_ms: 5000 }';
  return `
server:
  log_level: info
routing:
  max_attempts: 1
  # A model_not_found cools its target until a probe: with credential_ms 1 the next request is that probe.
  cooldown: { credential_ms: 1 }
upstreams:
  - id: oai
    provider: openai-compatible
    base_url: ${upstreamUrl}/v1
    api_key: \${TEST_UPSTREAM_KEY}
    options: { responses: true }
    timeouts: ${timeouts}
  - id: chat-only
    provider: openai-compatible
    base_url: ${upstreamUrl}/v1
    api_key: \${TEST_UPSTREAM_KEY}
    timeouts: ${timeouts}
models:
  - name: ${TEXT_MODEL.name}
    reasoning: false
    price: { input: ${TEXT_MODEL.price.input}, cached_input: ${TEXT_MODEL.price.cached_input}, output: ${TEXT_MODEL.price.output} }
    targets:
      - { upstream: oai, model: ${TEXT_MODEL.upstream} }
  - name: ${REASONING_MODEL.name}
    reasoning: true
    price: { input: ${REASONING_MODEL.price.input}, cached_input: ${REASONING_MODEL.price.cached_input}, output: ${REASONING_MODEL.price.output}, reasoning: ${REASONING_MODEL.price.reasoning} }
    targets:
      - { upstream: oai, model: ${REASONING_MODEL.upstream} }
  - name: gpt-limited
    reasoning: false
    capabilities: { tools: false, vision: false }
    price: { input: 1, output: 1 }
    targets:
      - { upstream: oai, model: upstream-limited }
  - name: chat-only-model
    reasoning: false
    price: { input: 1, output: 1 }
    targets:
      - { upstream: chat-only, model: upstream-chat-only }
keys:
  - name: team-a
    key_sha256: ${hashKey(CLIENT_KEY)}
    models: ["*"]
`;
}

// ---------------------------------------------------------------------------------------
// Recordings

/** A recorded event stream: the raw SSE events and their parsed `data` payloads. */
interface Recording {
  events: string[];
  payloads: Record<string, unknown>[];
}

function parsePayload(event: string): Record<string, unknown> {
  const m = /^data: (.*)$/m.exec(event);
  assert.ok(m, `recorded event has a data line: ${event.slice(0, 80)}`);
  return JSON.parse(m[1]!) as Record<string, unknown>;
}

/** A verbatim `.sse` recording. */
function sseRecording(name: string): Recording {
  const events = sseEvents(name);
  return { events, payloads: events.map(parsePayload) };
}

/**
 * A `.chunks.jsonl` recording (one data payload per line) as SSE, `event: <type>` added the
 * way OpenAI sends it. `turn` picks one response when the file holds several in a row
 * (each starts at a `response.created`).
 */
function jsonlRecording(name: string, turn = 0): Recording {
  const lines = fixture(name)
    .toString('utf8')
    .split('\n')
    .filter((l) => l.trim() !== '');
  const turns: string[][] = [];
  for (const line of lines) {
    const type = (JSON.parse(line) as { type: string }).type;
    if (type === 'response.created' || turns.length === 0) turns.push([]);
    turns.at(-1)!.push(line);
  }
  const picked = turns[turn];
  assert.ok(picked, `${name} has turn ${turn}`);
  const payloads = picked.map((l) => JSON.parse(l) as Record<string, unknown>);
  const events = picked.map((l, i) => `event: ${String(payloads[i]!['type'])}\ndata: ${l}\n\n`);
  return { events, payloads };
}

/** Replays a recording as an SSE body, one write per event (with a small pause between). */
function replaySse(rec: Recording, delayMs = 0): () => ScriptedReply {
  return () => ({
    status: 200,
    headers: { 'content-type': 'text/event-stream; charset=utf-8' },
    steps: rec.events.flatMap((e) => (delayMs > 0 ? [{ delayMs }, e] : [e])),
  });
}

function completedEvent(rec: Recording): { response: Record<string, unknown> & { usage: Usage } } {
  const ev = rec.payloads.find((p) => p['type'] === 'response.completed');
  assert.ok(ev, 'the recording has a response.completed event');
  return ev as { response: Record<string, unknown> & { usage: Usage } };
}

interface Usage {
  input_tokens: number;
  input_tokens_details: { cached_tokens: number };
  output_tokens: number;
  output_tokens_details: { reasoning_tokens: number };
  total_tokens: number;
}

/** The gateway's `tokens` log field for a recorded Responses `usage`. */
function tokensOf(u: Usage): { input: number; cached: number; output: number; reasoning: number } {
  return { input: u.input_tokens, cached: u.input_tokens_details.cached_tokens, output: u.output_tokens, reasoning: u.output_tokens_details.reasoning_tokens };
}

function expectedCost(u: Usage, p: Price): number {
  const t = tokensOf(u);
  return ((t.input - t.cached) * p.input + t.cached * p.cached_input + (t.output - t.reasoning) * p.output + t.reasoning * p.reasoning) / 1_000_000;
}

function assertCost(actual: unknown, expected: number, what: string): void {
  assert.equal(typeof actual, 'number', `${what}: cost is a number`);
  assert.ok(expected > 0, 'the expected cost is not zero (the test would prove nothing)');
  assert.ok(Math.abs((actual as number) - expected) < 1e-12, `${what}: cost ${String(actual)} != expected ${expected}`);
}

/** Text of the recorded `response.output_text.done` event(s). */
function recordedText(rec: Recording): string {
  return rec.payloads
    .filter((p) => p['type'] === 'response.output_text.done')
    .map((p) => String(p['text']))
    .join('');
}

const TEXT = sseRecording('openai-responses-stream-text.sse');
const FUNCTION_CALL = sseRecording('openai-responses-stream-function-call.sse');
const GPT5_REASONING = sseRecording('openai-responses-stream-gpt5-reasoning-function-call.sse');
const ENCRYPTED_REASONING = jsonlRecording('openai-responses-stream-reasoning-encrypted.chunks.jsonl', 0);
const QUOTA_ERROR = jsonlRecording('openai-responses-stream-midstream-error-insufficient-quota.chunks.jsonl');
const ERROR_400 = fixtureJson('openai-responses-error-400.json') as { error: { message: string; code: string; param: string; type: string } };

// ---------------------------------------------------------------------------------------

describe('Responses API (/v1/responses) through the openai client', () => {
  let upstream: FakeUpstream;
  let gw: TestGateway;
  let client: OpenAI;

  before(async () => {
    ({ upstream, gw } = await startWithUpstream((url) => configYaml(url)));
    client = gw.client();
  });
  after(() => closeAll(gw, upstream));
  beforeEach(() => {
    upstream.requests.length = 0;
  });

  function onlyRequest(): ReceivedRequest {
    assert.equal(upstream.requests.length, 1, 'the upstream received exactly one request');
    return upstream.requests[0]!;
  }

  /** Upstream saw the Responses path, the upstream key, never the client key. */
  function assertForwarded(got: ReceivedRequest, upstreamModel: string): void {
    assert.equal(got.method, 'POST');
    assert.equal(got.url, '/v1/responses');
    assert.equal(got.headers['authorization'], `Bearer ${UPSTREAM_KEY}`);
    const raw = JSON.stringify(got.headers) + got.body;
    assert.ok(!raw.includes(CLIENT_KEY), 'the client key never reaches the upstream');
    assert.equal(got.json?.['model'], upstreamModel);
  }

  function finishedLineOf(requestId: string | null): Promise<Record<string, unknown>> {
    assert.ok(requestId, 'the response carries x-request-id');
    return finishedLine(gw, requestId);
  }

  test('stream: create({stream: true}) yields every recorded event; deltas join to the recorded text; usage as recorded', async () => {
    upstream.on(replaySse(TEXT, 2));
    const { data: stream, response, request_id } = await client.responses
      .create({ model: TEXT_MODEL.name, input: 'Say "streamed".', instructions: 'Follow the user instructions exactly.', stream: true })
      .withResponse();
    assert.equal(response.status, 200);
    assert.match(response.headers.get('content-type') ?? '', /^text\/event-stream/);
    const events: ResponseStreamEvent[] = [];
    for await (const ev of stream) events.push(ev);

    // Every recorded event, in order, unchanged.
    assert.deepEqual(events, TEXT.payloads);
    const text = events.flatMap((e) => (e.type === 'response.output_text.delta' ? [e.delta] : [])).join('');
    assert.equal(text, recordedText(TEXT));
    assert.equal(text, 'streamed');
    const last = events.at(-1);
    assert.equal(last?.type, 'response.completed');
    const usage = completedEvent(TEXT).response.usage;
    assert.deepEqual(last.type === 'response.completed' ? last.response.usage : null, usage);

    const got = onlyRequest();
    assertForwarded(got, TEXT_MODEL.upstream);
    assert.equal(got.json?.['stream'], true);
    assert.equal(got.headers['accept'], 'text/event-stream');
    assert.equal(got.json?.['input'], 'Say "streamed".');
    assert.equal(got.json?.['instructions'], 'Follow the user instructions exactly.');

    const line = await finishedLineOf(request_id);
    assert.equal(line['model'], TEXT_MODEL.name);
    assert.equal(line['upstream'], 'oai');
    assert.equal(line['upstream_model'], TEXT_MODEL.upstream);
    assert.equal(line['stream'], true);
    assert.equal(line['status'], 200);
    assert.equal(line['outcome'], 'ok');
    assert.deepEqual(line['tokens'], tokensOf(usage));
    assert.equal(line['tokens_estimated'], false);
    assertCost(line['cost_usd'], expectedCost(usage, TEXT_MODEL.price), 'stream text');
  });

  test('stream: responses.stream() emits text deltas and finalResponse() is the completed response', async () => {
    upstream.on(replaySse(TEXT));
    const stream = client.responses.stream({ model: TEXT_MODEL.name, input: 'Say "streamed".' });
    const deltas: string[] = [];
    stream.on('response.output_text.delta', (e) => deltas.push(e.delta));
    const final = await stream.finalResponse();
    const completed = completedEvent(TEXT).response;
    assert.equal(deltas.join(''), 'streamed');
    assert.equal(final.id, completed['id']);
    assert.equal(final.status, 'completed');
    assert.equal(final.output_text, 'streamed');
    assert.deepEqual(final.usage, completed.usage);
    assertForwarded(onlyRequest(), TEXT_MODEL.upstream);
  });

  test('stream: a function call (responses.stream) arrives whole in finalResponse()', async () => {
    upstream.on(replaySse(FUNCTION_CALL));
    const stream = client.responses.stream({
      model: TEXT_MODEL.name,
      input: 'What is the capital of France?',
      tools: [
        {
          type: 'function',
          name: 'get_capital',
          parameters: { type: 'object', properties: { country: { type: 'string' } }, required: ['country'], additionalProperties: false },
          strict: true,
        },
      ],
    });
    const argDeltas: string[] = [];
    stream.on('response.function_call_arguments.delta', (e) => argDeltas.push(e.delta));
    const final = await stream.finalResponse();
    assert.equal(argDeltas.join(''), '{"country":"France"}');
    const call = final.output[0];
    assert.equal(call?.type, 'function_call');
    assert.equal(call.type === 'function_call' ? call.name : null, 'get_capital');
    assert.equal(call.type === 'function_call' ? call.arguments : null, '{"country":"France"}');
    assert.deepEqual(final.usage, completedEvent(FUNCTION_CALL).response.usage);
    const got = onlyRequest();
    assertForwarded(got, TEXT_MODEL.upstream);
    // The tools went upstream (the model takes tools by default).
    assert.equal((got.json?.['tools'] as { name: string }[] | undefined)?.[0]?.name, 'get_capital');
  });

  test('stream: gpt-5 reasoning recording: the 448 reasoning tokens are counted and priced as reasoning', async () => {
    upstream.on(replaySse(GPT5_REASONING));
    const { data: stream, request_id } = await client.responses
      .create({ model: REASONING_MODEL.name, input: 'What is 2+2? Use final_result.', reasoning: { effort: 'low' }, stream: true })
      .withResponse();
    const events: ResponseStreamEvent[] = [];
    for await (const ev of stream) events.push(ev);
    assert.deepEqual(events, GPT5_REASONING.payloads);
    const usage = completedEvent(GPT5_REASONING).response.usage;
    assert.equal(usage.output_tokens_details.reasoning_tokens, 448);

    const got = onlyRequest();
    assertForwarded(got, REASONING_MODEL.upstream);
    assert.deepEqual(got.json?.['reasoning'], { effort: 'low' });

    const line = await finishedLineOf(request_id);
    assert.deepEqual(line['tokens'], { input: 53, cached: 0, output: 469, reasoning: 448 });
    assert.equal(line['tokens_estimated'], false);
    // Reasoning tokens are priced at `reasoning` (30/M), the rest of the output at 10/M.
    assertCost(line['cost_usd'], expectedCost(usage, REASONING_MODEL.price), 'gpt-5 reasoning');
    assert.notEqual(expectedCost(usage, REASONING_MODEL.price), expectedCost(usage, { ...REASONING_MODEL.price, reasoning: REASONING_MODEL.price.output }));
  });

  test('stream: encrypted reasoning + summary recording: finalResponse() keeps the reasoning item and its encrypted_content', async () => {
    upstream.on(replaySse(ENCRYPTED_REASONING));
    const stream = client.responses.stream({
      model: REASONING_MODEL.name,
      input: 'What is 12 * 7? Use the calculator.',
      reasoning: { effort: 'high', summary: 'detailed' },
      include: ['reasoning.encrypted_content'],
      store: false,
    });
    const summary: string[] = [];
    stream.on('response.reasoning_summary_text.delta', (e) => summary.push(e.delta));
    const final = await stream.finalResponse();
    const recordedSummary = ENCRYPTED_REASONING.payloads.find((p) => p['type'] === 'response.reasoning_summary_text.done')?.['text'];
    assert.equal(typeof recordedSummary, 'string');
    assert.equal(summary.join(''), recordedSummary);
    const completed = completedEvent(ENCRYPTED_REASONING).response as { output: { type: string; encrypted_content?: string }[]; usage: Usage };
    const reasoningItem = final.output.find((o) => o.type === 'reasoning');
    assert.ok(reasoningItem && reasoningItem.type === 'reasoning');
    assert.equal(reasoningItem.encrypted_content, completed.output.find((o) => o.type === 'reasoning')?.encrypted_content);
    assert.deepEqual(final.usage, completed.usage);
    const got = onlyRequest();
    assertForwarded(got, REASONING_MODEL.upstream);
    assert.deepEqual(got.json?.['include'], ['reasoning.encrypted_content']);
    assert.deepEqual(got.json?.['reasoning'], { effort: 'high', summary: 'detailed' });
  });

  test('non-stream: the JSON response comes back unchanged with x-switchyard-cost-usd; the upstream sees its own model id', async () => {
    const body = completedEvent(TEXT).response;
    upstream.on(() => ({ status: 200, body }));
    const { data, response, request_id } = await client.responses.create({ model: TEXT_MODEL.name, input: 'Say "streamed".' }).withResponse();
    // The SDK adds the `output_text` convenience field; the rest is the upstream's body.
    const { output_text, ...rest } = data;
    assert.equal(output_text, 'streamed');
    assert.deepEqual(rest, body);

    const got = onlyRequest();
    assertForwarded(got, TEXT_MODEL.upstream);
    assert.notEqual(got.json?.['stream'], true);
    assert.equal(got.headers['accept'], 'application/json');
    assert.deepEqual(got.json, { model: TEXT_MODEL.upstream, input: 'Say "streamed".' });

    const expected = expectedCost(body.usage, TEXT_MODEL.price);
    const header = response.headers.get('x-switchyard-cost-usd');
    assert.ok(header !== null, 'x-switchyard-cost-usd is set');
    assert.ok(Math.abs(Number(header) - expected) < 1e-9, `x-switchyard-cost-usd ${header} != ${expected}`);
    assert.equal(response.headers.get('x-switchyard-model'), TEXT_MODEL.upstream);
    assert.equal(response.headers.get('x-switchyard-upstream'), 'oai');

    const line = await finishedLineOf(request_id);
    assert.equal(line['stream'], false);
    assert.equal(line['status'], 200);
    assert.deepEqual(line['tokens'], tokensOf(body.usage));
    assertCost(line['cost_usd'], expected, 'non-stream');
  });

  test('non-stream: reasoning tokens of a JSON body are counted', async () => {
    const body = completedEvent(GPT5_REASONING).response;
    upstream.on(() => ({ status: 200, body }));
    const { request_id, response } = await client.responses.create({ model: REASONING_MODEL.name, input: 'What is 2+2?' }).withResponse();
    const line = await finishedLineOf(request_id);
    assert.deepEqual(line['tokens'], { input: 53, cached: 0, output: 469, reasoning: 448 });
    const expected = expectedCost(body.usage, REASONING_MODEL.price);
    assertCost(line['cost_usd'], expected, 'non-stream reasoning');
    assert.ok(Math.abs(Number(response.headers.get('x-switchyard-cost-usd')) - expected) < 1e-9);
  });

  for (const stream of [false, true]) {
    test(`stream=${stream}: an upstream 400 (recorded body) reaches the client as BadRequestError with the recorded message`, async () => {
      upstream.on(() => ({ status: 400, body: ERROR_400 }));
      const err = await client.responses.create({ model: TEXT_MODEL.name, input: 'hi', stream }).then(
        () => null,
        (e: unknown) => e,
      );
      assert.ok(err instanceof BadRequestError, `expected BadRequestError, got ${String(err)}`);
      assert.equal(err.status, 400);
      assert.equal(err.error && (err.error as { message?: string }).message, ERROR_400.error.message);
      assert.equal(err.code, ERROR_400.error.code);
      assert.equal(err.param, ERROR_400.error.param);
      assert.equal(err.type, ERROR_400.error.type);
      assert.equal(upstream.requests.length, 1, 'its only target is tried once');
      const line = await finishedLineOf(err.requestID ?? err.headers?.get('x-request-id') ?? null);
      assert.equal(line['status'], 400);
      // code model_not_found: this upstream lacks the model, not the caller's fault.
      assert.equal(line['error_class'], 'not_found');
      assert.equal(line['outcome'], 'upstream_error');
    });
  }

  test('stream: an insufficient_quota error right after the preamble (response.created) is not committed: it comes back as a 429 the SDK raises', async () => {
    upstream.on(replaySse(QUOTA_ERROR, 5));
    const recordedError = (QUOTA_ERROR.payloads.find((p) => p['type'] === 'error') as { error: { message: string; code: string; type: string } }).error;
    const caught = await client.responses.create({ model: REASONING_MODEL.name, input: 'hi', stream: true }).then(
      () => null,
      (e: unknown) => e,
    );
    assert.ok(caught instanceof APIError, `expected APIError, got ${String(caught)}`);
    assert.equal(caught.status, 429);
    assert.equal(caught.code, recordedError.code);
    assert.equal((caught.error as { message?: string } | undefined)?.message, recordedError.message);
    const line = gw.finished().at(-1)!;
    assert.equal(line['status'], 429);
    assert.equal(line['outcome'], 'upstream_error');
    assert.equal(line['error_class'], 'quota');
  });

  test('stream: nothing of the preamble reaches a raw client before the error, and the key never does', async () => {
    upstream.on(replaySse(QUOTA_ERROR, 5));
    const res = await fetch(`${gw.url}/v1/responses`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${CLIENT_KEY}` },
      body: JSON.stringify({ model: REASONING_MODEL.name, input: 'hi', stream: true }),
    });
    assert.equal(res.status, 429);
    const text = await res.text();
    assert.ok(!text.includes('response.created'), 'the preamble was held back');
    assert.equal((JSON.parse(text) as { error: { code: string } }).error.code, 'insufficient_quota');
    assert.ok(!text.includes(UPSTREAM_KEY));
  });

  test('responses.stream(): the error rejects finalResponse() with an APIError, with no event before it', async () => {
    upstream.on(replaySse(QUOTA_ERROR, 5));
    const stream = client.responses.stream({ model: REASONING_MODEL.name, input: 'hi' });
    const types: string[] = [];
    stream.on('event', (e) => types.push(e.type));
    const err = await stream.finalResponse().then(
      () => null,
      (e: unknown) => e,
    );
    assert.ok(err instanceof APIError, `expected APIError, got ${String(err)}`);
    assert.equal(err.code, 'insufficient_quota');
    assert.deepEqual(types, []);
  });


  test('tools: false: tools and tool_choice are dropped for the Responses API too, and listed', async () => {
    upstream.on(() => ({ status: 200, body: completedEvent(TEXT).response }));
    const { response } = await client.responses
      .create({
        model: 'gpt-limited',
        input: 'hi',
        tools: [{ type: 'function', name: 'f', parameters: { type: 'object', properties: {} }, strict: false }],
        tool_choice: 'auto',
      })
      .withResponse();
    const got = onlyRequest();
    assert.ok(got.json && !('tools' in got.json) && !('tool_choice' in got.json));
    assert.equal(response.headers.get('x-switchyard-dropped-params'), 'tools,tool_choice');
  });

  test('vision: false: an input_image part is a 400 naming the model; nothing sent', async () => {
    upstream.on(() => ({ status: 200, body: completedEvent(TEXT).response }));
    const err = await client.responses
      .create({
        model: 'gpt-limited',
        input: [
          {
            role: 'user',
            content: [
              { type: 'input_text', text: 'what is this?' },
              { type: 'input_image', image_url: 'data:image/png;base64,iVBORw0KGgo=', detail: 'auto' },
            ],
          },
        ],
      })
      .then(
        () => null,
        (e: unknown) => e,
      );
    assert.ok(err instanceof BadRequestError, `expected BadRequestError, got ${String(err)}`);
    assert.equal(err.code, 'unsupported_parameter');
    assert.equal(err.param, 'input');
    assert.match(err.message, /gpt-limited/);
    assert.equal(upstream.requests.length, 0);
  });

  test('a model whose only upstream speaks chat completions is served through the bridge (its chat endpoint), streamed and not', async () => {
    const chat = fixtureJson('openai-chat-gpt5.json');
    const text = ((chat['choices'] as Record<string, unknown>[])[0]!['message'] as { content: string }).content;
    for (const stream of [false, true]) {
      upstream.requests.length = 0;
      upstream.on(() =>
        stream
          ? { status: 200, headers: { 'content-type': 'text/event-stream' }, steps: sseEvents('openai-chat-stream-text-no-usage-2023.sse') }
          : { status: 200, body: chat },
      );
      const r = stream ? await client.responses.stream({ model: 'chat-only-model', input: 'hi' }).finalResponse() : await client.responses.create({ model: 'chat-only-model', input: 'hi' });
      assert.equal(r.status, 'completed', `stream=${stream}`);
      if (!stream) assert.equal(r.output_text, text);
      else assert.ok(r.output_text.length > 0);
      const got = onlyRequest();
      assert.equal(got.url, '/v1/chat/completions');
      assert.deepEqual(got.json?.['messages'], [{ role: 'user', content: 'hi' }]);
    }
  });

  test('the same model is still served on /v1/chat/completions (sanity for the unsupported_api case)', async () => {
    upstream.on(() => ({ status: 200, body: fixtureJson('openai-chat-gpt5.json') }));
    await client.chat.completions.create({ model: 'chat-only-model', messages: [{ role: 'user', content: 'hi' }] });
    const got = onlyRequest();
    assert.equal(got.url, '/v1/chat/completions');
    assert.equal(got.json?.['model'], 'upstream-chat-only');
  });

  test('a bad client key: 401 AuthenticationError, upstream untouched', async () => {
    upstream.on(replaySse(TEXT));
    const bad = gw.client({ apiKey: 'sk-wrong-key-0000000000000000' });
    for (const stream of [false, true]) {
      const err = await bad.responses.create({ model: TEXT_MODEL.name, input: 'hi', stream }).then(
        () => null,
        (e: unknown) => e,
      );
      assert.ok(err instanceof AuthenticationError, `stream=${stream}: expected AuthenticationError, got ${String(err)}`);
      assert.equal(err.status, 401);
    }
    assert.equal(upstream.requests.length, 0);
  });

  for (const stream of [false, true]) {
    test(`stream=${stream}: reasoning {effort: high} is forwarded to a reasoning model, no dropped-params header`, async () => {
      upstream.on(stream ? replaySse(GPT5_REASONING) : () => ({ status: 200, body: completedEvent(GPT5_REASONING).response }));
      const { data, response } = await client.responses
        .create({ model: REASONING_MODEL.name, input: 'think hard', reasoning: { effort: 'high' }, stream })
        .withResponse();
      if (stream) for await (const _ of data as AsyncIterable<unknown>) void _;
      const got = onlyRequest();
      assert.deepEqual(got.json?.['reasoning'], { effort: 'high' });
      assert.equal(response.headers.get('x-switchyard-dropped-params'), null);
    });

    test(`stream=${stream}: reasoning is dropped for a non-reasoning model and listed in x-switchyard-dropped-params`, async () => {
      upstream.on(stream ? replaySse(TEXT) : () => ({ status: 200, body: completedEvent(TEXT).response }));
      const { data, response } = await client.responses
        .create({ model: TEXT_MODEL.name, input: 'hi', reasoning: { effort: 'high' }, temperature: 0.2, stream })
        .withResponse();
      if (stream) for await (const _ of data as AsyncIterable<unknown>) void _;
      const got = onlyRequest();
      assert.ok(got.json && !('reasoning' in got.json), 'reasoning not sent upstream');
      assert.equal(got.json['temperature'], 0.2, 'other parameters pass');
      assert.equal(response.headers.get('x-switchyard-dropped-params'), 'reasoning');
    });
  }
});
