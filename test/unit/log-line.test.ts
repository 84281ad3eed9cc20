/**
 * The `request finished` line built as one string (record/log-line.ts) is the line pino
 * writes for the same fields through `info(object)`, on the gateway's own logger
 * (server/logger.ts: ISO time, `service`/`pid` base, redaction on) and a request child.
 */
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { describe, test } from 'node:test';
import { pino, type Logger } from 'pino';
import { createLogger } from '../../src/server/logger.js';
import { LINE_KEYS, logRecord } from '../../src/record/log-line.js';
import type { RequestRecord } from '../../src/record/request.js';

/** A logger on the gateway's options writing into `lines`, and a request child of it. */
function capture(level = 'info'): { lines: string[]; child: Logger } {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      lines.push(chunk.toString());
      done();
    },
  });
  const child: Logger = createLogger(level, stream).child({ request_id: 'req-"1"' }) as unknown as Logger;
  return { lines, child };
}

const BASE: RequestRecord = {
  requestId: 'req-1',
  api: 'chat',
  key: 'team-a',
  model: 'gpt-x',
  requestedModel: 'gpt-x',
  upstream: 'openai',
  upstreamModel: 'gpt-x-2026',
  stream: true,
  status: 200,
  outcome: 'ok',
  errorClass: null,
  startedAt: 0,
  durationMs: 1234,
  ttftMs: 56,
  usage: { input: 10, cached: 2, output: 7, reasoning: 3, cacheWrite: 0, cacheWrite1h: 0 },
  usageEstimated: false,
  costUsd: 0.000123,
  attempts: 1,
  fallback: null,
  shed: null,
  tags: {},
};

/** What finish.ts logged before record/log-line.ts: the object, through pino. */
function viaPino(rec: RequestRecord): Record<string, unknown> {
  const u = rec.usage;
  return {
    api: rec.api,
    key: rec.key,
    model: rec.model,
    requested_model: rec.requestedModel,
    upstream: rec.upstream,
    upstream_model: rec.upstreamModel,
    stream: rec.stream,
    status: rec.status,
    outcome: rec.outcome,
    error_class: rec.errorClass,
    attempts: rec.attempts,
    duration_ms: rec.durationMs,
    ttft_ms: rec.ttftMs,
    tokens: {
      input: u.input,
      cached: u.cached,
      output: u.output,
      reasoning: u.reasoning,
      ...(u.cacheWrite ? { cache_write: u.cacheWrite } : {}),
      ...(u.cacheWrite1h ? { cache_write_1h: u.cacheWrite1h } : {}),
    },
    tokens_estimated: rec.usageEstimated,
    cost_usd: rec.costUsd,
    ...(rec.shed !== null ? { shed: rec.shed } : {}),
    ...(rec.fallback !== null ? { fallback: rec.fallback } : {}),
    ...(rec.cache ? { cache: rec.cache } : {}),
    ...(Object.keys(rec.tags).length > 0 ? { tags: rec.tags } : {}),
    ...(rec.transport === 'websocket' ? { transport: 'websocket' } : {}),
  };
}

/** The line without its time (the two lines are written a moment apart). */
const timeless = (line: string): string => line.replace(/"time":"[^"]+"/, '"time":"T"');

