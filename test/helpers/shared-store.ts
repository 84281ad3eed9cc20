/**
 * Gateways with a shared store (Redis) in front of fake upstream accounts: the config they
 * are started from, a raw chat call that reports its timing, and polling `/readyz` for the
 * store mode; a StateStore of a test's own on Redis.
 */
import assert from 'node:assert/strict';
import { hashKey } from '../../src/auth/keys.js';
import { StateStore } from '../../src/store/index.js';
import { CLIENT_KEY, postChat, type RawReply, type TestGateway } from './gateway.js';

/** One upstream of the config: an openai-compatible account at `url`. */
export interface UpSpec {
  id: string;
  url: string;
  maxConcurrency?: number;
  /** Deep calls the account takes, typed in (start = ceiling: not learned). */
  deepCap?: number;
}

/** One model of the config, as written (a price of 1/1 is added unless given). */
export type ModelSpec = Record<string, unknown> & { name: string };

/**
 * The config (JSON is YAML) of a gateway with `store` (none when null), these upstreams
 * (max_concurrency 64 unless set, generous timeouts) and models, two attempts and a wide
 * queue, and the key CLIENT_KEY for every model.
 */
export function storeConfigText(store: Record<string, unknown> | null, ups: UpSpec[], models: ModelSpec[]): string {
  return JSON.stringify({
    server: { log_level: 'info' },
    ...(store ? { store } : {}),
    routing: { max_attempts: 2, queue: { max: 64, timeout_ms: 10_000 }, retry_budget: { min_retries: 1000 } },
    upstreams: ups.map((u) => ({
      id: u.id,
      provider: 'openai-compatible',
      base_url: `${u.url}/v1`,
      api_key: '${TEST_UPSTREAM_KEY}',
      max_concurrency: u.maxConcurrency ?? 64,
      timeouts: { connect_ms: 1000, first_byte_ms: 15_000, idle_ms: 15_000 },
      ...(u.deepCap !== undefined ? { capacity: { start: u.deepCap, ceiling: u.deepCap } } : {}),
    })),
    models: models.map((m) => ({ price: { input: 1, output: 1 }, ...m })),
    keys: [{ name: 'team-a', key_sha256: hashKey(CLIENT_KEY), models: ['*'] }],
  });
}

/** What `chat` sends: the prompt (default `hello`), `stream` (default false), a reasoning effort, a session id, an abort signal. */
export interface CallOpts {
  effort?: string;
  stream?: boolean;
  prompt?: string;
  session?: string;
  signal?: AbortSignal;
}

/** One chat call to `model` through `gw`, read to the end. */
export function chat(gw: TestGateway, model: string, o: CallOpts = {}): Promise<RawReply> {
  return postChat(
    gw,
    {
      model,
      messages: [{ role: 'user', content: o.prompt ?? 'hello' }],
      stream: o.stream ?? false,
      ...(o.effort ? { reasoning_effort: o.effort } : {}),
    },
    { headers: o.session ? { 'x-session-id': o.session } : {}, ...(o.signal ? { signal: o.signal } : {}) },
  );
}

/** `/readyz` of a gateway: its status code and body. */
export interface Readyz {
  status: number;
  body: { status: string; store: { mode: string; degraded: boolean } };
}

/** Reads `/readyz` of `gw`. */
export async function readyz(gw: TestGateway): Promise<Readyz> {
  const res = await fetch(`${gw.url}/readyz`);
  return { status: res.status, body: (await res.json()) as Readyz['body'] };
}

/** Waits until `/readyz` shows store mode `mode` (throws after `ms`); returns how long that took, ms. */
export async function waitMode(gw: TestGateway, mode: string, ms = 5_000): Promise<number> {
  const t0 = Date.now();
  for (;;) {
    if ((await readyz(gw)).body.store.mode === mode) return Date.now() - t0;
    if (Date.now() - t0 > ms) throw new Error(`store mode of ${gw.url} did not become ${mode} within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** A StateStore of its own on the redis-server at `url`, in Redis mode, under `prefix` (close it after). */
export async function storeOn(url: string, prefix: string): Promise<StateStore> {
  const s = new StateStore(
    {
      redis_url: url,
      redis_options: {},
      cluster_nodes: [],
      key_prefix: prefix,
      command_timeout_ms: 250,
      replicas: 1,
      lease_ms: 30_000,
      journal_ttl_ms: 60_000,
    },
    { info: () => {}, warn: () => {} },
    {},
  );
  await s.ready(3_000);
  assert.equal(s.mode, 'redis');
  return s;
}

/** Runs `fn` on a store of its own (storeOn), closed after, whatever happens. */
export async function withStoreOn(url: string, prefix: string, fn: (s: StateStore) => Promise<void>): Promise<void> {
  const s = await storeOn(url, prefix);
  try {
    await fn(s);
  } finally {
    await s.close();
  }
}
