/**
 * The OTEL_* environment as tracing reads it (src/tracing/settings.ts): when it is on, the
 * traces URL, protocol, headers, sampler and batch settings, and warnings that name the
 * variable but never quote a header value or the endpoint's user info.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { shownUrl, tracingSettings } from '../../src/tracing/settings.js';
import { clientTraceHeaders } from '../../src/tracing/off.js';

describe('tracing settings', () => {
  test('off by default, when disabled, with exporter none, or with an unsupported protocol', () => {
    assert.equal(tracingSettings({}).settings, null);
    assert.equal(tracingSettings({ OTEL_SERVICE_NAME: 'x' }).settings, null);
    assert.equal(tracingSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_SDK_DISABLED: 'TRUE' }).settings, null);
    assert.equal(tracingSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_TRACES_EXPORTER: 'none' }).settings, null);
    const grpc = tracingSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4317', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' });
    assert.equal(grpc.settings, null);
    assert.match(grpc.warnings.join('\n'), /"grpc" is not supported/);
    const bad = tracingSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'ftp://c' });
    assert.equal(bad.settings, null);
    assert.match(bad.warnings.join('\n'), /OTEL_EXPORTER_OTLP_ENDPOINT must be an http/);
  });

  test('the traces URL: /v1/traces appended to the base endpoint, the traces endpoint used as it is', () => {
    assert.equal(tracingSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318' }).settings?.url, 'http://c:4318/v1/traces');
    assert.equal(tracingSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'https://c/otlp/' }).settings?.url, 'https://c/otlp/v1/traces');
    const both = tracingSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://t:9999/custom' });
    assert.equal(both.settings?.url, 'http://t:9999/custom');
  });

  test('defaults: http/protobuf, service switchyard, parentbased_always_on, 10 s timeout', () => {
    const s = tracingSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318' }).settings!;
    assert.equal(s.protocol, 'http/protobuf');
    assert.equal(s.serviceName, 'switchyard');
    assert.deepEqual(s.sampler, { root: 'always_on', parentBased: true, ratio: 1 });
    assert.equal(s.timeoutMs, 10_000);
    assert.deepEqual(s.batch, {});
  });

  test('headers, resource attributes, sampler and batch settings are read; bad values warn without quoting header values', () => {
    const { settings, warnings } = tracingSettings({
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318',
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_EXPORTER_OTLP_HEADERS: 'authorization=Bearer%20s3cret-token,x-a=1,broken,x-bad=%E0%A4%A',
      OTEL_EXPORTER_OTLP_TRACES_HEADERS: 'x-a=2',
      OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment=prod,service.namespace=ai',
      OTEL_SERVICE_NAME: 'gw-eu',
      OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
      OTEL_TRACES_SAMPLER_ARG: '0.25',
      OTEL_BSP_SCHEDULE_DELAY: '100',
      OTEL_BSP_MAX_QUEUE_SIZE: 'lots',
      OTEL_EXPORTER_OTLP_TIMEOUT: '2500',
    });
    assert.ok(settings);
    assert.equal(settings.protocol, 'http/json');
    assert.deepEqual(settings.headers, { authorization: 'Bearer s3cret-token', 'x-a': '2' });
    assert.deepEqual(settings.resource, { 'deployment.environment': 'prod', 'service.namespace': 'ai' });
    assert.equal(settings.serviceName, 'gw-eu');
    assert.deepEqual(settings.sampler, { root: 'traceidratio', parentBased: true, ratio: 0.25 });
    assert.deepEqual(settings.batch, { scheduledDelayMillis: 100 });
    assert.equal(settings.timeoutMs, 2500);
    const text = warnings.join('\n');
    assert.match(text, /OTEL_EXPORTER_OTLP_HEADERS: an entry without "key=" was skipped/);
    assert.match(text, /"x-bad" is not percent-encoded/);
    assert.match(text, /OTEL_BSP_MAX_QUEUE_SIZE must be a whole number/);
    assert.ok(!text.includes('s3cret'), 'no header value in a warning');
  });

  test('an unknown sampler or a bad ratio falls back with a warning', () => {
    const r = tracingSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_TRACES_SAMPLER: 'jaeger_remote' });
    assert.deepEqual(r.settings?.sampler, { root: 'always_on', parentBased: true, ratio: 1 });
    assert.match(r.warnings.join('\n'), /OTEL_TRACES_SAMPLER "jaeger_remote" is not supported/);
    const q = tracingSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_TRACES_SAMPLER: 'traceidratio', OTEL_TRACES_SAMPLER_ARG: '2' });
    assert.deepEqual(q.settings?.sampler, { root: 'traceidratio', parentBased: false, ratio: 1 });
    assert.match(q.warnings.join('\n'), /OTEL_TRACES_SAMPLER_ARG must be a number from 0 to 1/);
  });

  test('the endpoint as logged has no user info or query', () => {
    assert.equal(shownUrl('https://user:pw@c.example:4318/v1/traces?token=x'), 'https://c.example:4318/v1/traces');
  });
});

describe('trace headers passed on while tracing is off', () => {
  const tp = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
  test('a valid traceparent (and tracestate) is passed on as it came', () => {
    assert.deepEqual(clientTraceHeaders({ traceparent: tp }), { traceparent: tp });
    assert.deepEqual(clientTraceHeaders({ traceparent: tp, tracestate: 'congo=t61rcWkgMzE' }), { traceparent: tp, tracestate: 'congo=t61rcWkgMzE' });
  });
  test('an invalid one is not; nor is an over-long tracestate', () => {
    assert.equal(clientTraceHeaders({}), null);
    assert.equal(clientTraceHeaders({ traceparent: tp.toUpperCase() }), null);
    assert.equal(clientTraceHeaders({ traceparent: '00-00000000000000000000000000000000-00f067aa0ba902b7-01' }), null);
    assert.equal(clientTraceHeaders({ traceparent: 'ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01' }), null);
    assert.equal(clientTraceHeaders({ traceparent: `${tp}-extra` }), null);
    assert.deepEqual(clientTraceHeaders({ traceparent: tp, tracestate: `a=${'x'.repeat(600)}` }), { traceparent: tp });
  });
});
