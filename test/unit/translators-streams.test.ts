/**
 * Every translator of the support matrix (`supportedPairs()`), fed every recorded stream of
 * its wire API, driven as the relay drives it (test/helpers/translate.ts). Expected values
 * come from the recording itself, read by test/helpers/recording-catalog.ts (no src/
 * readers); the client-output checks of translating pairs are in test/helpers (chat
 * pairs: chat-bridge-checks.ts). Plus the checks that every recording is used.
 *
 * Streams: one piece, byte by byte and seeded random reads give identical client bytes,
 * usage and generated text; a passthrough's client bytes are the upstream's (minus chat's
 * usage-only chunk when the client did not ask for usage, plus a missing `[DONE]` /
 * `message_stop` after a complete answer); usage is the recording's; a mid-stream error is
 * one failure of the expected class, and nothing follows its error frame.
 * (JSON answers: translators-json.test.ts; error bodies: translators-errors.test.ts.)
 */
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { after, before, describe, mock, test } from 'node:test';
import type { ApiName } from '../../src/apis/names.js';
import type { FailureClass } from '../../src/errors/classify.js';
import { supportedPairs } from '../../src/translate/table.js';
import {
  ERROR_RECORDINGS,
  JSON_RECORDINGS,
  NOT_SPOKEN,
  readSse,
  STREAM_RECORDINGS,
  streamFacts,
  streamsOf,
  streamWithUsageCounts,
  VARIANT_COUNTS,
  type Obj,
  type StreamFacts,
} from '../helpers/recording-catalog.js';
import { checkMessagesOverResponses } from '../helpers/anthropic-client-checks.js';
import {
  checkChatOverMessages,
  checkChatOverResponses,
  checkMessagesOverChat,
  checkResponsesOverChat,
  NOW_MS,
  type ClientCheck,
} from '../helpers/chat-bridge-checks.js';
import { FIXTURES } from '../helpers/recordings.js';
import { checkResponsesStream } from '../helpers/responses-checks.js';
import { byteByByte, randomPieces, SEEDS } from '../helpers/splits.js';
import { drive, makeTranslator, sameIds, type Driven } from '../helpers/translate.js';

const PAIRS = supportedPairs();
const pairName = (p: { client: ApiName; wire: ApiName }): string => `${p.client} -> ${p.wire}`;

// chat -> messages stamps `created` from the clock: pinned, so every run gives the same bytes.
before(() => mock.method(Date, 'now', () => NOW_MS));
after(() => mock.restoreAll());

/** The class a recorded mid-stream failure must get (what the router acts on), and why. */
const STREAM_ERROR_CLASS: Readonly<Record<string, FailureClass>> = {
  // error.code 400 "Token limit reached": the request's own limit, no other target does better.
  'openrouter-chat-stream-midstream-error.sse': 'bad_request',
  // error.type/code insufficient_quota: the account's balance is spent.
  'openai-responses-stream-midstream-error-insufficient-quota.chunks.jsonl': 'quota',
};

const DONE = 'data: [DONE]\n\n';
const MESSAGE_STOP = 'event: message_stop\ndata: {"type":"message_stop"}\n\n';

describe('the recordings', () => {
  const used = [...Object.values(STREAM_RECORDINGS), ...Object.values(JSON_RECORDINGS), ...Object.values(ERROR_RECORDINGS)].flat();
  const excluded = NOT_SPOKEN.map((n) => n.name);

  test('every file in test/fixtures is used by these tests or listed as an API the gateway does not speak', () => {
    const files = readdirSync(FIXTURES).sort();
    assert.ok(files.length >= 30, `found ${files.length}`);
    const unaccounted = files.filter((f) => !used.includes(f) && !excluded.includes(f));
    assert.deepEqual(unaccounted, []);
  });

  test('no recording is listed twice, and every listed one exists', () => {
    const all = [...used, ...excluded];
    assert.equal(new Set(all).size, all.length);
    const files = new Set(readdirSync(FIXTURES));
    assert.deepEqual(
      all.filter((f) => !files.has(f)),
      [],
    );
    for (const n of NOT_SPOKEN) assert.ok(n.reason.length > 20, `${n.name} says why`);
  });

  test('every supported pair has stream and error recordings of its wire API', () => {
    assert.ok(PAIRS.length >= 4);
    for (const p of PAIRS) {
      assert.ok(STREAM_RECORDINGS[p.wire].length > 0, `${pairName(p)}: streams`);
      assert.ok(ERROR_RECORDINGS[p.wire].length > 0, `${pairName(p)}: errors`);
      if (!p.passthrough) assert.ok(CLIENT_CHECKS[pairName(p)], `${pairName(p)}: a client-output check in this file`);
    }
  });

  test('every recorded mid-stream failure has its expected class here', () => {
    const failing = Object.entries(STREAM_RECORDINGS).flatMap(([wire, names]) =>
      names.filter((n) => streamsOf(n, wire as ApiName).some((s) => streamFacts(wire as ApiName, s.body).errorAt !== null)),
    );
    assert.deepEqual(failing.sort(), Object.keys(STREAM_ERROR_CLASS).sort());
  });
});

// ---------------------------------------------------------------------------------------
// Streams

/** What drive() gives, in comparable form. */
function comparable(d: Driven): unknown {
  return {
    text: sameIds(d.text),
    usage: d.usage,
    generated: d.generated,
    reasoning: d.reasoning,
    failure: d.error ? { classified: d.error.classified, message: d.error.error.message } : null,
  };
}

