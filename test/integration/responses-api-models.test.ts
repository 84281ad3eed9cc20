/**
 * The OpenAI Responses API (`POST /v1/responses`) through Switchyard, per model: tools and
 * vision a model lacks, a model with no Responses-capable upstream served through the chat
 * bridge, and `reasoning` only sent to reasoning models.
 *
 * Driven by the official `openai` client against a fake upstream replaying recorded
 * Responses streams and bodies (test/helpers/responses-api.ts).
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { BadRequestError } from 'openai';
import { fixtureJson, sseEvents } from '../helpers/recordings.js';
import {
  GPT5_REASONING,
  REASONING_MODEL,
  TEXT,
  TEXT_MODEL,
  client,
  completedEvent,
  onlyRequest,
  replaySse,
  upstream,
  useResponsesGateway,
} from '../helpers/responses-api.js';

describe('Responses API (/v1/responses) through the openai client', () => {
  useResponsesGateway();

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
      const r = stream
        ? await client.responses.stream({ model: 'chat-only-model', input: 'hi' }).finalResponse()
        : await client.responses.create({ model: 'chat-only-model', input: 'hi' });
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
