/**
 * OpenTelemetry tracing, end to end: the real gateway with `OTEL_EXPORTER_OTLP_ENDPOINT`
 * pointed at an OTLP/HTTP receiver started here (JSON encoding, so the spans can be read
 * back), called with the official `openai` SDK carrying a known `traceparent`, in front of
 * fake upstreams that record the `traceparent` they receive. And the same gateway with no
 * endpoint: nothing exported, the client's own trace headers passed on unchanged.
 */
import assert from 'node:assert/strict';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import { sep } from 'node:path';
import { after, before, describe, test } from 'node:test';
import OpenAI from 'openai';
import { FakeUpstream, type ScriptedReply } from '../helpers/fake-upstream.js';
import { CLIENT_KEY, UPSTREAM_KEY, closeAll, finishedLine, startGateway, testConfigYaml, waitFor, type TestGateway } from '../helpers/gateway.js';

/** One attribute as OTLP/JSON writes it. */
interface OtlpAttribute {
  key: string;
  value: { stringValue?: string; intValue?: number | string; doubleValue?: number; boolValue?: boolean };
}

/** One span as OTLP/JSON writes it (ids in hex). */
interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes: OtlpAttribute[];
  status?: { code?: number };
}

/** OTLP span kinds and status codes (opentelemetry-proto, trace.proto). */
const KIND_SERVER = 2;
const KIND_CLIENT = 3;
const STATUS_ERROR = 2;

/** An OTLP/HTTP traces receiver on loopback: keeps every export's headers, raw body and spans. */
class OtlpReceiver {
  readonly exports: { headers: IncomingHttpHeaders; body: string }[] = [];
  readonly spans: OtlpSpan[] = [];
  readonly resources: OtlpAttribute[][] = [];
  private readonly server: Server = createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on('data', (c: Buffer) => parts.push(c));
    req.on('end', () => {
      const body = Buffer.concat(parts).toString('utf8');
      this.exports.push({ headers: req.headers, body });
      if (req.url === '/v1/traces' && String(req.headers['content-type']).includes('application/json')) {
        const doc = JSON.parse(body) as { resourceSpans: { resource: { attributes: OtlpAttribute[] }; scopeSpans: { spans: OtlpSpan[] }[] }[] };
        for (const rs of doc.resourceSpans) {
          this.resources.push(rs.resource.attributes);
          for (const ss of rs.scopeSpans) this.spans.push(...ss.spans);
        }
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{}');
    });
  });
  url = '';

  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  close(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }

  /** The spans of one trace. */
  trace(traceId: string): OtlpSpan[] {
    return this.spans.filter((s) => s.traceId === traceId);
  }
}

/** A span's attributes as plain values. */
function attrs(span: OtlpSpan): Record<string, string | number | boolean> {
  const out: Record<string, string | number | boolean> = {};
  for (const { key, value } of span.attributes) {
    out[key] = value.stringValue ?? (value.intValue !== undefined ? Number(value.intValue) : undefined) ?? value.doubleValue ?? value.boolValue!;
  }
  return out;
}

const hex = (n: number): string => Array.from({ length: n }, () => Math.floor(Math.random() * 16).toString(16)).join('');
/** A fresh W3C traceparent (sampled unless `flags` says otherwise). */
function traceparent(flags = '01'): { header: string; traceId: string; parentId: string } {
  const traceId = hex(32);
  const parentId = hex(16);
  return { header: `00-${traceId}-${parentId}-${flags}`, traceId, parentId };
}
const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

const PROMPT = 'prompt-text-never-in-a-span';
const REPLY = 'reply-text-never-in-a-span';
const COLLECTOR_TOKEN = 'collector-token-5f2c9d';

function completion(usage = { prompt_tokens: 5, completion_tokens: 2, total_tokens: 7 }): ScriptedReply {
  return {
    status: 200,
    body: {
      id: 'chatcmpl-trace',
      object: 'chat.completion',
      created: 1700000000,
      model: 'upstream-model-x',
      choices: [{ index: 0, message: { role: 'assistant', content: REPLY, refusal: null }, finish_reason: 'stop' }],
      usage,
    },
  };
}

function streamed(): ScriptedReply {
  const chunk = (o: Record<string, unknown>) =>
    `data: ${JSON.stringify({ id: 'chatcmpl-s', object: 'chat.completion.chunk', created: 1700000000, model: 'upstream-model-x', ...o })}\n\n`;
  return {
    steps: [
      chunk({ choices: [{ index: 0, delta: { role: 'assistant', content: REPLY }, finish_reason: null }] }),
      { delayMs: 20 },
      chunk({ choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] }),
      chunk({ choices: [], usage: { prompt_tokens: 7, completion_tokens: 3, total_tokens: 10 } }),
      'data: [DONE]\n\n',
    ],
  };
}

