/**
 * The simulator as a throttling provider account (src/providers/simulator/throttle.ts) and
 * its standalone server (server.ts): deep calls past the threshold get the recorded 429 or
 * stall, other calls do not; a finished or aborted call leaves the window; the seed fixes
 * the outcomes; /reset clears state; the official openai client streams from the server;
 * `switchyard simulate` serves it from the CLI.
 */
import assert from 'node:assert/strict';
import { setMaxListeners } from 'node:events';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import OpenAI from 'openai';
import { parseTestConfig } from '../helpers/config.js';
import type { SimulatorConfig } from '../../src/config/schema.js';
import { createSimulator, type SimulatorProvider } from '../../src/providers/simulator/index.js';
import { startSimulatorServer, type SimulatorServer } from '../../src/providers/simulator/server.js';
import type { UpstreamResponse } from '../../src/providers/types.js';
import { waitFor } from '../helpers/gateway.js';

const here = dirname(fileURLToPath(import.meta.url));
/** The repository root, from the compiled `.test-build/test/integration`. */
const ROOT = join(here, '..', '..', '..');
const MAIN = join(ROOT, '.test-build', 'src', 'main.js');
const RECORDED_429 = readFileSync(join(ROOT, 'src', 'providers', 'simulator', 'recordings', 'openai-error-429-rate-limit-exceeded.json'));

type Throttle = SimulatorConfig['throttle'];

function sim(throttle: Partial<Throttle>, over: Partial<SimulatorConfig> = {}): SimulatorConfig {
  return {
    chunk_delay_ms: 10,
    first_byte_delay_ms: 0,
    seed: 1,
    ...over,
    throttle: {
      enabled: true,
      window_ms: 30_000,
      deep_threshold: 2,
      deep_efforts: ['high', 'xhigh'],
      reject_share: 0.5,
      retry_after_s: 1,
      stall_first_token_ms: 400,
      stall_pause_ms: 50,
      stall_pause_every: 5,
      ...throttle,
    },
  };
}

const WEATHER_TOOL = {
  type: 'function',
  function: { name: 'weather', parameters: { type: 'object', properties: { location: { type: 'string' } }, required: ['location'] } },
} as const;

interface BodyOptions {
  model?: string;
  effort?: string | undefined;
  tools?: boolean;
  stream?: boolean;
}

function chatBody(o: BodyOptions = {}): Record<string, unknown> {
  const body: Record<string, unknown> = {
    model: o.model ?? 'deepseek-reasoner',
    stream: o.stream ?? true,
    stream_options: { include_usage: true },
    messages: [{ role: 'user', content: 'What is the weather in San Francisco?' }],
  };
  if (o.effort !== undefined || !('effort' in o)) body['reasoning_effort'] = o.effort ?? 'high';
  if (o.tools ?? true) body['tools'] = [WEATHER_TOOL];
  return body;
}

/** Sends a request to the provider directly; the body is not read (the call stays in flight). */
async function send(p: SimulatorProvider, o: BodyOptions = {}, signal = new AbortController().signal): Promise<UpstreamResponse> {
  const body = chatBody(o);
  return p.send({ api: 'chat', body, stream: body['stream'] === true, requestId: 'test', signal });
}

async function drain(r: UpstreamResponse): Promise<string> {
  const parts: Buffer[] = [];
  for await (const c of r.body) parts.push(c as Buffer);
  return Buffer.concat(parts).toString('utf8');
}

interface Timed {
  status: number;
  headers: Headers;
  /** ms from sending to the first body bytes (the first SSE event). */
  firstEventMs: number;
  totalMs: number;
  text: string;
}

/** POSTs and reads the whole response, timing the first body chunk. */
async function timed(url: string, o: BodyOptions = {}): Promise<Timed> {
  const t0 = performance.now();
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(chatBody(o)) });
  const reader = res.body!.getReader();
  const dec = new TextDecoder();
  let text = '';
  let firstEventMs = -1;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    if (firstEventMs < 0) firstEventMs = performance.now() - t0;
    text += dec.decode(value, { stream: true });
  }
  return { status: res.status, headers: res.headers, firstEventMs, totalMs: performance.now() - t0, text };
}

