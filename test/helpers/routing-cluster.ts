/**
 * Shared setup of the routing-strategy tests (test/integration/routing-strategies-*.test.ts):
 * a cluster of real fake upstreams on loopback (one per target) behind the real gateway,
 * all serving `gpt-test`, and the client calls and tallies the tests read where a call
 * went with (the `x-switchyard-upstream` header, cross-checked with each fake's received
 * requests).
 */
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import type { ChatCompletionCreateParamsNonStreaming } from 'openai/resources/chat/completions';
import { hashKey } from '../../src/auth/keys.js';
import { FakeUpstream, type ScriptedReply } from './fake-upstream.js';
import { fixtureJson } from './recordings.js';
import { CLIENT_KEY, startGateway, type TestGateway } from './gateway.js';

export const MODEL = 'gpt-test';
export const COMPLETION = fixtureJson('openai-chat-gpt5.json');
export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

export interface TargetSpec {
  /** Upstream id (also what `x-switchyard-upstream` reports). */
  id: string;
  weight?: number;
  price?: { input: number; output: number };
  maxConcurrency?: number;
}

export interface Cluster {
  gw: TestGateway;
  fakes: Record<string, FakeUpstream>;
  ids: string[];
  close(): Promise<void>;
}

/** A 200 JSON completion after `delayMs`. */
export const ok = (delayMs = 0): ScriptedReply => ({ status: 200, delayMs, body: COMPLETION });
/** A retryable upstream failure. */
export const unavailable = (): ScriptedReply => ({ status: 503, body: { error: { message: 'overloaded', type: 'server_error', code: null } } });

/**
 * A config with one upstream (and one fake) per target, all serving `gpt-test` as
 * `m-<id>`. `routing` is YAML indented two spaces; `modelStrategy` sets the model's own.
 */
export function clusterYaml(targets: TargetSpec[], fakes: Record<string, FakeUpstream>, routing: string, modelStrategy?: string): string {
  const upstreams = targets
    .map(
      (t) => `
  - id: ${t.id}
    provider: openai-compatible
    base_url: ${fakes[t.id]!.url}/v1
    api_key: \${TEST_UPSTREAM_KEY}
    max_concurrency: ${t.maxConcurrency ?? 32}
    timeouts: { connect_ms: 2000, first_byte_ms: 5000, idle_ms: 5000 }`,
    )
    .join('');
  const targetLines = targets
    .map((t) => {
      const extra = [t.weight !== undefined ? `weight: ${t.weight}` : '', t.price ? `price: { input: ${t.price.input}, output: ${t.price.output} }` : '']
        .filter(Boolean)
        .join(', ');
      return `\n      - { upstream: ${t.id}, model: m-${t.id}${extra ? `, ${extra}` : ''} }`;
    })
    .join('');
  return `
server:
  log_level: warn
routing:
${routing}
upstreams:${upstreams}
models:
  - name: ${MODEL}
    price: { input: 10, output: 10 }${modelStrategy ? `\n    strategy: ${modelStrategy}` : ''}
    targets:${targetLines}
keys:
  - name: team-a
    key_sha256: ${hashKey(CLIENT_KEY)}
    models: ["*"]
`;
}

/** Starts one fake per target (each answering 200 at once) and a gateway in front of them. */
export async function startCluster(targets: TargetSpec[], routing: string, modelStrategy?: string): Promise<Cluster> {
  const fakes: Record<string, FakeUpstream> = {};
  for (const t of targets) fakes[t.id] = (await new FakeUpstream().start()).on(() => ok());
  const gw = await startGateway(clusterYaml(targets, fakes, routing, modelStrategy));
  return {
    gw,
    fakes,
    ids: targets.map((t) => t.id),
    close: async () => {
      await gw.close();
      for (const f of Object.values(fakes)) await f.close();
    },
  };
}

/** Generous retry budget and no backoff, so only the strategy decides where calls go. */
export const BASE_ROUTING = `  max_attempts: 3
  backoff_base_ms: 0
  backoff_cap_ms: 0
  retry_budget: { ratio: 1, min_retries: 100 }`;

export interface Result {
  status: number;
  headers: Headers;
  json: Record<string, unknown>;
  /** `x-switchyard-upstream`. */
  upstream: string | null;
}

/** POSTs a chat completion with fetch. */
export async function chat(gw: TestGateway, extraBody: Record<string, unknown> = {}, headers: Record<string, string> = {}): Promise<Result> {
  const res = await fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${CLIENT_KEY}`, ...headers },
    body: JSON.stringify({ model: MODEL, messages: [{ role: 'user', content: 'hello' }], ...extraBody }),
  });
  const json = (await res.json()) as Record<string, unknown>;
  return { status: res.status, headers: res.headers, json, upstream: res.headers.get('x-switchyard-upstream') };
}

/** A chat completion through the official client; returns the response headers. */
export async function sdkChat(client: OpenAI, extraBody: Record<string, unknown> = {}, headers: Record<string, string> = {}): Promise<Headers> {
  const params = { model: MODEL, messages: [{ role: 'user', content: 'hello' }], ...extraBody } as ChatCompletionCreateParamsNonStreaming;
  const { data, response } = await client.chat.completions.create(params, { headers }).withResponse();
  assert.equal(data.id, COMPLETION['id']);
  return response.headers;
}

/** How many of `upstreams` (header values) went to each id. */
export function tally(ids: string[], upstreams: (string | null)[]): Record<string, number> {
  const out: Record<string, number> = Object.fromEntries(ids.map((id) => [id, 0]));
  for (const u of upstreams) {
    assert.ok(u !== null && u in out, `unexpected x-switchyard-upstream ${String(u)}`);
    out[u]!++;
  }
  return out;
}

/** Requests each fake received. */
export function received(c: Cluster): Record<string, number> {
  return Object.fromEntries(c.ids.map((id) => [id, c.fakes[id]!.requests.length]));
}

export function diff(after: Record<string, number>, before: Record<string, number>): Record<string, number> {
  return Object.fromEntries(Object.keys(after).map((k) => [k, after[k]! - (before[k] ?? 0)]));
}