/**
 * Whether an OpenTelemetry SDK package (core, resources, sdk-trace, an exporter) was loaded
 * into this process: they are CommonJS, so they land in the require cache. The API package
 * itself is left out: prom-client loads it for its exemplars whatever tracing does. The
 * "off" suite runs first in this file and nothing else here imports the SDK.
 */
const otelLoaded = (): boolean =>
  Object.keys(createRequire(import.meta.url).cache).some((k) => k.includes(`${sep}@opentelemetry${sep}`) && !k.includes(`${sep}@opentelemetry${sep}api${sep}`));

const message = [{ role: 'user' as const, content: PROMPT }];
const client = (gw: TestGateway, headers: Record<string, string> = {}) =>
  new OpenAI({ apiKey: CLIENT_KEY, baseURL: `${gw.url}/v1`, maxRetries: 0, defaultHeaders: headers });

describe('tracing off', () => {
  let receiver: OtlpReceiver;
  let upstream: FakeUpstream;
  let gw: TestGateway;

  before(async () => {
    receiver = await new OtlpReceiver().start();
    upstream = await new FakeUpstream().start();
    upstream.on(() => completion());
    // No OTEL_* endpoint at all: the default.
    gw = await startGateway(
      testConfigYaml(upstream.url),
      { TEST_UPSTREAM_KEY: UPSTREAM_KEY },
      { TEST_UPSTREAM_KEY: UPSTREAM_KEY, OTEL_SERVICE_NAME: 'not-used' },
    );
  });
  after(async () => {
    await closeAll(gw, upstream, receiver);
  });

  test("with no endpoint, the client's own traceparent and tracestate reach the upstream unchanged and none is added", async () => {
    const tp = traceparent();
    await client(gw, { traceparent: tp.header, tracestate: 'a=1,b=2' }).chat.completions.create({ model: 'gpt-test', messages: message });
    assert.equal(upstream.requests.at(-1)!.headers['traceparent'], tp.header);
    assert.equal(upstream.requests.at(-1)!.headers['tracestate'], 'a=1,b=2');

    await client(gw).chat.completions.create({ model: 'gpt-test', messages: message });
    assert.equal(upstream.requests.at(-1)!.headers['traceparent'], undefined, 'no traceparent added');

    await client(gw, { traceparent: 'not-a-traceparent', tracestate: 'a=1' }).chat.completions.create({ model: 'gpt-test', messages: message });
    assert.equal(upstream.requests.at(-1)!.headers['traceparent'], undefined, 'an invalid traceparent is not passed on');
    assert.equal(upstream.requests.at(-1)!.headers['tracestate'], undefined);
    assert.ok(!gw.logs.some((l) => l.includes('tracing')), 'no tracing log line');
    assert.equal(otelLoaded(), false, 'no OpenTelemetry SDK module loaded while tracing is off');
  });

  test('OTEL_SDK_DISABLED=true turns it off even with an endpoint set: nothing exported, no traceparent added', async () => {
    const disabled = await startGateway(
      testConfigYaml(upstream.url),
      { TEST_UPSTREAM_KEY: UPSTREAM_KEY },
      {
        TEST_UPSTREAM_KEY: UPSTREAM_KEY,
        OTEL_SDK_DISABLED: 'true',
        OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
        OTEL_BSP_SCHEDULE_DELAY: '20',
      },
    );
    try {
      await client(disabled).chat.completions.create({ model: 'gpt-test', messages: message });
      assert.equal(upstream.requests.at(-1)!.headers['traceparent'], undefined);
    } finally {
      // Closing flushes whatever a running SDK would have buffered.
      await disabled.close();
    }
    assert.equal(receiver.exports.length, 0, 'nothing exported');
    assert.equal(otelLoaded(), false, 'no OpenTelemetry SDK module loaded');
  });
});