/** Opens a long deep stream (the 212-event reasoning recording) and keeps it in flight until aborted. */
/** Responses of held calls, kept reachable: a collected fetch body cancels its stream (leaving the window). */
const held: Response[] = [];

async function hold(url: string): Promise<AbortController> {
  const ac = new AbortController();
  // One signal aborts every call this test holds (more than Node's default of 10 listeners).
  setMaxListeners(100, ac.signal);
  const res = await fetch(url, { method: 'POST', body: JSON.stringify(chatBody({ tools: false })), signal: ac.signal });
  assert.equal(res.status, 200);
  held.push(res);
  ac.signal.addEventListener('abort', () => held.splice(held.indexOf(res), 1), { once: true });
  return ac;
}

async function stats(s: SimulatorServer): Promise<Record<string, Record<string, number>>> {
  return ((await (await fetch(`${s.url}/stats`)).json()) as { accounts: Record<string, Record<string, number>> }).accounts;
}

describe('simulator throttle (provider)', () => {
  test('shipped default: throttle off, seed 1; with it off a burst is never throttled', async () => {
    const yaml = readFileSync(join(ROOT, 'config', 'switchyard.yaml'), 'utf8');
    const simulator = parseTestConfig(yaml, {}, 'switchyard.yaml').upstreams.get('simulator')!.simulator;
    assert.equal(simulator.throttle.enabled, false);
    assert.equal(simulator.seed, 1);
    assert.deepEqual(simulator.throttle.deep_efforts, ['high', 'xhigh']);
    const p = createSimulator({ id: 'off', simulator: { ...simulator, first_byte_delay_ms: 0 } });
    const ac = new AbortController();
    // One signal aborts every call this test holds (more than Node's default of 10 listeners).
    setMaxListeners(100, ac.signal);
    const rs = await Promise.all(Array.from({ length: 20 }, () => send(p, {}, ac.signal)));
    assert.deepEqual(new Set(rs.map((r) => r.statusCode)), new Set([200]));
    assert.equal(p.stats().deep, 20);
    assert.equal(p.stats().congested, 0);
    assert.equal(p.stats().peak_deep_in_window, 20);
    ac.abort();
  });

  test('only reasoner models with a deep effort count; the call past the threshold is congested', async () => {
    const p = createSimulator({ id: 't', simulator: sim({ deep_threshold: 1, reject_share: 1 }) });
    const ac = new AbortController();
    // One signal aborts every call this test holds (more than Node's default of 10 listeners).
    setMaxListeners(100, ac.signal);
    assert.equal((await send(p, {}, ac.signal)).statusCode, 200);
    for (const o of [{ effort: 'low' }, { effort: 'medium' }, { effort: undefined }, { model: 'deepseek-chat' }, { model: 'gpt-4o', effort: 'xhigh' }]) {
      assert.equal((await send(p, o, ac.signal)).statusCode, 200, JSON.stringify(o));
    }
    assert.equal(p.stats().deep, 1);
    assert.equal((await send(p, { effort: 'xhigh' }, ac.signal)).statusCode, 429);
    assert.equal((await send(p, { stream: false }, ac.signal)).statusCode, 429, 'non-streaming deep calls are throttled too');
    assert.deepEqual({ ...p.stats() }, { requests: 8, deep: 3, congested: 2, rejected_429: 2, stalled: 0, peak_deep_in_window: 1, deep_in_window: 1 });
    ac.abort();
  });

  test('a finished, an aborted or an expired call stops counting', async () => {
    const p = createSimulator({ id: 't', simulator: sim({ deep_threshold: 1, reject_share: 1, window_ms: 150 }, { chunk_delay_ms: 0 }) });
    // finished: read to the end
    await drain(await send(p));
    assert.equal(p.stats().deep_in_window, 0);
    // in flight: the next one is refused
    const ac = new AbortController();
    // One signal aborts every call this test holds (more than Node's default of 10 listeners).
    setMaxListeners(100, ac.signal);
    const held = await send(p, {}, ac.signal);
    assert.equal((await send(p)).statusCode, 429);
    // aborted: leaves at once
    ac.abort();
    held.body.destroy();
    assert.equal(p.stats().deep_in_window, 0);
    const r = await send(p);
    assert.equal(r.statusCode, 200);
    // still in flight but started longer ago than the window: no longer counted
    await new Promise((res) => setTimeout(res, 170));
    assert.equal(p.stats().deep_in_window, 0);
    assert.equal((await send(p)).statusCode, 200);
    assert.equal(p.stats().rejected_429, 1);
    r.body.destroy();
  });

  test('the same seed gives the same outcomes; another seed others; reset() replays them', async () => {
    const outcomes = async (p: SimulatorProvider): Promise<number[]> => {
      const ac = new AbortController();
      // One signal aborts every call this test holds (more than Node's default of 10 listeners).
      setMaxListeners(100, ac.signal);
      const out: number[] = [];
      for (let i = 0; i < 40; i++) out.push((await send(p, {}, ac.signal)).statusCode);
      ac.abort();
      return out;
    };
    const cfg = (seed: number) => sim({ deep_threshold: 3, reject_share: 0.5 }, { seed });
    const a = createSimulator({ id: 'a', simulator: cfg(42) });
    const b = createSimulator({ id: 'b', simulator: cfg(42) });
    const c = createSimulator({ id: 'c', simulator: cfg(43) });
    const first = await outcomes(a);
    assert.deepEqual(first.slice(0, 3), [200, 200, 200], 'under the threshold nothing is drawn');
    assert.ok(first.includes(429) && first.slice(3).includes(200), 'a mix of 429s and stalls');
    assert.deepEqual(await outcomes(b), first);
    assert.notDeepEqual(await outcomes(c), first);
    a.reset();
    assert.equal(a.stats().requests, 0);
    assert.deepEqual(await outcomes(a), first);
  });
});

