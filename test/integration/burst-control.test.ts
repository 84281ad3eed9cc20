/**
 * Burst control against an account that takes one call at a time and answers 429 above it,
 * as a provider account does, with nothing about that limit in the config:
 * - a streamed answer delivered before the upstream ended its body keeps its slot until the
 *   body ends (the provider still counts the call), so the next call does not find it busy;
 * - a request its account throttled `max_attempts` times waits for a running call to end and
 *   is served then, instead of getting the upstream's 429; with no call ending within the
 *   ladder's longest wait it gets 503 upstream_overloaded (its key is within its limits);
 * - a deep call refused while only plain calls ran there was throttled, not failed;
 * - on the shed ladder's last rung a deep call waits `wait_ms` plus `retry_after_cap_ms` for a
 *   place (as long as the 503 would have told it to stay away) before the 503.
 */
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { hashKey } from '../../src/auth/keys.js';
import { answer, deferred, promptOf, type Deferred } from '../helpers/accounts.js';
import { FakeUpstream, type ScriptedReply } from '../helpers/fake-upstream.js';
import { CLIENT_KEY, postChat, startGateway, type TestGateway } from '../helpers/gateway.js';

const RATE_LIMITED: ScriptedReply = {
  status: 429,
  body: { error: { message: 'Rate limit reached for requests', type: 'requests', param: null, code: 'rate_limit_exceeded' } },
};

/** The account: one call at a time (429 above); `hold` waits for the gate; `linger` ends its body 300 ms after `[DONE]`. */
class OneAtATime {
  readonly fake = new FakeUpstream();
  gate: Deferred = deferred();
  throttled = 0;
  /** The prompts of the calls it served, in the order they reached it. */
  readonly served: string[] = [];
  constructor() {
    this.fake.on(async (req) => {
      if (this.fake.inFlight > 1) {
        this.throttled++;
        return RATE_LIMITED;
      }
      const prompt = promptOf(req) ?? '';
      this.served.push(prompt);
      if (prompt === 'hold') await this.gate.promise;
      const ms = /^(\w+) (\d+)ms$/.exec(prompt)?.[2];
      const reply = answer(req, 'ok', prompt === 'slow' ? 1_200 : Number(ms ?? 0));
      return prompt === 'linger' ? { ...reply, steps: [...reply.steps!, { delayMs: 300 }] } : reply;
    });
  }
  reset(): void {
    this.gate.resolve();
    this.gate = deferred();
    this.throttled = 0;
    this.fake.peakInFlight = 0;
  }
}

function yaml(url: string, capMs = 1_000): string {
  return `
routing:
  max_attempts: 1
  retry_after_cap_ms: ${capMs}
upstreams:
  - { id: x, provider: openai-compatible, base_url: "${url}/v1", api_key: "\${TEST_UPSTREAM_KEY}", capacity: { start: 1, ceiling: 1 } }
models:
  - name: plain
    price: { input: 1, output: 1 }
    shed: { wait_ms: 200 }
    targets: [{ upstream: x, model: plain-x }]
  - name: deep
    reasoning: true
    price: { input: 1, output: 1 }
    shed: { wait_ms: 200 }
    targets: [{ upstream: x, model: deep-x }]
keys:
  - { name: k, key_sha256: ${hashKey(CLIENT_KEY)} }
`;
}

const call = (gw: TestGateway, model: string, prompt: string, extra: Record<string, unknown> = {}) =>
  postChat(gw, { model, stream: true, messages: [{ role: 'user', content: prompt }], ...extra });

