/**
 * Every translator of the support matrix (`supportedPairs()`), fed every recorded JSON
 * answer of its wire API (and a copy of it reporting cached, reasoning and cache-write
 * tokens) through `json()`: a passthrough keeps the body bytes, a translating pair's body
 * is checked against the answer itself (no src/ readers), and usage is the answer's.
 */
import assert from 'node:assert/strict';
import { after, before, describe, mock, test } from 'node:test';
import type { ApiName } from '../../src/apis/names.js';
import { GatewayError } from '../../src/errors/codes.js';
import { supportedPairs } from '../../src/translate/table.js';
import type { Usage } from '../../src/usage/usage.js';
import { expectedUsage, JSON_RECORDINGS, VARIANT_COUNTS, withUsageCounts, type Obj } from '../helpers/recording-catalog.js';
import { anthropicUsageOf, FINISH, NOW_MS, openAIUsage, responsesUsageOf, STOP_OF } from '../helpers/chat-bridge-checks.js';
import { fixture } from '../helpers/recordings.js';
import { checkResponsesJson } from '../helpers/responses-checks.js';
import { makeTranslator } from '../helpers/translate.js';

const PAIRS = supportedPairs();
const pairName = (p: { client: ApiName; wire: ApiName }): string => `${p.client} -> ${p.wire}`;

// chat -> messages stamps `created` from the clock: pinned, so every run gives the same bytes.
before(() => mock.method(Date, 'now', () => NOW_MS));
after(() => mock.restoreAll());

/** Checks a translated JSON body against the wire's answer. */
/** A chat completion's message: content, reasoning, tool calls. */
function chatMessage(answer: Obj): { content: string; reasoning: string; calls: { id: unknown; name: unknown; input: unknown }[]; finish: string } {
  const choice = (answer['choices'] as Obj[])[0]!;
  const m = choice['message'] as Obj;
  const calls = ((m['tool_calls'] as Obj[] | undefined) ?? []).map((c) => ({
    id: c['id'],
    name: (c['function'] as Obj)['name'],
    input: JSON.parse(((c['function'] as Obj)['arguments'] as string) || '{}') as unknown,
  }));
  return {
    content: typeof m['content'] === 'string' ? m['content'] : '',
    reasoning: String(m['reasoning_content'] ?? m['reasoning'] ?? ''),
    calls,
    finish: String(choice['finish_reason']),
  };
}

const JSON_CHECKS: Readonly<Record<string, (body: Obj, answer: Obj, usage: Usage) => void>> = {
  'responses -> messages': checkResponsesJson,
  'responses -> chat': (body, answer, usage) => {
    const want = chatMessage(answer);
    assert.deepEqual([body['object'], body['model'], body['status']], ['response', answer['model'], want.finish === 'length' ? 'incomplete' : 'completed']);
    assert.match(String(body['id']), /^resp_/);
    const output = body['output'] as Obj[];
    const of = (type: string) => output.filter((i) => i['type'] === type);
    assert.equal(
      of('message')
        .map((m) => (m['content'] as Obj[])[0]!['text'])
        .join(''),
      want.content,
    );
    assert.equal(
      of('reasoning')
        .map((m) => (m['content'] as Obj[])[0]!['text'])
        .join(''),
      want.reasoning,
    );
    assert.deepEqual(
      of('function_call').map((c) => ({ id: c['call_id'], name: c['name'], input: JSON.parse(c['arguments'] as string) as unknown })),
      want.calls,
    );
    assert.deepEqual(body['usage'], responsesUsageOf(usage));
  },
  'messages -> chat': (body, answer, usage) => {
    const want = chatMessage(answer);
    assert.deepEqual(
      [body['type'], body['role'], body['model'], body['stop_reason']],
      ['message', 'assistant', answer['model'], STOP_OF[want.finish] ?? 'end_turn'],
    );
    const blocks = body['content'] as Obj[];
    const of = (type: string) => blocks.filter((b) => b['type'] === type);
    assert.equal(
      of('text')
        .map((b) => b['text'])
        .join(''),
      want.content,
    );
    assert.equal(
      of('thinking')
        .map((b) => b['thinking'])
        .join(''),
      want.reasoning,
    );
    assert.deepEqual(
      of('tool_use').map((b) => ({ id: b['id'], name: b['name'], input: b['input'] })),
      want.calls,
    );
    assert.deepEqual(body['usage'], anthropicUsageOf(usage));
  },
  'chat -> messages': (body, msg, usage) => {
    const blocks = msg['content'] as Obj[];
    const of = (type: string): Obj[] => blocks.filter((b) => b['type'] === type);
    assert.deepEqual([body['id'], body['object'], body['model']], [msg['id'], 'chat.completion', msg['model']]);
    const choices = body['choices'] as Obj[];
    assert.equal(choices.length, 1);
    assert.equal(choices[0]!['finish_reason'], FINISH[msg['stop_reason'] as string]);
    const message = choices[0]!['message'] as Obj;
    assert.equal(message['role'], 'assistant');
    const texts = of('text').map((b) => b['text'] as string);
    assert.equal(message['content'], texts.length > 0 ? texts.join('') : null);
    const thinking = of('thinking').map((b) => b['thinking'] as string);
    assert.equal(message['reasoning_content'], thinking.length > 0 ? thinking.join('') : undefined);
    assert.deepEqual(
      ((message['tool_calls'] as Obj[] | undefined) ?? []).map((c) => ({
        id: c['id'],
        type: c['type'],
        name: (c['function'] as Obj)['name'],
        input: JSON.parse((c['function'] as Obj)['arguments'] as string) as unknown,
      })),
      of('tool_use').map((b) => ({ id: b['id'], type: 'function', name: b['name'], input: b['input'] })),
    );
    assert.deepEqual(body['usage'], openAIUsage(usage));
  },
};

for (const pair of PAIRS) {
  const { client, wire, passthrough } = pair;
  describe(`${pairName(pair)} on recorded JSON answers`, () => {
    test('a body that is JSON but not an object is a bad response', () => {
      for (const v of [[], 'text', 42, null, true]) {
        const raw = Buffer.from(JSON.stringify(v));
        assert.throws(
          () => makeTranslator(client, wire, { stream: false }).json(raw, v),
          (e: unknown) => e instanceof GatewayError && e.code === 'GW_ERR_UPSTREAM_BAD_RESPONSE',
          JSON.stringify(v),
        );
      }
    });

    for (const name of JSON_RECORDINGS[wire]) {
      for (const variant of [false, true]) {
        const tag = variant ? `${name} reporting cached, reasoning and cache-write tokens` : name;
        test(`${tag}: ${passthrough ? 'body bytes unchanged' : 'translated body'}, usage the answer's`, () => {
          const recorded = fixture(name);
          const parsed = variant ? withUsageCounts(wire, JSON.parse(recorded.toString('utf8')) as Obj) : (JSON.parse(recorded.toString('utf8')) as Obj);
          const raw = variant ? Buffer.from(JSON.stringify(parsed)) : recorded;
          const want = expectedUsage(wire, parsed['usage'] as Obj);
          if (variant) assert.equal(want.cached, VARIANT_COUNTS.cached);
          const out = makeTranslator(client, wire, { stream: false }).json(raw, JSON.parse(raw.toString('utf8')));
          assert.deepEqual(out.usage, want);
          if (passthrough) assert.ok(out.body.equals(raw), 'the upstream bytes, unchanged');
          else JSON_CHECKS[pairName(pair)]!(JSON.parse(out.body.toString('utf8')) as Obj, parsed, want);
        });
      }
    }
  });
}
