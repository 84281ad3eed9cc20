/**
 * Per-key limits and budgets across two real gateways sharing one real redis-server:
 * requests per minute (exactly the limit across replicas), rate-limit headers, token
 * reservations settled to real usage, budgets, key concurrency, the bad-key throttle per
 * address, and local limits once Redis is gone.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Agent, fetch as ufetch } from 'undici';
import { hashKey } from '../../src/auth/keys.js';
import { FakeUpstream, type ReceivedRequest } from '../helpers/fake-upstream.js';
import { startGateway, waitFor, UPSTREAM_KEY, type TestGateway } from '../helpers/gateway.js';
import { RedisServer } from '../helpers/redis-server.js';

const KEYS = {
  rpm: 'sk-limits-rpm-0123456789',
  tpm: 'sk-limits-tpm-0123456789',
  budget: 'sk-limits-budget-0123456789',
  conc: 'sk-limits-conc-0123456789',
  open: 'sk-limits-open-0123456789',
  outage: 'sk-limits-outage-0123456789',
};

function yaml(upstream: string, redisUrl: string): string {
  return `
server: { log_level: info }
store: { redis_url: "${redisUrl}", replicas: 2, command_timeout_ms: 200 }
routing: { max_attempts: 1 }
upstreams:
  - id: fake
    provider: openai-compatible
    base_url: ${upstream}/v1
    api_key: \${TEST_UPSTREAM_KEY}
    max_concurrency: 64
models:
  - name: gpt-test
    price: { input: 2.5, cached_input: 1.25, output: 10 }
    targets: [{ upstream: fake, model: upstream-model-x }]
keys:
  - { name: k-rpm, key_sha256: ${hashKey(KEYS.rpm)}, limits: { rpm: 60 }, metadata: { team: search, owner: ana } }
  - { name: k-tpm, key_sha256: ${hashKey(KEYS.tpm)}, limits: { tpm: 2000 } }
  - { name: k-budget, key_sha256: ${hashKey(KEYS.budget)}, limits: { budget_usd: { amount: 0.0001, period: day } } }
  - { name: k-conc, key_sha256: ${hashKey(KEYS.conc)}, limits: { max_concurrency: 2 } }
  - { name: k-open, key_sha256: ${hashKey(KEYS.open)} }
  - { name: k-outage, key_sha256: ${hashKey(KEYS.outage)}, limits: { rpm: 10 } }
`;
}

let gate: { promise: Promise<void>; resolve(): void };
function newGate(): void {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  gate = { promise, resolve };
}
newGate();

const promptOf = (req: ReceivedRequest) => (req.json?.['messages'] as { content: string }[] | undefined)?.[0]?.content;

interface Res {
  status: number;
  headers: Headers;
  body: Record<string, unknown>;
}

async function chat(url: string, key: string, opts: { prompt?: string; max_tokens?: number; dispatcher?: Agent } = {}): Promise<Res> {
  const res = await ufetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({
      model: 'gpt-test',
      messages: [{ role: 'user', content: opts.prompt ?? 'hi' }],
      ...(opts.max_tokens ? { max_tokens: opts.max_tokens } : {}),
    }),
    ...(opts.dispatcher ? { dispatcher: opts.dispatcher } : {}),
  });
  return { status: res.status, headers: res.headers as unknown as Headers, body: (await res.json()) as Record<string, unknown> };
}

const errorOf = (r: Res) => r.body['error'] as { type: string; code: string; message: string };

describe('per-key limits across two replicas on Redis', () => {
  let redis: RedisServer;
  const fake = new FakeUpstream();
  let a: TestGateway;
  let b: TestGateway;

  before(async () => {
    redis = await RedisServer.start();
    fake.on(async (req) => {
      if (promptOf(req) === 'hold') await gate.promise;
      return {
        status: 200,
        body: {
          id: 'chatcmpl-limits',
          object: 'chat.completion',
          created: 1700000000,
          model: 'upstream-model-x',
          choices: [{ index: 0, message: { role: 'assistant', content: 'ok', refusal: null }, finish_reason: 'stop' }],
          usage: { prompt_tokens: 5, completion_tokens: 2, total_tokens: 7 },
        },
      };
    });
    await fake.start();
    a = await startGateway(yaml(fake.url, redis.url), { TEST_UPSTREAM_KEY: UPSTREAM_KEY });
    b = await startGateway(yaml(fake.url, redis.url), { TEST_UPSTREAM_KEY: UPSTREAM_KEY });
    assert.equal(a.store.mode, 'redis');
    assert.equal(b.store.mode, 'redis');
  });

  after(async () => {
    gate.resolve();
    await Promise.allSettled([a?.close(), b?.close()]);
    await fake.close();
    await redis?.stop();
  });

  test('a 60 RPM key gets exactly 60 of 100 requests spread over two replicas, with headers', async () => {
    const results = await Promise.all(Array.from({ length: 100 }, (_x, i) => chat(i % 2 ? a.url : b.url, KEYS.rpm)));
    const ok = results.filter((r) => r.status === 200);
    const limited = results.filter((r) => r.status === 429);
    assert.equal(ok.length, 60);
    assert.equal(limited.length, 40);
    for (const r of limited) {
      assert.deepEqual(errorOf(r), { ...errorOf(r), type: 'requests', code: 'rate_limit_exceeded' });
      assert.ok(Number(r.headers.get('retry-after')) >= 1);
    }
    const remaining = ok.map((r) => Number(r.headers.get('x-ratelimit-remaining-requests'))).sort((x, y) => y - x);
    assert.deepEqual(
      remaining,
      Array.from({ length: 60 }, (_x, i) => 59 - i),
      'each success saw one fewer remaining',
    );
    for (const r of ok) {
      assert.equal(r.headers.get('x-ratelimit-limit-requests'), '60');
      assert.match(r.headers.get('x-ratelimit-reset-requests') ?? '', /^(\d+m)?\d+(s|ms)$/);
      assert.equal(r.headers.get('x-ratelimit-limit-tokens'), null);
    }
    const metrics = await a.metricsText();
    assert.match(metrics, /switchyard_key_limit_rejections_total\{key="k-rpm",reason="requests"\} \d+/);
    // A key without limits carries no rate-limit headers.
    const open = await chat(a.url, KEYS.open);
    assert.equal(open.status, 200);
    assert.equal(open.headers.get('x-ratelimit-limit-requests'), null);
  });

  test('a TPM limit reserves the estimate, settles to real usage, and rejects what does not fit', async () => {
    const first = await chat(a.url, KEYS.tpm, { max_tokens: 1500 });
    assert.equal(first.status, 200);
    const afterFirst = Number(first.headers.get('x-ratelimit-remaining-tokens'));
    assert.ok(afterFirst < 500 && afterFirst > 400, `reserved ~1500 + prompt, remaining ${afterFirst}`);
    // Settled to 7 real tokens: another 1500 fits (it would not without the settlement).
    const second = await chat(b.url, KEYS.tpm, { max_tokens: 1500 });
    assert.equal(second.status, 200);
    const afterSecond = Number(second.headers.get('x-ratelimit-remaining-tokens'));
    assert.equal(afterSecond, afterFirst - 7, 'the first settled to its 7 real tokens');
    // The second settled too: 2000 - 14 remain, so an estimate over that is refused.
    const big = await chat(a.url, KEYS.tpm, { max_tokens: 1990 });
    assert.equal(big.status, 429);
    assert.equal(errorOf(big).type, 'tokens');
    assert.equal(errorOf(big).code, 'rate_limit_exceeded');
    assert.ok(big.headers.get('retry-after'));
    assert.equal(big.headers.get('x-ratelimit-limit-tokens'), '2000');
    assert.equal(big.headers.get('x-ratelimit-remaining-tokens'), String(2000 - 14), 'the refused reservation is not counted as used');
    // The refused reservation was given back at once: a small call still fits (issue 14).
    const small = await chat(b.url, KEYS.tpm, { max_tokens: 20 });
    assert.equal(small.status, 200, JSON.stringify(small.body));
  });

  test('a budget stops the key at the request that would go over', async () => {
    // Each request costs (5 * 2.5 + 2 * 10) / 1e6 = $0.0000325: three leave $0.0000025, the fourth goes over.
    const statuses: number[] = [];
    let last: Res | null = null;
    for (let i = 0; i < 6; i++) {
      last = await chat(i % 2 ? a.url : b.url, KEYS.budget);
      statuses.push(last.status);
    }
    assert.deepEqual(statuses, [200, 200, 200, 200, 429, 429]);
    assert.equal(errorOf(last!).type, 'insufficient_quota');
    assert.equal(errorOf(last!).code, 'insufficient_quota');
    assert.ok(Number(last!.headers.get('retry-after')) >= 1);
    assert.equal(last!.headers.get('x-should-retry'), 'false', 'nothing changes before the period ends');
    assert.match(errorOf(last!).message, /key "k-budget" spent \$[0-9.]+ of its \$[0-9.e-]+ daily budget; it resets at \d{4}-\d\d-\d\dT00:00:00\.000Z\./);
    assert.match(await b.metricsText(), /switchyard_key_budget_remaining_usd\{key="k-budget"\} 0\n/);
  });

  test('a key concurrency limit holds across replicas and is released', async () => {
    newGate();
    const held = [chat(a.url, KEYS.conc, { prompt: 'hold' }), chat(b.url, KEYS.conc, { prompt: 'hold' })];
    await waitFor(() => fake.requests.filter((r) => promptOf(r) === 'hold').length === 2, 3000, 'two held requests upstream');
    const third = await chat(b.url, KEYS.conc);
    assert.equal(third.status, 429);
    assert.equal(errorOf(third).code, 'rate_limit_exceeded');
    gate.resolve();
    assert.deepEqual(
      (await Promise.all(held)).map((r) => r.status),
      [200, 200],
    );
    assert.equal((await chat(a.url, KEYS.conc)).status, 200);
    assert.equal((await chat(a.url, KEYS.conc)).status, 200);
  });

  test('bad keys from one address are throttled without affecting valid keys or other callers', async () => {
    const attacker = new Agent({ localAddress: '127.0.0.2' });
    try {
      const statuses: number[] = [];
      for (let i = 0; i < 12; i++) statuses.push((await chat(a.url, `sk-wrong-${i}`, { dispatcher: attacker })).status);
      assert.deepEqual(statuses, [...Array(10).fill(401), 429, 429]);
      // A valid key from the same address is never refused because other keys failed.
      assert.equal((await chat(a.url, KEYS.open, { dispatcher: attacker })).status, 200);
      assert.equal((await chat(a.url, KEYS.open)).status, 200, 'another address is not affected');
    } finally {
      await attacker.close();
    }
  });

  test('/admin/keys-style status shows spend, remaining budget and rate usage without key material', async () => {
    const { config } = a.current();
    const rows = await Promise.all(
      config.keys.map(async (k) => ({ name: k.name, s: await a.limits.status({ name: k.name, models: k.models, ...(k.limits ? { limits: k.limits } : {}) }) })),
    );
    const budget = rows.find((r) => r.name === 'k-budget')!.s['budget'] as { spent_usd: number; remaining_usd: number };
    assert.ok(Math.abs(budget.spent_usd - 4 * 0.0000325) < 1e-12);
    assert.equal(budget.remaining_usd, 0);
    assert.deepEqual(rows.find((r) => r.name === 'k-rpm')!.s['rpm'], { limit: 60, used: 60, remaining: 0 }, 'refused requests are given back');
    const text = JSON.stringify(rows);
    for (const k of Object.values(KEYS)) assert.ok(!text.includes(k) && !text.includes(hashKey(k)));
  });

  test('with Redis killed, limits keep working locally (limit / replicas per replica)', async () => {
    await redis.kill();
    await waitFor(() => a.store.mode === 'degraded' && b.store.mode === 'degraded', 3000, 'degraded mode');
    const onA = await Promise.all(Array.from({ length: 8 }, () => chat(a.url, KEYS.outage)));
    assert.equal(onA.filter((r) => r.status === 200).length, 5, `rpm 10 over 2 replicas: 5 locally ${JSON.stringify(onA.map((r) => [r.status, r.body]))}`);
    assert.ok(onA.filter((r) => r.status === 429).every((r) => errorOf(r).type === 'requests'));
    const onB = await Promise.all(Array.from({ length: 8 }, () => chat(b.url, KEYS.outage)));
    assert.equal(onB.filter((r) => r.status === 200).length, 5);
    // Budgets and concurrency fall back to the local store too.
    assert.equal((await chat(a.url, KEYS.budget)).status, 429, 'the spend seen before the outage is kept locally');
    assert.equal((await chat(a.url, KEYS.conc)).status, 200);
  });
});
