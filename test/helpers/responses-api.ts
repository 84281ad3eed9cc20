/**
 * Shared setup of the Responses API tests (test/integration/responses-api-*.test.ts): the
 * config (a Responses-capable upstream and a chat-only one, both the same fake), the
 * recorded Responses streams and bodies the fake replays, the expected tokens and cost of a
 * recorded usage, and the gateway, fake upstream and `openai` client of a suite with the
 * checks of what the upstream received.
 */
import assert from 'node:assert/strict';
import { after, before, beforeEach } from 'node:test';
import OpenAI from 'openai';
import { hashKey } from '../../src/auth/keys.js';
import type { FakeUpstream, ReceivedRequest, ScriptedReply } from './fake-upstream.js';
import { fixture, fixtureJson, sseEvents } from './recordings.js';
import { CLIENT_KEY, UPSTREAM_KEY, closeAll, finishedLine, startWithUpstream, type TestGateway } from './gateway.js';

export interface Price {
  input: number;
  cached_input: number;
  output: number;
  reasoning: number;
}

/** Public model -> upstream model id and price (mirrors the YAML below). */
export const TEXT_MODEL = { name: 'gpt-resp', upstream: 'upstream-gpt-4.1', price: { input: 2, cached_input: 0.5, output: 8, reasoning: 8 } };
export const REASONING_MODEL = { name: 'gpt5-resp', upstream: 'upstream-gpt-5', price: { input: 1.25, cached_input: 0.125, output: 10, reasoning: 30 } };

export function configYaml(upstreamUrl: string): string {
  const timeouts = '{ connect_ms: 2000, first_byte_ms: 5000, idle_ms: 5000 }';
  return `
server:
  log_level: info
routing:
  max_attempts: 1
  # A model_not_found cools its target until a probe: with credential_ms 1 the next request is that probe.
  cooldown: { credential_ms: 1 }
upstreams:
  - id: oai
    provider: openai-compatible
    base_url: ${upstreamUrl}/v1
    api_key: \${TEST_UPSTREAM_KEY}
    options: { responses: true }
    timeouts: ${timeouts}
  - id: chat-only
    provider: openai-compatible
    base_url: ${upstreamUrl}/v1
    api_key: \${TEST_UPSTREAM_KEY}
    timeouts: ${timeouts}
models:
  - name: ${TEXT_MODEL.name}
    reasoning: false
    price: { input: ${TEXT_MODEL.price.input}, cached_input: ${TEXT_MODEL.price.cached_input}, output: ${TEXT_MODEL.price.output} }
    targets:
      - { upstream: oai, model: ${TEXT_MODEL.upstream} }
  - name: ${REASONING_MODEL.name}
    reasoning: true
    price: { input: ${REASONING_MODEL.price.input}, cached_input: ${REASONING_MODEL.price.cached_input}, output: ${REASONING_MODEL.price.output}, reasoning: ${REASONING_MODEL.price.reasoning} }
    targets:
      - { upstream: oai, model: ${REASONING_MODEL.upstream} }
  - name: gpt-limited
    reasoning: false
    capabilities: { tools: false, vision: false }
    price: { input: 1, output: 1 }
    targets:
      - { upstream: oai, model: upstream-limited }
  - name: chat-only-model
    reasoning: false
    price: { input: 1, output: 1 }
    targets:
      - { upstream: chat-only, model: upstream-chat-only }
keys:
  - name: team-a
    key_sha256: ${hashKey(CLIENT_KEY)}
    models: ["*"]
`;
}

// ---------------------------------------------------------------------------------------
// Recordings

/** A recorded event stream: the raw SSE events and their parsed `data` payloads. */
export interface Recording {
  events: string[];
  payloads: Record<string, unknown>[];
}

export function parsePayload(event: string): Record<string, unknown> {
  const m = /^data: (.*)$/m.exec(event);
  assert.ok(m, `recorded event has a data line: ${event.slice(0, 80)}`);
  return JSON.parse(m[1]!) as Record<string, unknown>;
}

/** A verbatim `.sse` recording. */
export function sseRecording(name: string): Recording {
  const events = sseEvents(name);
  return { events, payloads: events.map(parsePayload) };
}

/**
 * A `.chunks.jsonl` recording (one data payload per line) as SSE, `event: <type>` added the
 * way OpenAI sends it. `turn` picks one response when the file holds several in a row
 * (each starts at a `response.created`).
 */
export function jsonlRecording(name: string, turn = 0): Recording {
  const lines = fixture(name)
    .toString('utf8')
    .split('\n')
    .filter((l) => l.trim() !== '');
  const turns: string[][] = [];
  for (const line of lines) {
    const type = (JSON.parse(line) as { type: string }).type;
    if (type === 'response.created' || turns.length === 0) turns.push([]);
    turns.at(-1)!.push(line);
  }
  const picked = turns[turn];
  assert.ok(picked, `${name} has turn ${turn}`);
  const payloads = picked.map((l) => JSON.parse(l) as Record<string, unknown>);
  const events = picked.map((l, i) => `event: ${String(payloads[i]!['type'])}\ndata: ${l}\n\n`);
  return { events, payloads };
}