describe('burst control against an account that takes one call at a time (a fresh account and gateway per test: nothing learned)', () => {
  let account: OneAtATime;
  let gw: TestGateway;
  beforeEach(async () => {
    account = new OneAtATime();
    await account.fake.start();
    gw = await startGateway(yaml(account.fake.url));
  });
  afterEach(async () => {
    account.gate.resolve();
    await gw?.close();
    await account.fake.close();
  });

  test('a stream delivered before its upstream body ended holds its slot until the body ends: at the learned limit the next call waits, never finds the account busy', async () => {
    // The account's limit is learned from one refusal (a held call, then a second one).
    const held = call(gw, 'plain', 'hold');
    await waitUntil(() => account.fake.inFlight === 1);
    const second = call(gw, 'plain', 'second');
    await waitUntil(() => account.throttled === 1);
    account.gate.resolve();
    assert.equal((await held).status, 200);
    await second;
    account.reset();
    const first = await call(gw, 'plain', 'linger');
    assert.equal(first.status, 200, first.text);
    assert.ok(first.ms < 250, `the answer was delivered before its body ended (${first.ms} ms)`);
    const next = await call(gw, 'plain', 'next');
    assert.equal(next.status, 200, next.text);
    assert.equal(account.throttled, 0, 'the account refused no call');
    assert.equal(account.fake.peakInFlight, 1, 'the account never had two calls at once');
  });

  test('throttled max_attempts times: the request waits for the running call to end and is served then', async () => {
    const held = call(gw, 'plain', 'hold');
    await waitUntil(() => account.fake.inFlight === 1);
    const second = call(gw, 'plain', 'second');
    await waitUntil(() => account.throttled === 1);
    await sleep(100);
    account.gate.resolve();
    const r = await second;
    assert.equal(r.status, 200, r.text);
    assert.match(r.headers.get('x-switchyard-shed') ?? '', /^queued:\d+ms$/);
    assert.equal((await held).status, 200);
  });

  test('throttled max_attempts times and no call ends in time: 503 upstream_overloaded with a Retry-After, not the upstream 429', async () => {
    const held = call(gw, 'plain', 'hold');
    await waitUntil(() => account.fake.inFlight === 1);
    const r = await call(gw, 'plain', 'second');
    assert.equal(r.status, 503, r.text);
    assert.ok(r.ms >= 1_100, `it waited the ladder's longest wait (wait_ms 200 + the cap 1,000: ${r.ms} ms)`);
    assert.equal((JSON.parse(r.text) as { error: { code: string } }).error.code, 'upstream_overloaded');
    assert.equal(r.headers.get('retry-after'), '1');
    account.gate.resolve();
    assert.equal((await held).status, 200);
  });

  test('a deep call refused while only a plain call ran there is throttled (it waits and is served), not an upstream failure', async () => {
    const held = call(gw, 'plain', 'hold');
    await waitUntil(() => account.fake.inFlight === 1);
    const deep = call(gw, 'deep', 'deep one', { reasoning_effort: 'high' });
    await waitUntil(() => account.throttled === 1);
    account.gate.resolve();
    const r = await deep;
    assert.equal(r.status, 200, r.text);
    assert.equal((await held).status, 200);
    // Not a failure: the account is not cooling, the next call goes straight through.
    assert.equal((await call(gw, 'plain', 'after')).status, 200);
  });

  test('last rung: a deep call waits wait_ms + retry_after_cap_ms for a place before the 503', async () => {
    const held = call(gw, 'deep', 'hold', { reasoning_effort: 'high' });
    await waitUntil(() => account.fake.inFlight === 1);
    const waiting = call(gw, 'deep', 'second', { reasoning_effort: 'high' });
    // Past wait_ms (200), within wait_ms + the cap (1,200).
    await sleep(600);
    account.gate.resolve();
    const r = await waiting;
    assert.equal(r.status, 200, r.text);
    assert.match(r.headers.get('x-switchyard-shed') ?? '', /^queued:\d+ms$/);
    assert.equal(account.throttled, 0, 'the learned limit kept the second call off the busy account');
    assert.equal((await held).status, 200);
  });
});

describe('first come, first served on an account that takes one call', () => {
  test('calls arriving while one runs reach the account in the order they came, a refused one keeping its place', async () => {
    const account = new OneAtATime();
    await account.fake.start();
    const gw = await startGateway(yaml(account.fake.url).replace('max_attempts: 1', 'max_attempts: 4'));
    try {
      const names = ['A', 'B', 'C', 'D', 'E', 'F'];
      const calls: ReturnType<typeof call>[] = [];
      for (const [i, name] of names.entries()) {
        calls.push(call(gw, 'plain', `${name} ${i === 0 ? 1_500 : 300}ms`));
        await sleep(100);
      }
      for (const r of await Promise.all(calls)) assert.equal(r.status, 200, r.text);
      assert.deepEqual(
        account.served.map((p) => p.split(' ')[0]),
        names,
        `served in arrival order (${account.throttled} refused)`,
      );
    } finally {
      await gw.close();
      await account.fake.close();
    }
  });
});

describe('the wait a shed 503 names', () => {
  test('a deep call that waited in line is told the wait for the next place, not the line behind it: the first in line is told no more than the last', async () => {
    const account = new OneAtATime();
    await account.fake.start();
    const gw = await startGateway(
      yaml(account.fake.url, 5_000).replace(
        'shed: { wait_ms: 200 }\n    targets: [{ upstream: x, model: deep-x }]',
        'shed: { wait_ms: 100 }\n    targets: [{ upstream: x, model: deep-x }]',
      ),
    );
    try {
      // Five served deep calls of ~1.2 s: the model's typical deep call time is known.
      for (let i = 0; i < 5; i++) assert.equal((await call(gw, 'deep', 'slow', { reasoning_effort: 'high' })).status, 200);
      const held = call(gw, 'deep', 'hold', { reasoning_effort: 'high' });
      await waitUntil(() => account.fake.inFlight === 1);
      const waiting: ReturnType<typeof call>[] = [];
      for (let i = 0; i < 3; i++) {
        waiting.push(call(gw, 'deep', `in line ${i}`, { reasoning_effort: 'high' }));
        await sleep(50);
      }
      const [first, , last] = await Promise.all(waiting);
      for (const r of [first!, last!]) assert.equal(r.status, 503, r.text);
      const waitOf = (r: { headers: Headers }) => Number(r.headers.get('retry-after-ms'));
      // One place, one typical call (~1.2 s) until it frees, for whoever is first in line then.
      assert.ok(waitOf(first!) <= waitOf(last!), `first in line told ${waitOf(first!)} ms, last ${waitOf(last!)} ms`);
      assert.ok(waitOf(first!) < 2_000, `the first in line is told about one typical call: ${waitOf(first!)} ms`);
      account.gate.resolve();
      await held;
    } finally {
      account.gate.resolve();
      await gw.close();
      await account.fake.close();
    }
  });
});

async function waitUntil(fn: () => boolean, ms = 3_000): Promise<void> {
  for (const end = Date.now() + ms; !fn();) {
    assert.ok(Date.now() < end, 'timed out waiting');
    await sleep(5);
  }
}
