/**
 * The OpenAI Responses API (`POST /v1/responses`) through Switchyard, streamed and not:
 * events and bodies relay unchanged, the model id is rewritten for the upstream, the
 * provider key replaces the client's, and usage (reasoning tokens included) and cost are
 * recorded.
 *
 * Driven by the official `openai` client against a fake upstream replaying recorded
 * Responses streams and bodies (test/helpers/responses-api.ts).
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { ResponseStreamEvent } from 'openai/resources/responses/responses';
import {
  ENCRYPTED_REASONING,
  FUNCTION_CALL,
  GPT5_REASONING,
  REASONING_MODEL,
  TEXT,
  TEXT_MODEL,
  assertCost,
  assertForwarded,
  client,
  completedEvent,
  expectedCost,
  finishedLineOf,
  onlyRequest,
  recordedText,
  replaySse,
  tokensOf,
  upstream,
  useResponsesGateway,
  type Usage,
} from '../helpers/responses-api.js';

describe('Responses API (/v1/responses) through the openai client', () => {
  useResponsesGateway();

  test('stream: create({stream: true}) yields every recorded event; deltas join to the recorded text; usage as recorded', async () => {
    upstream.on(replaySse(TEXT, 2));
    const {
      data: stream,
      response,
      request_id,
    } = await client.responses
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
});