describe('tracing on (OTLP/HTTP JSON to a receiver in the test)', () => {
  let receiver: OtlpReceiver;
  let up1: FakeUpstream;
  let up2: FakeUpstream;
  let gw: TestGateway;

  before(async () => {
    receiver = await new OtlpReceiver().start();
    up1 = await new FakeUpstream().start();
    up2 = await new FakeUpstream().start();
    const yaml = testConfigYaml(up1.url, { extraUpstreams: [up2.url], routing: '  strategy: cheap\n  max_attempts: 2' });
    gw = await startGateway(
      yaml,
      { TEST_UPSTREAM_KEY: UPSTREAM_KEY },
      {
        TEST_UPSTREAM_KEY: UPSTREAM_KEY,
        OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
        OTEL_EXPORTER_OTLP_HEADERS: `authorization=Bearer%20${COLLECTOR_TOKEN}`,
        OTEL_BSP_SCHEDULE_DELAY: '20',
      },
    );
  });
  after(async () => {
    await closeAll(gw, up1, up2, receiver);
  });

  test('the request span continues the client traceparent; the attempt span is its child and is the upstream call parent', async () => {
    up1.on(() => completion());
    const tp = traceparent();
    const { data, response } = await client(gw, { traceparent: tp.header, tracestate: 'vendor=opaque' })
      .chat.completions.create({ model: 'gpt-test', messages: message })
      .withResponse();
    assert.equal(data.choices[0]!.message.content, REPLY);
    await finishedLine(gw, response.headers.get('x-request-id')!);
    const spans = await waitFor(() => (receiver.trace(tp.traceId).length >= 2 ? receiver.trace(tp.traceId) : null), 5000, 'two spans of the trace');
    assert.equal(spans.length, 2);

    const call = spans.find((s) => s.kind === KIND_SERVER)!;
    const attempt = spans.find((s) => s.kind === KIND_CLIENT)!;
    assert.ok(call && attempt, 'one SERVER and one CLIENT span');
    assert.equal(call.name, 'chat gpt-test');
    assert.equal(call.parentSpanId, tp.parentId, "the request span's parent is the client's span");
    assert.equal(attempt.name, 'chat upstream-model-x');
    assert.equal(attempt.parentSpanId, call.spanId, 'the attempt span is a child of the request span');

    const sent = up1.requests.at(-1)!.headers;
    const m = TRACEPARENT.exec(String(sent['traceparent']));
    assert.ok(m, `the upstream got a traceparent: ${String(sent['traceparent'])}`);
    assert.equal(m[1], tp.traceId, 'same trace');
    assert.equal(m[2], attempt.spanId, "its parent is the attempt's span");
    assert.equal(m[3], '01', 'sampled');
    assert.equal(sent['tracestate'], 'vendor=opaque', 'tracestate passed on');

    const c = attrs(call);
    assert.equal(c['gen_ai.operation.name'], 'chat');
    assert.equal(c['gen_ai.request.model'], 'gpt-test');
    assert.equal(c['gen_ai.response.model'], 'upstream-model-x');
    assert.equal(c['gen_ai.usage.input_tokens'], 5);
    assert.equal(c['gen_ai.usage.output_tokens'], 2);
    assert.equal(c['http.response.status_code'], 200);
    assert.equal(c['switchyard.key'], 'team-a');
    assert.equal(c['switchyard.upstream'], 'fake');
    assert.equal(c['switchyard.model'], 'gpt-test');
    assert.equal(c['switchyard.attempts'], 1);
    assert.equal(c['switchyard.queue_ms'], 0);
    assert.equal(c['switchyard.outcome'], 'ok');
    assert.equal(c['switchyard.stream'], false);
    assert.equal(c['switchyard.request_id'], response.headers.get('x-request-id'));
    assert.ok(Math.abs(Number(c['switchyard.cost_usd']) - (5 * 2.5 + 2 * 10) / 1e6) < 1e-12, `cost ${c['switchyard.cost_usd']}`);
    assert.ok(!('error.type' in c) && call.status?.code !== STATUS_ERROR);

    const a = attrs(attempt);
    assert.equal(a['gen_ai.operation.name'], 'chat');
    assert.equal(a['gen_ai.provider.name'], 'openai');
    assert.equal(a['gen_ai.request.model'], 'upstream-model-x');
    assert.equal(a['gen_ai.response.model'], 'upstream-model-x');
    assert.equal(a['gen_ai.usage.input_tokens'], 5);
    assert.equal(a['gen_ai.usage.output_tokens'], 2);
    assert.equal(a['server.address'], '127.0.0.1');
    assert.equal(a['server.port'], Number(new URL(up1.url).port));
    assert.equal(a['http.response.status_code'], 200);
    assert.equal(a['switchyard.upstream'], 'fake');
    assert.equal(a['switchyard.attempt'], 1);
    assert.equal(a['switchyard.queue_ms'], 0);

    // Resource, exporter headers, and what must never be exported or logged.
    const resource = receiver.resources.at(-1)!;
    assert.equal(resource.find((r) => r.key === 'service.name')?.value.stringValue, 'switchyard');
    assert.equal(receiver.exports.at(-1)!.headers['authorization'], `Bearer ${COLLECTOR_TOKEN}`, 'OTEL_EXPORTER_OTLP_HEADERS sent to the collector');
    const exported = receiver.exports.map((e) => e.body).join('\n');
    for (const secret of [PROMPT, REPLY, CLIENT_KEY, UPSTREAM_KEY, COLLECTOR_TOKEN])
      assert.ok(!exported.includes(secret), `exported spans carry no ${secret.slice(0, 12)}…`);
    assert.ok(!gw.logs.join('\n').includes(COLLECTOR_TOKEN), 'the collector token is never logged');
    assert.ok(
      gw.logs.some((l) => l.includes('tracing on')),
      'start-up says tracing is on',
    );
    assert.equal(otelLoaded(), true, 'the SDK is loaded once tracing is on');
  });

  test('a failover yields two attempt spans under the request span, the failed one with error.type', async () => {
    up1.on(() => ({ status: 500, body: { error: { message: 'boom', type: 'server_error' } } }));
    up2.on(() => completion({ prompt_tokens: 4, completion_tokens: 1, total_tokens: 5 }));
    const tp = traceparent();
    const { response } = await client(gw, { traceparent: tp.header }).chat.completions.create({ model: 'gpt-test', messages: message }).withResponse();
    await finishedLine(gw, response.headers.get('x-request-id')!);
    const spans = await waitFor(() => (receiver.trace(tp.traceId).length >= 3 ? receiver.trace(tp.traceId) : null), 5000, 'three spans of the trace');
    const call = spans.find((s) => s.kind === KIND_SERVER)!;
    const attempts = spans
      .filter((s) => s.kind === KIND_CLIENT)
      .sort((x, y) => Number(attrs(x)['switchyard.attempt']) - Number(attrs(y)['switchyard.attempt']));
    assert.equal(attempts.length, 2);
    for (const a of attempts) assert.equal(a.parentSpanId, call.spanId);

    const [first, second] = attempts.map(attrs);
    assert.equal(first!['switchyard.upstream'], 'fake');
    assert.equal(first!['http.response.status_code'], 500);
    assert.equal(first!['error.type'], 'server');
    assert.equal(attempts[0]!.status?.code, STATUS_ERROR);
    assert.equal(second!['switchyard.upstream'], 'fake2');
    assert.equal(second!['switchyard.attempt'], 2);
    assert.equal(second!['gen_ai.usage.input_tokens'], 4);
    assert.ok(!('error.type' in second!));

    const c = attrs(call);
    assert.equal(c['switchyard.attempts'], 2);
    assert.equal(c['switchyard.upstream'], 'fake2');
    assert.equal(c['gen_ai.usage.output_tokens'], 1);

    // Each upstream request's parent is its own attempt's span.
    const parentOf = (u: FakeUpstream) => TRACEPARENT.exec(String(u.requests.at(-1)!.headers['traceparent']))?.[2];
    assert.equal(parentOf(up1), attempts[0]!.spanId);
    assert.equal(parentOf(up2), attempts[1]!.spanId);
  });

  test('a streamed request with no traceparent starts a trace; its spans carry the stream usage', async () => {
    up1.on(() => streamed());
    const stream = await client(gw).chat.completions.create({ model: 'gpt-test', messages: message, stream: true, stream_options: { include_usage: true } });
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
    assert.equal(text, REPLY);
    const m = TRACEPARENT.exec(String(up1.requests.at(-1)!.headers['traceparent']));
    assert.ok(m, 'the upstream got a traceparent');
    const spans = await waitFor(() => (receiver.trace(m[1]!).length >= 2 ? receiver.trace(m[1]!) : null), 5000, 'the stream trace');
    const call = spans.find((s) => s.kind === KIND_SERVER)!;
    const attempt = spans.find((s) => s.kind === KIND_CLIENT)!;
    assert.equal(call.parentSpanId || undefined, undefined, 'a root span');
    assert.equal(attempt.spanId, m[2]);
    const c = attrs(call);
    assert.equal(c['switchyard.stream'], true);
    assert.equal(typeof c['switchyard.ttft_ms'], 'number');
    assert.equal(c['gen_ai.usage.input_tokens'], 7);
    assert.equal(attrs(attempt)['gen_ai.usage.output_tokens'], 3);
  });

  test('a client traceparent that is not sampled is followed: no spans exported, the upstream gets flags 00', async () => {
    up1.on(() => completion());
    const tp = traceparent('00');
    const { response } = await client(gw, { traceparent: tp.header }).chat.completions.create({ model: 'gpt-test', messages: message }).withResponse();
    await finishedLine(gw, response.headers.get('x-request-id')!);
    const m = TRACEPARENT.exec(String(up1.requests.at(-1)!.headers['traceparent']));
    assert.ok(m);
    assert.equal(m[1], tp.traceId);
    assert.equal(m[3], '00');
    // A sampled request after it: once its spans are in, the unsampled one's would have been too.
    const later = traceparent();
    await client(gw, { traceparent: later.header }).chat.completions.create({ model: 'gpt-test', messages: message });
    await waitFor(() => receiver.trace(later.traceId).length >= 2, 5000, 'the later trace');
    assert.equal(receiver.trace(tp.traceId).length, 0);
  });
});
