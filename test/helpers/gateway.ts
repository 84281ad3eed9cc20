/**
 * Starts the real gateway (buildApp + listen on port 0) with a config written for the
 * test, capturing every log line, and gives an `openai` client pointed at it.
 */
import { Writable } from 'node:stream';
import OpenAI from 'openai';
import { buildApp, type Gateway } from '../../src/app.js';
import { parseTestConfig } from './config.js';
import { hashKey } from '../../src/auth/keys.js';
import { FakeUpstream } from './fake-upstream.js';

export const CLIENT_KEY = 'sk-test-client-0123456789abcdef';
export const OTHER_KEY = 'sk-test-limited-0123456789abcdef';
export const UPSTREAM_KEY = 'sk-upstream-secret-abcdefghijklmnopqrstuvwxyz';

export interface TestGateway extends Gateway {
  url: string;
  logs: string[];
  /** Parsed log lines. */
  logLines(): Record<string, unknown>[];
  /** `request finished` lines. */
  finished(): Record<string, unknown>[];
  client(opts?: { apiKey?: string; maxRetries?: number }): OpenAI;
  metricsText(): Promise<string>;
  close(): Promise<void>;
}

export interface ConfigOptions {
  /** Extra YAML under `upstreams:` entries (e.g. timeouts). */
  timeouts?: { connect_ms?: number; first_byte_ms?: number; idle_ms?: number };
  bodyLimit?: number;
  /** More upstream base URLs, served as failover targets of `gpt-test` in order. */
  extraUpstreams?: string[];
  /**
   * YAML lines under `routing:` (indented two spaces). Defaults to `max_attempts: 1`, so a
   * test of one attempt's behaviour is not changed by retries; routing tests set their own.
   */
  routing?: string;
  /** More YAML lines under `server:` (indented two spaces), e.g. `  request_timeout_ms: 400`. */
  server?: string;
}

/** A config with one OpenAI-compatible upstream `fake` serving `gpt-test` (as `upstream-model-x`). */
export function testConfigYaml(upstreamUrl: string, opts: ConfigOptions = {}): string {
  const t = { connect_ms: 2000, first_byte_ms: 5000, idle_ms: 5000, ...opts.timeouts };
  const extra = (opts.extraUpstreams ?? [])
    .map(
      (u, i) => `
  - id: fake${i + 2}
    provider: openai-compatible
    base_url: ${u}/v1
    api_key: \${TEST_UPSTREAM_KEY}
    timeouts: { connect_ms: ${t.connect_ms}, first_byte_ms: ${t.first_byte_ms}, idle_ms: ${t.idle_ms} }`,
    )
    .join('');
  // Extra targets cost more than the first, so `strategy: cheap` tries them in config order.
  const extraTargets = (opts.extraUpstreams ?? [])
    .map((_u, i) => `\n      - { upstream: fake${i + 2}, model: upstream-model-x, price: { input: ${5 * (i + 1)}, output: ${20 * (i + 1)} } }`)
    .join('');
  return `
server:
  body_limit_bytes: ${opts.bodyLimit ?? 33554432}
  log_level: info${opts.server ? `\n${opts.server}` : ''}
routing:
${opts.routing ?? '  max_attempts: 1'}
upstreams:
  - id: fake
    provider: openai-compatible
    base_url: ${upstreamUrl}/v1
    api_key: \${TEST_UPSTREAM_KEY}
    region: test
    max_concurrency: 32
    timeouts: { connect_ms: ${t.connect_ms}, first_byte_ms: ${t.first_byte_ms}, idle_ms: ${t.idle_ms} }${extra}
models:
  - name: gpt-test
    reasoning: false
    price: { input: 2.5, cached_input: 1.25, output: 10 }
    targets:
      - { upstream: fake, model: upstream-model-x }${extraTargets}
  - name: reasoner-test
    reasoning: true
    price: { input: 0.55, cached_input: 0.14, output: 2.19 }
    targets:
      - { upstream: fake, model: upstream-reasoner }
keys:
  - name: team-a
    key_sha256: ${hashKey(CLIENT_KEY)}
    models: ["*"]
  - name: team-limited
    key_sha256: ${hashKey(OTHER_KEY)}
    models: ["reasoner-test"]
`;
}

/** Prices of `claude-test` in `anthropicConfigYaml`, USD per million tokens. */
export const CLAUDE_TEST_PRICE = { input: 3, cached_input: 0.3, cache_write: 3.75, output: 15 };

/**
 * A config with one Anthropic upstream `claude` at `url` serving `claude-test` (reasoning,
 * as `claude-upstream-id`, priced CLAUDE_TEST_PRICE) to the key CLIENT_KEY. `routing` is
 * the YAML lines under `routing:` (indented two spaces), by default `max_attempts: 1`.
 */