/** The client bytes a passthrough must write before any error frame. */
function passthroughBytes(client: ApiName, facts: StreamFacts, wantsUsage: boolean): string {
  const end = facts.errorAt ?? facts.events.length;
  let out = '';
  for (let i = 0; i < end; i++) {
    if (client === 'chat' && !wantsUsage && facts.usageOnly.has(i)) continue;
    out += facts.events[i]!.raw;
  }
  if (facts.errorAt === null && facts.complete && !facts.terminated) out += client === 'chat' ? DONE : client === 'messages' ? MESSAGE_STOP : '';
  return out;
}

/** The one SSE event after `prefix` in `text`: the client API's error frame, parsed. */
function errorFrame(text: string, prefix: string): { event: string | null; data: Obj } {
  assert.ok(text.startsWith(prefix), 'the client got every frame before the failure, unchanged');
  const rest = readSse(text.slice(prefix.length));
  assert.equal(rest.length, 1, `exactly one frame after the failure: ${text.slice(prefix.length, prefix.length + 300)}`);
  assert.ok(rest[0]!.raw.endsWith('\n\n'));
  return { event: rest[0]!.event, data: JSON.parse(rest[0]!.data!) as Obj };
}

/** The message the client's error frame carries, in each client API's dialect. */
function frameMessage(client: ApiName, frame: { event: string | null; data: Obj }): unknown {
  if (client === 'messages') {
    assert.equal(frame.event, 'error');
    assert.equal(frame.data['type'], 'error');
  }
  if (client === 'responses') assert.equal(frame.event, 'error');
  return (frame.data['error'] as Obj)['message'];
}

const CLIENT_CHECKS: Readonly<Record<string, ClientCheck>> = {
  'responses -> messages': (out, facts) => checkResponsesStream(out, facts),
  'messages -> responses': (out, facts) => checkMessagesOverResponses(out, facts),
  'chat -> responses': checkChatOverResponses,
  'responses -> chat': checkResponsesOverChat,
  'messages -> chat': checkMessagesOverChat,
  'chat -> messages': checkChatOverMessages,
};

for (const pair of PAIRS) {
  const { client, wire, passthrough } = pair;
  describe(`${pairName(pair)} on recorded streams`, () => {
    for (const name of STREAM_RECORDINGS[wire]) {
      for (const { label, body } of streamsOf(name, wire)) {
        const facts = streamFacts(wire, body);
        // Only chat clients choose whether they get the usage event.
        for (const wantsUsage of client === 'chat' ? [true, false] : [true]) {
          const run = (pieces: Buffer[]): Driven => drive(makeTranslator(client, wire, { wantsUsage }), pieces);
          const tag = client === 'chat' ? `${label} (include_usage ${wantsUsage})` : label;

          test(`${tag}: one piece, byte by byte and ${SEEDS.length} seeded splits give the same output, usage and text`, () => {
            const whole = comparable(run([body]));
            assert.deepEqual(comparable(run(byteByByte(body))), whole, 'byte by byte');
            for (const seed of SEEDS) assert.deepEqual(comparable(run(randomPieces(body, seed))), whole, `seed ${seed}`);
          });

          test(`${tag}: client output`, () => {
            const d = run([body]);
            if (passthrough) {
              const want = passthroughBytes(client, facts, wantsUsage);
              if (facts.errorAt === null) assert.equal(d.text, want);
              else errorFrame(d.text, want);
            } else if (facts.errorAt === null) {
              CLIENT_CHECKS[pairName(pair)]!(d.text, facts, wantsUsage);
            } else {
              assert.ok(d.error, 'a recording that fails mid-stream fails the translated stream (its frames: the test below)');
            }
          });

          test(`${tag}: usage is the recording's`, () => {
            assert.deepEqual(run([body]).usage, facts.usage);
          });

          if (facts.usage !== null) {
            test(`${tag}: usage is read in full (a copy of the recording reporting cached, reasoning and cache-write tokens)`, () => {
              for (const dialect of wire === 'chat' ? (['openai', 'deepseek'] as const) : (['openai'] as const)) {
                const variant = streamWithUsageCounts(wire, body, dialect);
                const want = streamFacts(wire, variant).usage!;
                assert.equal(want.cached, VARIANT_COUNTS.cached, 'the variant reports cached tokens');
                assert.equal(want.cacheWrite, wire === 'responses' || dialect === 'deepseek' ? undefined : VARIANT_COUNTS.written);
                const d = run([variant]);
                assert.deepEqual(d.usage, want, dialect);
                if (!passthrough && facts.errorAt === null) CLIENT_CHECKS[pairName(pair)]!(d.text, streamFacts(wire, variant), wantsUsage);
              }
            });
          }

          test(`${tag}: generated text and reasoning are the recording's (content, tool names and arguments; reasoning apart)`, () => {
            const d = run([body]);
            assert.ok(facts.text !== '' || facts.reasoning !== '' || facts.errorAt !== null, 'the recording generated something');
            assert.equal(d.generated, facts.text, 'text');
            assert.equal(d.reasoning, facts.reasoning, 'reasoning');
          });

          if (facts.errorAt !== null) {
            test(`${tag}: the mid-stream error is one failure of class ${STREAM_ERROR_CLASS[name]}, and nothing follows its error frame`, () => {
              const d = run([body]);
              assert.ok(d.error, 'a failure');
              assert.equal(d.error.classified.class, STREAM_ERROR_CLASS[name]);
              // The client got what came before the error event (a passthrough: those bytes), then one error frame.
              const events = readSse(d.text);
              const prefix = passthrough
                ? passthroughBytes(client, facts, wantsUsage)
                : events
                    .slice(0, -1)
                    .map((e) => e.raw)
                    .join('');
              const frame = errorFrame(d.text, prefix);
              assert.equal(frameMessage(client, frame), facts.errorFields!['message']);
            });
          }
        }
      }
    }
  });
}
