/**
 * `StreamStep.done` (src/translate/types.ts), for every translator pair on every complete
 * stream recording of its wire API, split several ways: exactly one step is marked done;
 * its frames hold the client API's terminal event (chat `data: [DONE]`, Responses
 * `response.completed` / `response.incomplete`, Messages `message_stop`), and no frame
 * before it does; the usage the relay holds by then is the recording's own (nothing the
 * record needs comes after the terminal event). A stream cut before its answer completed,
 * or one that fails, has no done step.
 */
import assert from 'node:assert/strict';
import { after, before, describe, mock, test } from 'node:test';
import type { ApiName } from '../../src/apis/names.js';
import { SseFramer, terminated } from '../../src/sse/parse.js';
import { supportedPairs } from '../../src/translate/table.js';
import type { StreamStep, Translator } from '../../src/translate/types.js';
import type { Usage } from '../../src/usage/usage.js';
import { readSse, STREAM_RECORDINGS, streamFacts, streamsOf, type Obj } from '../helpers/recording-catalog.js';
import { randomPieces } from '../helpers/splits.js';
import { makeTranslator } from '../helpers/translate.js';

before(() => mock.method(Date, 'now', () => 1_760_000_000_000));
after(() => mock.restoreAll());

/** Whether one frame is the client API's terminal event. */
function isTerminal(client: ApiName, frame: string): boolean {
  const [ev] = readSse(frame);
  if (!ev || ev.data === null) return false;
  if (client === 'chat') return ev.data === '[DONE]';
  if (ev.data === '[DONE]') return false;
  const type = (JSON.parse(ev.data) as Obj)['type'];
  return client === 'responses' ? type === 'response.completed' || type === 'response.incomplete' : type === 'message_stop';
}

interface Walked {
  /** Index (in `steps`) of each step marked done. */
  readonly doneAt: number[];
  readonly steps: { readonly step: StreamStep; readonly frames: string[] }[];
  /** The usage held when the done step was taken (that step's included). */
  readonly usageAtDone: Usage | null;
  readonly failed: boolean;
}

/** Feeds `pieces` through `tr` as the relay does (events, then `end()` unless a failure or done step came first). */
function walk(tr: Translator, pieces: readonly Buffer[]): Walked {
  const framer = new SseFramer();
  const steps: Walked['steps'][number][] = [];
  const doneAt: number[] = [];
  let usage: Usage | null = null;
  let usageAtDone: Usage | null = null;
  let failed = false;
  const take = (step: StreamStep): boolean => {
    if (step.usage) usage = step.usage;
    steps.push({ step, frames: (step.frames ?? []).map((f) => f.toString('utf8')) });
    if (step.done) {
      doneAt.push(steps.length - 1);
      usageAtDone = usage;
    }
    if (step.error) failed = true;
    return failed || step.done === true;
  };
  for (const p of pieces) for (const ev of framer.push(p)) if (take(tr.event(ev))) return { doneAt, steps, usageAtDone, failed };
  const flushed = framer.end();
  const tail = flushed && terminated(flushed);
  if (tail && take(tr.event(tail))) return { doneAt, steps, usageAtDone, failed };
  take(tr.end());
  return { doneAt, steps, usageAtDone, failed };
}

for (const { client, wire } of supportedPairs()) {
  describe(`${client} -> ${wire}`, () => {
    for (const name of STREAM_RECORDINGS[wire]) {
      for (const { label, body } of streamsOf(name, wire)) {
        const facts = streamFacts(wire, body);
        if (facts.errorAt !== null) {
          test(`${label}: a failing stream has no done step`, () => {
            const w = walk(makeTranslator(client, wire), [body]);
            assert.ok(w.failed);
            assert.deepEqual(w.doneAt, []);
          });
          continue;
        }
        test(`${label}: one done step, holding the terminal event, with the recording's usage`, () => {
          for (const pieces of [[body], randomPieces(body, 7)]) {
            const w = walk(makeTranslator(client, wire), pieces);
            assert.equal(w.failed, false);
            assert.equal(w.doneAt.length, 1, 'exactly one done step');
            const at = w.doneAt[0]!;
            assert.ok(
              w.steps[at]!.frames.some((f) => isTerminal(client, f)),
              'the done step writes the terminal event',
            );
            assert.ok(!w.steps.slice(0, at).some((s) => s.frames.some((f) => isTerminal(client, f))), 'no terminal event before it');
            if (facts.usage) assert.deepEqual(w.usageAtDone, facts.usage, 'the usage was read by the done step');
          }
        });
        test(`${label}: cut before the answer completed, no done step`, () => {
          const events = facts.events;
          const completing = events.findIndex(
            (_e, i) =>
              streamFacts(
                wire,
                Buffer.from(
                  events
                    .slice(0, i + 1)
                    .map((e) => e.raw)
                    .join(''),
                ),
              ).complete,
          );
          assert.ok(completing > 0);
          const cut = Buffer.from(
            events
              .slice(0, completing)
              .map((e) => e.raw)
              .join(''),
          );
          const w = walk(makeTranslator(client, wire), [cut]);
          assert.deepEqual(w.doneAt, []);
          assert.ok(w.failed, 'cut short');
        });
      }
    }
  });
}