describe('simulator server', () => {
  let rejecting: SimulatorServer; // every congested call gets a 429
  let stalling: SimulatorServer; // every congested call stalls
  before(async () => {
    // Holders (the 212-event reasoning stream) stay in flight 6.4 s here, 4.2 s on `stalling`;
    // what is measured while they hold is short (non-streaming, or one tool-call stream).
    rejecting = await startSimulatorServer({ simulator: sim({ reject_share: 1 }, { chunk_delay_ms: 30 }), accounts: 2 });
    stalling = await startSimulatorServer({ simulator: sim({ reject_share: 0, deep_threshold: 1 }, { chunk_delay_ms: 20 }), accounts: 2 });
  });
  after(async () => {
    await rejecting.close();
    await stalling.close();
  });

  test('/health, routing by account, 404s', async () => {
    assert.deepEqual(await (await fetch(`${rejecting.url}/health`)).json(), { ok: true, accounts: 2 });
    const r1 = await timed(`${rejecting.url}/v1/chat/completions`, { effort: 'low', stream: false });
    assert.equal(r1.headers.get('x-simulator-account'), 'acct-1');
    const r2 = await timed(`${rejecting.url}/acct-2/v1/chat/completions`, { effort: 'low' });
    assert.equal(r2.headers.get('x-simulator-account'), 'acct-2');
    assert.match(r2.text, /data: \[DONE\]\n\n$/);
    const r3 = await fetch(`${rejecting.url}/acct-3/v1/chat/completions`, { method: 'POST', body: '{}' });
    assert.equal(r3.status, 404);
    assert.equal(((await r3.json()) as { error: { code: string } }).error.code, 'account_not_found');
    const bad = await fetch(`${rejecting.url}/acct-1/v1/chat/completions`, { method: 'POST', body: '{nope' });
    assert.equal(bad.status, 400);
    await bad.arrayBuffer();
  });

  test('over the threshold: 429 with Retry-After and the recorded body; others unaffected; /reset clears', async () => {
    await fetch(`${rejecting.url}/reset`, { method: 'POST' });
    const acct = `${rejecting.url}/acct-1/v1/chat/completions`;
    const holders = [await hold(acct), await hold(acct)];
    const refused = await timed(acct);
    assert.equal(refused.status, 429);
    assert.equal(refused.headers.get('retry-after'), '1');
    assert.match(refused.headers.get('content-type') ?? '', /application\/json/);
    assert.equal(refused.text, RECORDED_429.toString('utf8'), 'byte-for-byte the recorded OpenAI 429');
    // not deep, or another account: normal
    for (const o of [{ effort: 'medium' }, { model: 'deepseek-chat' }]) {
      const r = await timed(acct, { ...o, stream: false });
      assert.equal(r.status, 200);
      assert.ok(r.totalMs < 300, `answered after ${r.totalMs} ms`);
    }
    assert.equal((await timed(`${rejecting.url}/acct-2/v1/chat/completions`, { stream: false })).status, 200);
    let s = await stats(rejecting);
    assert.equal(s['acct-1']!['rejected_429'], 1);
    assert.equal(s['acct-1']!['deep_in_window'], 2);
    assert.equal(s['acct-1']!['peak_deep_in_window'], 2);
    assert.equal(s['acct-1']!['requests'], 5);
    assert.equal(s['acct-2']!['deep'], 1);
    // /reset: the window and the counters are empty, although the holders still stream
    assert.deepEqual(await (await fetch(`${rejecting.url}/reset`, { method: 'POST' })).json(), { ok: true });
    s = await stats(rejecting);
    assert.deepEqual({ ...s['acct-1'] }, { requests: 0, deep: 0, congested: 0, rejected_429: 0, stalled: 0, peak_deep_in_window: 0, deep_in_window: 0 });
    assert.equal((await timed(acct, { stream: false })).status, 200);
    // a client that disconnects leaves the window at once
    const more = [await hold(acct), await hold(acct)];
    assert.equal((await timed(acct, { stream: false })).status, 429);
    for (const h of [...holders, ...more]) h.abort();
    assert.ok(await waitForAsync(async () => (await stats(rejecting))['acct-1']!['deep_in_window'] === 0), 'aborted calls leave the window');
    assert.equal((await timed(acct, { stream: false })).status, 200);
  });

  test('over the threshold, a stall: first token late by stall_first_token_ms, pauses in the reasoning burst', async () => {
    await fetch(`${stalling.url}/reset`, { method: 'POST' });
    const acct = `${stalling.url}/acct-1/v1/chat/completions`;
    const normal = await timed(acct);
    assert.equal(normal.status, 200);
    assert.ok(normal.firstEventMs < 300, `uncongested first event after ${normal.firstEventMs} ms`);
    const holder = await hold(acct);
    const stalled = await timed(acct);
    holder.abort();
    assert.equal(stalled.status, 200);
    assert.equal(stalled.text, normal.text, 'the same recorded stream, only later');
    assert.ok(stalled.firstEventMs >= 390, `stalled first event after ${stalled.firstEventMs} ms`);
    // 52 events 20 ms apart; 40 of them reasoning, with a 50 ms pause before every 5th: 8 pauses
    const bodyStalled = stalled.totalMs - stalled.firstEventMs;
    assert.ok(bodyStalled >= 51 * 20 + 8 * 50 * 0.9, `stalled stream body took ${bodyStalled} ms`);
    const s = (await stats(stalling))['acct-1']!;
    assert.equal(s['stalled'], 1);
    assert.equal(s['rejected_429'], 0);
    // a non-deep call on the hot account is not stalled
    const h2 = await hold(acct);
    const light = await timed(acct, { effort: 'low' });
    h2.abort();
    assert.ok(light.firstEventMs < 300, `non-deep first event after ${light.firstEventMs} ms`);
  });

  test('the official openai client streams a tool call and reasoning from the server, and sees the 429', async () => {
    await fetch(`${rejecting.url}/reset`, { method: 'POST' });
    const client = new OpenAI({ baseURL: `${rejecting.url}/acct-2/v1`, apiKey: 'sk-any', maxRetries: 0 });
    const stream = await client.chat.completions.create({
      model: 'deepseek-reasoner',
      reasoning_effort: 'high',
      stream: true,
      stream_options: { include_usage: true },
      tools: [WEATHER_TOOL],
      messages: [{ role: 'user', content: 'weather in SF?' }],
    });
    let name = '';
    let args = '';
    let reasoning = '';
    let usage: OpenAI.CompletionUsage | undefined | null;
    for await (const chunk of stream) {
      const delta = chunk.choices[0]?.delta as (OpenAI.Chat.ChatCompletionChunk.Choice.Delta & { reasoning_content?: string | null }) | undefined;
      reasoning += delta?.reasoning_content ?? '';
      for (const tc of delta?.tool_calls ?? []) {
        name += tc.function?.name ?? '';
        args += tc.function?.arguments ?? '';
      }
      usage = chunk.usage ?? usage;
    }
    assert.equal(name, 'weather');
    assert.deepEqual(JSON.parse(args), { location: 'San Francisco' });
    assert.ok(reasoning.length > 50);
    assert.equal(usage?.completion_tokens, 83);

    const plain = await client.chat.completions.create({ model: 'deepseek-chat', messages: [{ role: 'user', content: 'hi' }] });
    assert.equal(plain.object, 'chat.completion');

    const acct1 = new OpenAI({ baseURL: `${rejecting.url}/acct-1/v1`, apiKey: 'sk-any', maxRetries: 0 });
    const holders = [await hold(`${rejecting.url}/acct-1/v1/chat/completions`), await hold(`${rejecting.url}/acct-1/v1/chat/completions`)];
    await assert.rejects(
      acct1.chat.completions.create({ model: 'deepseek-reasoner', reasoning_effort: 'high', stream: true, messages: [{ role: 'user', content: 'x' }] }),
      (err: unknown) => {
        assert.ok(err instanceof OpenAI.RateLimitError);
        assert.equal(err.status, 429);
        assert.equal(err.code, 'rate_limit_exceeded');
        assert.equal(err.headers?.get('retry-after'), '1');
        return true;
      },
    );
    holders.forEach((h) => h.abort());
  });
});