/** Replays a recording as an SSE body, one write per event (with a small pause between). */
export function replaySse(rec: Recording, delayMs = 0): () => ScriptedReply {
  return () => ({
    status: 200,
    headers: { 'content-type': 'text/event-stream; charset=utf-8' },
    steps: rec.events.flatMap((e) => (delayMs > 0 ? [{ delayMs }, e] : [e])),
  });
}

export function completedEvent(rec: Recording): { response: Record<string, unknown> & { usage: Usage } } {
  const ev = rec.payloads.find((p) => p['type'] === 'response.completed');
  assert.ok(ev, 'the recording has a response.completed event');
  return ev as { response: Record<string, unknown> & { usage: Usage } };
}

export interface Usage {
  input_tokens: number;
  input_tokens_details: { cached_tokens: number };
  output_tokens: number;
  output_tokens_details: { reasoning_tokens: number };
  total_tokens: number;
}

/** The gateway's `tokens` log field for a recorded Responses `usage`. */
export function tokensOf(u: Usage): { input: number; cached: number; output: number; reasoning: number } {
  return { input: u.input_tokens, cached: u.input_tokens_details.cached_tokens, output: u.output_tokens, reasoning: u.output_tokens_details.reasoning_tokens };
}

export function expectedCost(u: Usage, p: Price): number {
  const t = tokensOf(u);
  return ((t.input - t.cached) * p.input + t.cached * p.cached_input + (t.output - t.reasoning) * p.output + t.reasoning * p.reasoning) / 1_000_000;
}

export function assertCost(actual: unknown, expected: number, what: string): void {
  assert.equal(typeof actual, 'number', `${what}: cost is a number`);
  assert.ok(expected > 0, 'the expected cost is not zero (the test would prove nothing)');
  assert.ok(Math.abs((actual as number) - expected) < 1e-12, `${what}: cost ${String(actual)} != expected ${expected}`);
}

/** Text of the recorded `response.output_text.done` event(s). */
export function recordedText(rec: Recording): string {
  return rec.payloads
    .filter((p) => p['type'] === 'response.output_text.done')
    .map((p) => String(p['text']))
    .join('');
}

export const TEXT = sseRecording('openai-responses-stream-text.sse');
export const FUNCTION_CALL = sseRecording('openai-responses-stream-function-call.sse');
export const GPT5_REASONING = sseRecording('openai-responses-stream-gpt5-reasoning-function-call.sse');
export const ENCRYPTED_REASONING = jsonlRecording('openai-responses-stream-reasoning-encrypted.chunks.jsonl', 0);
export const QUOTA_ERROR = jsonlRecording('openai-responses-stream-midstream-error-insufficient-quota.chunks.jsonl');
export const ERROR_400 = fixtureJson('openai-responses-error-400.json') as { error: { message: string; code: string; param: string; type: string } };

// ---------------------------------------------------------------------------------------
// The suite's gateway

/** The suite's fake upstream, gateway and client (set by useResponsesGateway's `before`). */
export let upstream: FakeUpstream;
export let gw: TestGateway;
export let client: OpenAI;

/**
 * Starts the gateway in front of one fake upstream before the suite's tests (a fresh
 * request log before each test) and closes both after them. Call at the top of the suite.
 */
export function useResponsesGateway(): void {
  before(async () => {
    ({ upstream, gw } = await startWithUpstream((url) => configYaml(url)));
    client = gw.client();
  });
  after(() => closeAll(gw, upstream));
  beforeEach(() => {
    upstream.requests.length = 0;
  });
}

export function onlyRequest(): ReceivedRequest {
  assert.equal(upstream.requests.length, 1, 'the upstream received exactly one request');
  return upstream.requests[0]!;
}

/** Upstream saw the Responses path, the upstream key, never the client key. */
export function assertForwarded(got: ReceivedRequest, upstreamModel: string): void {
  assert.equal(got.method, 'POST');
  assert.equal(got.url, '/v1/responses');
  assert.equal(got.headers['authorization'], `Bearer ${UPSTREAM_KEY}`);
  const raw = JSON.stringify(got.headers) + got.body;
  assert.ok(!raw.includes(CLIENT_KEY), 'the client key never reaches the upstream');
  assert.equal(got.json?.['model'], upstreamModel);
}

export function finishedLineOf(requestId: string | null): Promise<Record<string, unknown>> {
  assert.ok(requestId, 'the response carries x-request-id');
  return finishedLine(gw, requestId);
}
