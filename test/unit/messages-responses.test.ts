/**
 * messages -> responses on the way back, one event shape per test, from the recordings
 * (test/fixtures/openai-responses-*) and streams derived from them
 * (test/helpers/responses-variants.ts): what an Anthropic client gets for each thing a
 * Responses stream or answer holds. The whole-stream checks of every recording are in
 * translators-streams.test.ts.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { messagesApi } from '../../src/apis/messages.js';
import { SseFramer } from '../../src/sse/parse.js';
import { anthropicStream, anthropicUsageOf, checkMessagesOverResponses, expectedMessage } from '../helpers/anthropic-client-checks.js';
import { sseBody, streamFacts, streamsOf, streamWithUsageCounts, VARIANT_COUNTS, type Obj } from '../helpers/recording-catalog.js';
import { fixture } from '../helpers/recordings.js';
import { completedResponse, framed, incompleteVariant, recordedEvents, wholeArgumentVariants } from '../helpers/responses-variants.js';
import { drive, makeTranslator } from '../helpers/translate.js';

const TEXT = 'openai-responses-stream-text.sse';
const CALL = 'openai-responses-stream-function-call.sse';
const REASONING_CALL = 'openai-responses-stream-gpt5-reasoning-function-call.sse';
const SUMMARY = 'openai-responses-stream-reasoning-encrypted.chunks.jsonl';
const QUOTA = 'openai-responses-stream-midstream-error-insufficient-quota.chunks.jsonl';

const run = (body: Buffer, promptTokens?: number) => drive(makeTranslator('messages', 'responses', promptTokens === undefined ? {} : { promptTokens }), [body]);

describe('messages -> responses stream', () => {
  test('response.created -> message_start, held as a preamble, announcing the prompt estimate', () => {
    const tr = makeTranslator('messages', 'responses', { promptTokens: 1234 });
    const steps = new SseFramer().push(sseBody(TEXT)).map((ev) => tr.event(ev));
    assert.equal(steps[0]!.hold, true);
    assert.equal(steps[0]!.frames?.length, 1);
    const { events } = anthropicStream(Buffer.concat(steps.flatMap((s) => [...(s.frames ?? [])])).toString());
    const message = events[0]!['message'] as Obj;
    assert.deepEqual(message['usage'], { input_tokens: 1234, output_tokens: 0 });
    assert.deepEqual([message['model'], message['stop_reason'], message['content']], [completedResponse(TEXT)['model'], null, []]);
    assert.equal(String(steps[0]!.frames![0]), `event: message_start\ndata: ${JSON.stringify(events[0])}\n\n`);
    assert.ok(
      steps.slice(1).every((s) => s.hold !== true),
      'only the preamble is held',
    );
  });

  test('output_text deltas -> one text block, end_turn, the exact usage in message_delta', () => {
    const d = run(sseBody(TEXT), 50);
    const { events, blocks } = anthropicStream(d.text);
    const want = expectedMessage(completedResponse(TEXT));
    assert.deepEqual(
      blocks.map((b) => [b['type'], b.deltas]),
      [['text', want.text]],
    );
    assert.deepEqual(events.at(-2)!['delta'], { stop_reason: 'end_turn', stop_sequence: null });
    assert.deepEqual(events.at(-2)!['usage'], anthropicUsageOf(streamFacts('responses', sseBody(TEXT)).usage), 'not the estimate');
  });

  test('reasoning summary deltas -> a thinking block with an empty signature, before the tool_use block', () => {
    const [first] = streamsOf(SUMMARY, 'responses');
    const { blocks } = anthropicStream(run(first!.body).text);
    const summary = recordedEvents(SUMMARY)
      .filter((e) => e['type'] === 'response.reasoning_summary_text.delta')
      .map((e) => e['delta'])
      .join('');
    assert.ok(summary.length > 20);
    assert.deepEqual(
      blocks.map((b) => b['type']),
      ['thinking', 'tool_use'],
    );
    assert.deepEqual([blocks[0]!.deltas, blocks[0]!['signature']], [summary.slice(0, blocks[0]!.deltas.length), '']);
    assert.equal(blocks[0]!.deltas, expectedMessage(completedResponse(SUMMARY)).thinking[0]);
  });

  test('a reasoning item with encrypted content only gives no thinking block', () => {
    const { blocks } = anthropicStream(run(sseBody(REASONING_CALL)).text);
    assert.deepEqual(
      blocks.map((b) => b['type']),
      ['tool_use'],
    );
  });

  test('a second summary part of the same reasoning item is set apart by a blank line', () => {
    const events = recordedEvents(SUMMARY);
    const end = events.findIndex((e) => e['type'] === 'response.completed') + 1;
    let seen = 0;
    const twoParts = events.slice(0, end).map((e) => (e['type'] === 'response.reasoning_summary_text.delta' && seen++ >= 3 ? { ...e, summary_index: 1 } : e));
    const { blocks } = anthropicStream(run(framed(twoParts)).text);
    const deltas = events.filter((e) => e['type'] === 'response.reasoning_summary_text.delta').map((e) => e['delta'] as string);
    assert.equal(blocks[0]!.deltas, `${deltas.slice(0, 3).join('')}\n\n${deltas.slice(3).join('')}`);
  });

  test('function_call_arguments deltas -> a tool_use block (id: the call id) with one input_json_delta each, stop_reason tool_use', () => {
    const d = run(sseBody(CALL));
    const { events, blocks } = anthropicStream(d.text);
    const recorded = recordedEvents(CALL)
      .filter((e) => e['type'] === 'response.function_call_arguments.delta')
      .map((e) => e['delta']);
    const pieces = events.filter((e) => e['type'] === 'content_block_delta').map((e) => (e['delta'] as Obj)['partial_json']);
    assert.deepEqual(pieces, recorded);
    checkMessagesOverResponses(d.text, streamFacts('responses', sseBody(CALL)));
    assert.equal(blocks[0]!['id'], expectedMessage(completedResponse(CALL)).calls[0]!.id);
  });

  for (const { label, body } of wholeArgumentVariants(CALL)) {
    test(`${label}: the tool_use input comes once, whole`, () => {
      const d = run(body);
      assert.equal(d.error, null);
      const { events } = anthropicStream(d.text);
      const call = expectedMessage(completedResponse(CALL)).calls[0]!;
      const pieces = events.filter((e) => e['type'] === 'content_block_delta').map((e) => (e['delta'] as Obj)['partial_json']);
      assert.deepEqual(pieces, [call.args]);
      checkMessagesOverResponses(d.text, streamFacts('responses', body));
      assert.equal(d.generated, `${String(call.name)}${call.args}`, 'the name and arguments counted once');
    });
  }

  test('response.incomplete for max_output_tokens -> stop_reason max_tokens', () => {
    const { events } = anthropicStream(run(incompleteVariant(TEXT)).text);
    assert.deepEqual(events.at(-2)!['delta'], { stop_reason: 'max_tokens', stop_sequence: null });
  });

  test('cache reads -> cache_read_input_tokens; input_tokens counts the rest', () => {
    const body = streamWithUsageCounts('responses', sseBody(TEXT), 'openai');
    const d = run(body);
    const usage = anthropicStream(d.text).events.at(-2)!['usage'] as Obj;
    assert.equal(usage['cache_read_input_tokens'], VARIANT_COUNTS.cached);
    assert.equal(usage['input_tokens'], d.usage!.input - VARIANT_COUNTS.cached);
    assert.equal(usage['output_tokens'], d.usage!.output);
  });

  test('the step that writes message_stop is marked done, and only it', () => {
    const tr = makeTranslator('messages', 'responses');
    const steps = new SseFramer().push(sseBody(CALL)).map((ev) => tr.event(ev));
    const done = steps.filter((s) => s.done === true);
    assert.equal(done.length, 1);
    assert.ok(
      Buffer.concat([...done[0]!.frames!])
        .toString()
        .includes('event: message_stop\n'),
    );
    assert.equal(steps.at(-1), done[0]);
  });
});

describe('messages -> responses failures, in Anthropic shape', () => {
  test('an error event mid-stream: one error frame {type: error, error: {type, message}}, class quota', () => {
    const d = run(sseBody(QUOTA));
    assert.equal(d.error?.classified.class, 'quota');
    const last = d.text
      .split(/(?<=\n\n)/)
      .filter((f) => f !== '')
      .at(-1)!;
    const message = (recordedEvents(QUOTA).find((e) => e['type'] === 'error')!['error'] as Obj)['message'];
    assert.ok(last.startsWith('event: error\n'), last);
    const data = JSON.parse(last.slice(last.indexOf('data: ') + 6)) as Obj;
    assert.equal(data['type'], 'error');
    assert.equal((data['error'] as Obj)['message'], message);
    assert.equal(typeof (data['error'] as Obj)['type'], 'string');
  });

  test('response.failed without an error event: the response error is the failure', () => {
    const events = recordedEvents(QUOTA).filter((e) => e['type'] !== 'error');
    const d = run(framed(events));
    const failed = events.find((e) => e['type'] === 'response.failed')!['response'] as Obj;
    assert.equal(d.error?.error.message, (failed['error'] as Obj)['message']);
  });

  test('an HTTP 400 (recording) keeps its status and message; the client body is Anthropic-shaped', () => {
    const body = fixture('openai-responses-error-400.json');
    const f = makeTranslator('messages', 'responses').error(400, {}, body);
    const message = ((JSON.parse(body.toString()) as Obj)['error'] as Obj)['message'];
    assert.deepEqual(messagesApi.errorBody(f.error), { type: 'error', error: { type: 'invalid_request_error', message } });
  });

  test('an HTTP 429 (recording) becomes rate_limit_error with its Retry-After', () => {
    const body = fixture('openai-error-429-rate-limit-exceeded.json');
    const f = makeTranslator('messages', 'responses').error(429, { 'retry-after': '3' }, body);
    assert.equal(f.classified.class, 'rate_limited');
    assert.equal((messagesApi.errorBody(f.error) as { error: { type: string } }).error.type, 'rate_limit_error');
    assert.equal(f.error.headers['retry-after'], '3');
  });
});

describe("messages -> responses JSON answers (the recordings' completed response objects)", () => {
  for (const name of [TEXT, CALL, REASONING_CALL, SUMMARY]) {
    test(`${name}: content blocks, stop reason and usage`, () => {
      const response = completedResponse(name);
      const raw = Buffer.from(JSON.stringify(response));
      const out = makeTranslator('messages', 'responses', { stream: false }).json(raw, response);
      const body = JSON.parse(out.body.toString()) as Obj;
      const want = expectedMessage(response);
      const content = body['content'] as Obj[];
      assert.deepEqual(
        [body['type'], body['role'], body['model'], body['stop_reason'], body['stop_sequence']],
        ['message', 'assistant', response['model'], want.stop, null],
      );
      assert.equal(
        content
          .filter((b) => b['type'] === 'text')
          .map((b) => b['text'])
          .join(''),
        want.text,
      );
      assert.deepEqual(
        content.filter((b) => b['type'] === 'thinking').map((b) => b['thinking']),
        want.thinking,
      );
      assert.deepEqual(
        content.filter((b) => b['type'] === 'tool_use').map((b) => ({ id: b['id'], name: b['name'], input: b['input'] })),
        want.calls.map((c) => ({ id: c.id, name: c.name, input: c.input })),
      );
      assert.deepEqual(body['usage'], anthropicUsageOf(out.usage));
      assert.ok(out.usage && out.usage.input > 0);
    });
  }

  test('a failed response sent with a 2xx status is a failure, not an answer', () => {
    const failed = recordedEvents(QUOTA).find((e) => e['type'] === 'response.failed')!['response'] as Obj;
    const out = makeTranslator('messages', 'responses', { stream: false }).json(Buffer.from(JSON.stringify(failed)), failed);
    assert.equal(out.failure?.classified.class, 'quota');
  });
});