/** Polls an async predicate. */
async function waitForAsync(fn: () => Promise<boolean>, ms = 3000): Promise<boolean> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await fn()) return true;
    await new Promise((r) => setTimeout(r, 20));
  }
  return false;
}

describe('switchyard simulate (CLI)', () => {
  test('serves N accounts with the flags applied, stops on SIGTERM', async () => {
    const child = spawn(process.execPath, [MAIN, 'simulate', '--port', '0', '--accounts', '3', '--throttle', '--seed', '9', '--chunk-delay-ms', '1'], {
      cwd: ROOT,
      env: { PATH: process.env['PATH'] ?? '' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString('utf8')));
    child.stderr.on('data', (d: Buffer) => (out += d.toString('utf8')));
    try {
      const url = await waitFor(() => /on (http:\/\/127\.0\.0\.1:\d+)/.exec(out)?.[1], 10_000, 'the simulator to listen');
      assert.match(out, /seed=9 throttle on: window_ms=4000 deep_threshold=6/);
      assert.match(out, /chunk_delay_ms=1 /);
      assert.deepEqual(await (await fetch(`${url}/health`)).json(), { ok: true, accounts: 3 });
      const r = await timed(`${url}/acct-3/v1/chat/completions`);
      assert.equal(r.status, 200);
      assert.match(r.text, /"name":"weather"/);
    } finally {
      const code = new Promise((res) => child.once('exit', (c) => res(c)));
      child.kill('SIGTERM');
      assert.equal(await code, 0);
    }
  });
});
