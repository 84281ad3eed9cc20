/**
 * The text a stream relay keeps for a usage estimate (src/pipeline/generated-text.ts): read
 * in batches once the unread event data passes its budget, it is the recording's own
 * generated text whatever the budget, and a long stream's unread data never grows past the
 * budget plus one event. Driven with the real chat passthrough translator over every
 * recorded chat stream, as the relay drives it.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { DEFERRED_BUDGET_BYTES, GeneratedText } from '../../src/pipeline/generated-text.js';
import { SseFramer } from '../../src/sse/parse.js';
import type { Translator } from '../../src/translate/types.js';
import { STREAM_RECORDINGS, sseBody, streamFacts } from '../helpers/recording-catalog.js';
import { makeTranslator } from '../helpers/translate.js';

/** Feeds a recorded body event by event, stopping at a failure as the relay does; returns the kept text. */
function keep(tr: Translator, body: Buffer, budget: number): { text: string; reasoning: string } {
  const g = new GeneratedText(tr, budget);
  const framer = new SseFramer();
  for (const ev of framer.push(body)) {
    const step = tr.event(ev);
    g.add(step);
    if (step.error || step.done) break;
  }
  g.readDeferred();
  return { text: g.text.join(''), reasoning: g.reasoning.join('') };
}

describe('generated text kept for an estimate', () => {
  for (const name of STREAM_RECORDINGS.chat) {
    test(`${name}: the recording's text and reasoning, read at every event, in batches, at the default budget or only at the end`, () => {
      const facts = streamFacts('chat', sseBody(name));
      for (const budget of [0, 512, DEFERRED_BUDGET_BYTES, Number.POSITIVE_INFINITY]) {
        const got = keep(makeTranslator('chat', 'chat'), sseBody(name), budget);
        assert.equal(got.text, facts.text, `text, budget ${budget}`);
        assert.equal(got.reasoning, facts.reasoning, `reasoning, budget ${budget}`);
      }
    });
  }

  test('a long stream is read in batches no larger than the budget plus one event', () => {
    const tr = makeTranslator('chat', 'chat');
    const batches: number[] = [];
    let largest = 0;
    // The real translator, its reads observed.
    const observed: Translator = {
      ...tr,
      event: (ev) => {
        if (ev.data) largest = Math.max(largest, ev.data.length);
        return tr.event(ev);
      },
      generated: (events) => {
        batches.push(events.reduce((n, e) => n + e.length, 0));
        return tr.generated!(events);
      },
    };
    const body = sseBody('openai-chat-stream-text-no-usage-2023.sse');
    const budget = 1024;
    const got = keep(observed, body, budget);
    assert.equal(got.text, streamFacts('chat', body).text);
    assert.ok(batches.length > 10, `read in ${batches.length} batches`);
    for (const b of batches) assert.ok(b <= budget + largest, `a batch of ${b} chars (budget ${budget}, largest event ${largest})`);
  });

  test('a frame read at once (content beside a usage object) keeps its place after the frames still waiting', () => {
    const tr = makeTranslator('chat', 'chat');
    const chunk = (content: string, usage = false): string =>
      `data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta: { content }, finish_reason: null }], ...(usage ? { usage: { prompt_tokens: 3, completion_tokens: 3, total_tokens: 6 } } : {}) })}\n\n`;
    const g = new GeneratedText(tr);
    const body = Buffer.from(chunk('one ') + chunk('two ') + chunk('three ', true) + chunk('four'));
    for (const ev of new SseFramer().push(body)) g.add(tr.event(ev));
    g.readDeferred();
    assert.equal(g.text.join(''), 'one two three four');
  });

  test('many tiny frames count toward the budget too: 2,000 `{}` frames are read in batches', () => {
    const tr = makeTranslator('chat', 'chat');
    let reads = 0;
    const g = new GeneratedText({ ...tr, generated: (events) => (reads++, tr.generated!(events)) });
    for (const ev of new SseFramer().push(Buffer.from('data: {}\n\n'.repeat(2000)))) g.add(tr.event(ev));
    assert.ok(reads >= 3, `read ${reads} times`);
  });

  test('a stream within the budget is never read when it completes with its usage', () => {
    const tr = makeTranslator('chat', 'chat');
    let reads = 0;
    const g = new GeneratedText({ ...tr, generated: (events) => (reads++, tr.generated!(events)) });
    for (const ev of new SseFramer().push(sseBody('openai-chat-stream-text-include-usage.sse'))) g.add(tr.event(ev));
    assert.equal(reads, 0);
  });
});
