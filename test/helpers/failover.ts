/**
 * Shared setup of the failover tests (test/integration/failover-*.test.ts): configs written
 * for each test (several upstreams, each its own fake; the targets of a model priced 1, 2,
 * 3 … and `strategy: cheap`, so targets are tried in config order), scripted upstream
 * replies, and the client-side checks they use.
 */
import assert from 'node:assert/strict';
import { hashKey } from '../../src/auth/keys.js';
import { FakeUpstream, type ScriptedReply } from './fake-upstream.js';
import { CLIENT_KEY, postChat, type RawReply, type TestGateway } from './gateway.js';
import { metricSum } from './metrics-text.js';

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

// ---------------------------------------------------------------------------------------
// Config

export interface UpSpec {
  id: string;
  url: string;
  maxConcurrency?: number;
  firstByteMs?: number;
}

export interface ModelSpec {
  name: string;
  /** Upstream ids, cheapest first. */
  targets: string[];
  fallbacks?: string[];
  /** `context_window`, tokens, and `context_fallback` (pipeline/context-window.ts). */
  contextWindow?: number;
  contextFallback?: string;
}

/** The target key (`<upstream>/<upstream model>`) health and metrics use. */
export const targetKey = (upstream: string, model: string) => `${upstream}/${model}-up`;

/** A config: `routing` is written as JSON (YAML's flow style). */
export function configYaml(routing: Record<string, unknown>, ups: UpSpec[], models: ModelSpec[]): string {
  const upstreams = ups
    .map(
      (u) => `  - id: ${u.id}
    provider: openai-compatible
    base_url: ${u.url}/v1
    api_key: \${TEST_UPSTREAM_KEY}
    max_concurrency: ${u.maxConcurrency ?? 64}
    timeouts: { connect_ms: 1000, first_byte_ms: ${u.firstByteMs ?? 5000}, idle_ms: 5000 }`,
    )
    .join('\n');
  const modelLines = models
    .map(
      (m) => `  - name: ${m.name}
    price: { input: 1, output: 1 }
    fallbacks: [${(m.fallbacks ?? []).join(', ')}]${m.contextWindow !== undefined ? `\n    context_window: ${m.contextWindow}` : ''}${m.contextFallback !== undefined ? `\n    context_fallback: ${m.contextFallback}` : ''}
    targets:
${m.targets.map((t, i) => `      - { upstream: ${t}, model: ${m.name}-up, price: { input: ${i + 1}, output: ${i + 1} } }`).join('\n')}`,
    )
    .join('\n');
  return `
server:
  log_level: info
routing: ${JSON.stringify({ strategy: 'cheap', ...routing })}
upstreams:
${upstreams}
models:
${modelLines}
keys:
  - name: team-a
    key_sha256: ${hashKey(CLIENT_KEY)}
    models: ["*"]
`;
}

/** Routing that never cools a target down and never runs out of retry budget. */
export const NO_HEALTH = {
  cooldown: { failures: 1000, base_ms: 1, max_ms: 1 },
  retry_budget: { min_retries: 100000 },
  backoff_base_ms: 1,
  backoff_cap_ms: 1,
};

// ---------------------------------------------------------------------------------------
// Upstream replies

export function completion(text: string): Record<string, unknown> {
  return {
    id: 'chatcmpl-failover',
    object: 'chat.completion',
    created: 1700000000,
    model: 'upstream-model',
    choices: [{ index: 0, message: { role: 'assistant', content: text, refusal: null }, finish_reason: 'stop' }],
    usage: { prompt_tokens: 5, completion_tokens: 2, total_tokens: 7 },
  };
}

export const ok = (text: string): ScriptedReply => ({ status: 200, body: completion(text) });

export function errorReply(status: number, headers: Record<string, string> = {}): ScriptedReply {
  return { status, headers, body: { error: { message: `upstream says ${status}`, type: 'server_error', param: null, code: null } } };
}

/** A fake that is never listening: connection refused. */
export async function deadUrl(): Promise<string> {
  const f = await new FakeUpstream().start();
  const url = f.url;
  await f.close();
  return url;
}

// ---------------------------------------------------------------------------------------
// Client side

export type Raw = RawReply;

export function post(gw: TestGateway, model: string, extra: Record<string, unknown> = {}): Promise<Raw> {
  return postChat(gw, { model, messages: [{ role: 'user', content: 'hello' }], ...extra });
}

export function content(raw: Raw): string {
  const body = JSON.parse(raw.text) as { choices: { message: { content: string } }[] };
  return body.choices[0]!.message.content;
}

export function errorOf(raw: Raw): { message: string; type: string; param: string | null; code: string | null } {
  assert.match(raw.headers.get('content-type') ?? '', /^application\/json/);
  return (JSON.parse(raw.text) as { error: { message: string; type: string; param: string | null; code: string | null } }).error;
}

export async function targetState(gw: TestGateway, target: string): Promise<string> {
  const text = await gw.metricsText();
  const states = ['healthy', 'cooling', 'probing'].filter((s) => metricSum(text, 'switchyard_target_state', { target, state: s }) === 1);
  assert.equal(states.length, 1, `exactly one state for ${target}: ${states.join(',')}`);
  return states[0]!;
}
