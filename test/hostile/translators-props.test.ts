/**
 * Property tests over every translator of the support matrix (issue 30), called as the
 * pipeline calls them (pure functions, no network):
 * - request: a client body the route's schema and nesting cap let through, prepared for the
 *   model (`prepare`), then `request()`: nothing thrown but a GatewayError, the wire body
 *   JSON-serialisable, the client's body not mutated, Object.prototype untouched;
 * - json: a recorded answer with fields removed or replaced: a GatewayError at most, the
 *   client body JSON, usage counts finite and non-negative;
 * - error: any status and body: a Failure (never a throw) whose message holds no secret;
 * - stream: recorded events cut, dropped, moved, edited, with odd frames: `event()` and
 *   `end()` never throw, every data frame the client gets is JSON (or `[DONE]`), and the
 *   stream ends with exactly one terminal event of the client API (its own end or its
 *   error event), nothing after it.
 * fast-check's own seeds (printed on a failure, with the shrunk input) are used.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { Value } from '@sinclair/typebox/value';
import { APIS } from '../../src/apis/index.js';
import type { ApiName } from '../../src/apis/names.js';
import { MAX_NESTING } from '../../src/apis/nesting.js';
import { GatewayError } from '../../src/errors/codes.js';
import { ChatRequestSchema } from '../../src/pipeline/chat-request.js';
import { MessagesRequestSchema } from '../../src/routes/messages.js';
import { ResponsesRequestSchema } from '../../src/routes/responses.js';
import { supportedPairs } from '../../src/translate/table.js';
import type { Usage } from '../../src/usage/usage.js';
import { parseTestConfig } from '../helpers/config.js';
import { errorAnswer, jsonAnswer, knownBad, NO_TO_STRING, streamAnswer } from '../helpers/hostile-answers.js';
import { hostile, rawJson, VALID_BODIES } from '../helpers/hostile-bodies.js';
import { hostileConfigYaml, UPSTREAM_SECRET } from '../helpers/hostile-gateway.js';
import { readSse } from '../helpers/recording-catalog.js';
import { drive, makeTranslator } from '../helpers/translate.js';

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const RUNS = 150;

const CONFIG = parseTestConfig(hostileConfigYaml('http://127.0.0.1:9'), {});
/** The account and model of each wire API in the hostile config. */
const ON_WIRE: Readonly<Record<ApiName, { upstream: string; model: string }>> = {
  chat: { upstream: 'chat', model: 'm-chat' },
  responses: { upstream: 'resp', model: 'm-resp' },
  messages: { upstream: 'anth', model: 'm-anth' },
};
const SCHEMAS = { chat: ChatRequestSchema, responses: ResponsesRequestSchema, messages: MessagesRequestSchema } as const;

const ctxFor = (wire: ApiName, over: { stream?: boolean; wantsUsage?: boolean } = {}) => ({
  secrets: [UPSTREAM_SECRET],
  options: CONFIG.upstreams.get(ON_WIRE[wire].upstream)!.options as Record<string, unknown>,
  // As the pipeline makes them: Messages wire requests get prompt-cache breakpoints (translate/messages-cache.ts).
  cacheBreakpoints: 'auto' as const,
  ...over,
});

function depth(v: unknown): number {
  if (v === null || typeof v !== 'object') return 0;
  let d = 0;
  for (const c of Array.isArray(v) ? v : Object.values(v)) d = Math.max(d, depth(c));
  return d + 1;
}

/** Rethrows anything but a GatewayError. */
function onlyGatewayErrors(fn: () => void): void {
  try {
    fn();
  } catch (err) {
    if (!(err instanceof GatewayError)) throw err;
  }
}

function checkUsage(usage: Usage | null): void {
  if (usage === null) return;
  for (const [k, v] of Object.entries(usage)) assert.ok(typeof v === 'number' && Number.isFinite(v) && v >= 0, `usage.${k} is a count: ${String(v)}`);
}

/** Client bodies that made a translator throw a TypeError before the fixes of issue 30 (an item `type` `String()` throws on). */
const KNOWN_BAD_BODIES: Readonly<Record<ApiName, Obj>> = {
  chat: { model: 'm-chat', messages: [{ role: 'user', content: [{ type: [NO_TO_STRING()], text: 'x' }] }] },
  responses: { model: 'm-resp', input: [{ type: [NO_TO_STRING()], id: 'rs_a', summary: [], encrypted_content: '' }] },
  messages: { model: 'm-anth', messages: [{ role: 'user', content: [{ type: [NO_TO_STRING()], text: 'x' }] }] },
};

const prototypeKeys = (): string[] => Object.getOwnPropertyNames(Object.prototype).sort();
const PROTOTYPE = prototypeKeys();

/** The events a client receives, comments left out. */
const eventsOf = (text: string) => readSse(text).filter((e) => e.data !== null || e.event !== null);

/**
 * Whether `e` ends a stream of `client`: its own terminal event or its error event. A typed
 * event's type is its data's `type`, else its `event:` name, as the translators read it
 * (src/translate/read.ts `typeOf`).
 */