const CASES: [string, RequestRecord][] = [
  ['a plain served call', BASE],
  [
    'nulls everywhere, an error, no key',
    {
      ...BASE,
      api: null,
      key: null,
      model: null,
      requestedModel: null,
      upstream: null,
      upstreamModel: null,
      status: 401,
      outcome: 'client_error',
      errorClass: 'auth',
      ttftMs: null,
      costUsd: 0,
      attempts: 0,
    },
  ],
  [
    'shed, fallback, cache, tags, websocket, cache writes',
    {
      ...BASE,
      shed: 'deep->cheap',
      fallback: 'a->b',
      cache: 'warm',
      tags: { team: 'x', 'odd"key': 'v\\n' },
      transport: 'websocket',
      usage: { ...BASE.usage, cacheWrite: 100, cacheWrite1h: 40 },
    },
  ],
  [
    'strings JSON must escape, a non-finite cost',
    { ...BASE, model: 'm"\\\n\t\u0001é😀', requestedModel: 'x'.repeat(300), costUsd: Number.NaN, durationMs: Number.POSITIVE_INFINITY },
  ],
  ['http transport is not written', { ...BASE, transport: 'http' }],
  // A client can send a lone surrogate as the model; pino writes it raw, which is U+FFFD once encoded.
  ['a short string with a lone surrogate', { ...BASE, requestedModel: 'nope\ud800', model: '\udfff' }],
];

describe('request finished line', () => {
  for (const [name, rec] of CASES) {
    test(`${name}: the same bytes as pino's info(object)`, () => {
      const ours = capture();
      const theirs = capture();
      logRecord(ours.child, rec);
      theirs.child.info(viaPino(rec), 'request finished');
      assert.equal(ours.lines.length, 1);
      assert.equal(timeless(ours.lines[0]!), timeless(theirs.lines[0]!));
      assert.match(ours.lines[0]!, /^\{"level":"info","time":"\d{4}-\d\d-\d\dT[^"]+Z","service":"switchyard","pid":\d+,"request_id":"req-\\"1\\"","api":/);
      JSON.parse(ours.lines[0]!);
    });
  }

  test('a long string with a lone surrogate is written as U+FFFD too, never as an escape strict readers refuse', () => {
    const { lines, child } = capture();
    logRecord(child, { ...BASE, requestedModel: `${'m'.repeat(150)}\ud800` });
    assert.doesNotMatch(lines[0]!, /\\ud8/);
    assert.equal((JSON.parse(lines[0]!) as { requested_model: string }).requested_model, `${'m'.repeat(150)}\ufffd`);
  });

  test('a pino logger the gateway did not make, or a child with its own redaction, gets the line through info(): its options apply', () => {
    const lines: string[] = [];
    const stream = new Writable({
      write(chunk: Buffer, _enc, done) {
        lines.push(chunk.toString());
        done();
      },
    });
    logRecord(pino({ redact: ['key', 'tags.team'] }, stream), { ...BASE, tags: { team: 'x' } });
    const { lines: ours, child } = capture();
    logRecord(child.child({}, { redact: ['requested_model'] }), BASE);
    logRecord(child.child({}, { serializers: { model: () => 'serialised' } }), BASE);
    const [a, b, c] = [...lines, ...ours].map((l) => JSON.parse(l) as Record<string, unknown>);
    assert.equal(a!['key'], '[Redacted]');
    assert.deepEqual(a!['tags'], { team: '[Redacted]' });
    assert.equal(b!['requested_model'], '[Redacted]');
    assert.equal(c!['model'], 'serialised');
  });

  test('LINE_KEYS (whose serializers send the line through pino) are the keys of a line with every field set', () => {
    const { lines, child } = capture();
    logRecord(child, CASES[2]![1]);
    const keys = Object.keys(JSON.parse(lines[0]!) as object).filter((k) => !['level', 'time', 'service', 'pid', 'request_id'].includes(k));
    assert.deepEqual(keys, [...LINE_KEYS]);
  });

  test('nothing when info is off', () => {
    const { lines, child } = capture('warn');
    logRecord(child, BASE);
    assert.deepEqual(lines, []);
  });

  test('a logger that is not pino gets the same fields as one object', () => {
    const got: [object, string][] = [];
    logRecord({ info: (obj, msg) => got.push([obj, msg]) }, CASES[2]![1]);
    assert.equal(got.length, 1);
    assert.equal(got[0]![1], 'request finished');
    assert.deepEqual(got[0]![0], JSON.parse(JSON.stringify(viaPino(CASES[2]![1]))));
  });
});