export function anthropicConfigYaml(url: string, routing = '  max_attempts: 1'): string {
  const p = CLAUDE_TEST_PRICE;
  return `
routing:
${routing}
upstreams:
  - id: claude
    provider: anthropic
    base_url: ${url}/v1
    api_key: \${TEST_UPSTREAM_KEY}
    options: { anthropic_version: "2023-06-01", default_max_tokens: 1000 }
    timeouts: { connect_ms: 2000, first_byte_ms: 5000, idle_ms: 5000 }
models:
  - name: claude-test
    reasoning: true
    price: { input: ${p.input}, cached_input: ${p.cached_input}, cache_write: ${p.cache_write}, output: ${p.output} }
    targets:
      - { upstream: claude, model: claude-upstream-id }
keys:
  - name: team-a
    key_sha256: ${hashKey(CLIENT_KEY)}
`;
}

/**
 * Starts a gateway from YAML text; `env` fills its `${VAR}` references. `appEnv`, when given,
 * is the environment the app itself reads (`OTEL_*`, `DATABASE_URL`, reloads) instead of `process.env`.
 */
export async function startGateway(
  yaml: string,
  env: NodeJS.ProcessEnv = { TEST_UPSTREAM_KEY: UPSTREAM_KEY },
  appEnv?: NodeJS.ProcessEnv,
): Promise<TestGateway> {
  const logs: string[] = [];
  const logStream = new Writable({
    write(chunk: Buffer, _enc, cb) {
      for (const line of chunk.toString('utf8').split('\n')) if (line.trim()) logs.push(line);
      cb();
    },
  });
  const config = parseTestConfig(yaml, env, 'test.yaml');
  const gw = await buildApp(config, { logStream, ...(appEnv ? { env: appEnv } : {}) });
  const address = await gw.app.listen({ host: '127.0.0.1', port: 0 });
  const logLines = () => logs.map((l) => JSON.parse(l) as Record<string, unknown>);
  return {
    ...gw,
    url: address,
    logs,
    logLines,
    finished: () => logLines().filter((l) => l['msg'] === 'request finished'),
    client: (o = {}) => new OpenAI({ apiKey: o.apiKey ?? CLIENT_KEY, baseURL: `${address}/v1`, maxRetries: o.maxRetries ?? 0 }),
    metricsText: async () => (await fetch(`${address}/metrics`)).text(),
    close: () => gw.app.close(),
  };
}

/** A fake upstream and a gateway in front of it, as `startWithUpstream` returns them. */
export interface GatewayWithUpstream {
  upstream: FakeUpstream;
  gw: TestGateway;
}

/**
 * Starts a FakeUpstream, then a gateway from `config(upstream.url)` (by default
 * `testConfigYaml`, one upstream `fake` serving `gpt-test`) with `env`. Close both with
 * `closeAll(gw, upstream)`.
 */
export async function startWithUpstream(
  config: (upstreamUrl: string) => string = (url) => testConfigYaml(url),
  env?: NodeJS.ProcessEnv,
): Promise<GatewayWithUpstream> {
  const upstream = await new FakeUpstream().start();
  try {
    return { upstream, gw: await startGateway(config(upstream.url), env) };
  } catch (err) {
    await upstream.close();
    throw err;
  }
}

/** Closes each of `things` in order (gateways before their upstreams); skips undefined ones. */
export async function closeAll(...things: ({ close(): Promise<void> } | undefined)[]): Promise<void> {
  for (const t of things) await t?.close();
}

/** A reply read to the end: status, headers, body text, and how long the call took (ms). */
export interface RawReply {
  status: number;
  headers: Headers;
  text: string;
  ms: number;
}

/**
 * POSTs `body` as JSON to the gateway's `/v1/chat/completions` with CLIENT_KEY (or `key`)
 * and any extra `headers`, and reads the reply to the end.
 */
export async function postChat(
  gw: { url: string },
  body: unknown,
  opts: { key?: string; headers?: Record<string, string>; signal?: AbortSignal } = {},
): Promise<RawReply> {
  const t0 = Date.now();
  const res = await fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${opts.key ?? CLIENT_KEY}`, 'content-type': 'application/json', ...opts.headers },
    body: JSON.stringify(body),
    ...(opts.signal ? { signal: opts.signal } : {}),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, text, ms: Date.now() - t0 };
}

/** The `request finished` log line of one request id (waits up to `ms` for it: it is written after the reply). */
export function finishedLine(gw: TestGateway, requestId: string, ms = 3000): Promise<Record<string, unknown>> {
  return waitFor(() => gw.finished().find((l) => l['request_id'] === requestId), ms, `request finished line for ${requestId}`);
}

/** Waits until `fn` returns truthy or `ms` passes. */
export async function waitFor<T>(fn: () => T | undefined | null | false, ms = 2000, what = 'condition'): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = fn();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}