function terminal(client: ApiName, e: { data: string | null; event: string | null }): boolean {
  const data: unknown = e.data === null || e.data === '[DONE]' ? null : JSON.parse(e.data);
  if (client === 'chat') return e.data === '[DONE]' || (isObj(data) && 'error' in data);
  const type = isObj(data) && typeof data['type'] === 'string' ? data['type'] : e.event;
  if (client === 'responses') return ['response.completed', 'response.incomplete', 'response.failed', 'error'].includes(type ?? '');
  return type === 'message_stop' || type === 'error';
}

for (const { client, wire } of supportedPairs()) {
  describe(`${client} -> ${wire}`, () => {
    test('request: a GatewayError at most; the wire body is JSON; the client body and Object.prototype untouched', () => {
      const model = CONFIG.models.get(ON_WIRE[wire].model)!;
      const bodies = fc
        .oneof(VALID_BODIES[client], hostile(VALID_BODIES[client]))
        .map((b) => JSON.parse(rawJson(b)) as unknown)
        .filter((b): b is Obj => Value.Check(SCHEMAS[client], b) && depth(b) <= MAX_NESTING);
      fc.assert(
        fc.property(bodies, (body) => {
          const before = structuredClone(body);
          onlyGatewayErrors(() => {
            const prepared = APIS[client].prepare(body, 'up-model', model, true).body;
            const api = APIS[client];
            const tr = makeTranslator(client, wire, ctxFor(wire, { stream: prepared['stream'] === true, wantsUsage: api.wantsUsage(prepared) }));
            const out = tr.request(prepared);
            assert.equal(typeof JSON.stringify(out.body), 'string');
            assert.ok(Object.values(out.headers ?? {}).every((h) => typeof h === 'string'));
          });
          assert.deepEqual(body, before, 'the client body is not mutated');
          assert.deepEqual(prototypeKeys(), PROTOTYPE, 'Object.prototype untouched');
        }),
        { numRuns: RUNS, includeErrorInReport: true, examples: [[KNOWN_BAD_BODIES[client]]] },
      );
    });

    test('json: a GatewayError at most; the client body is JSON with counts', () => {
      fc.assert(
        fc.property(jsonAnswer(wire), (parsed) => {
          const raw = Buffer.from(JSON.stringify(parsed) ?? 'null');
          onlyGatewayErrors(() => {
            const r = makeTranslator(client, wire, ctxFor(wire, { stream: false })).json(raw, JSON.parse(raw.toString('utf8')));
            if (r.failure) {
              assert.ok(r.failure.error instanceof GatewayError);
              return;
            }
            const body = JSON.parse(r.body.toString('utf8')) as unknown;
            assert.ok(typeof body === 'object' && body !== null && !Array.isArray(body), 'the answer is an object');
            checkUsage(r.usage);
          });
        }),
        { numRuns: RUNS, includeErrorInReport: true, examples: [[knownBad(wire).json]] },
      );
    });

    test('error: always a Failure in gateway terms, with no secret in it', () => {
      fc.assert(
        fc.property(errorAnswer, fc.boolean(), ({ status, body, retryAfter }, leak) => {
          const sent = leak ? Buffer.from(body.toString('utf8').replace('"message":"', `"message":"key ${UPSTREAM_SECRET} `)) : body;
          const f = makeTranslator(client, wire, ctxFor(wire)).error(status, retryAfter === undefined ? {} : { 'retry-after': retryAfter }, sent);
          assert.ok(f.error instanceof GatewayError);
          assert.ok(f.error.status >= 400 && f.error.status <= 599, `status ${f.error.status}`);
          const shown =
            JSON.stringify(APIS[client].errorBody(f.error)) + APIS[client].sseErrorFrame(f.error).toString('utf8') + JSON.stringify(f.error.headers);
          assert.ok(!shown.includes(UPSTREAM_SECRET), 'the upstream key is scrubbed');
          for (const v of Object.values(f.error.headers)) assert.equal(typeof v, 'string');
        }),
        { numRuns: RUNS, includeErrorInReport: true },
      );
    });

    test('stream: never a throw; JSON frames; exactly one terminal event, last', () => {
      fc.assert(
        fc.property(streamAnswer(wire), fc.boolean(), (sse, wantsUsage) => {
          const d = drive(makeTranslator(client, wire, ctxFor(wire, { stream: true, wantsUsage })), [Buffer.from(sse, 'utf8')]);
          if (d.error) assert.ok(d.error.error instanceof GatewayError);
          checkUsage(d.usage);
          const events = eventsOf(d.text);
          for (const e of events) if (e.data !== null && e.data !== '[DONE]') JSON.parse(e.data);
          const ends = events.flatMap((e, i) => (terminal(client, e) ? [i] : []));
          assert.deepEqual(ends, [events.length - 1], `one terminal event, last: ${d.text.slice(-300)}`);
        }),
        { numRuns: RUNS, includeErrorInReport: true, examples: [[knownBad(wire).stream, true]] },
      );
    });
  });
}
