/**
 * Budgets on one gateway without Redis (the in-memory store): a tag budget refuses once
 * spent, an account budget routes to the other account, and the webhook gets each
 * threshold once (the store's local claims), the same as across replicas on Redis
 * (test/redis/budgets.test.ts).
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { hashKey } from '../../src/auth/keys.js';
import { Account, answer } from '../helpers/accounts.js';
import { finishedLine, postChat, startGateway, UPSTREAM_KEY, waitFor, type RawReply, type TestGateway } from '../helpers/gateway.js';

const KEY = 'sk-budget-memory-0123456789';

function yaml(a: Account, b: Account, hook: string): string {
  return `
server: { log_level: info }
routing: { max_attempts: 2 }
upstreams:
  - { id: acctA, provider: openai-compatible, base_url: "${a.url}/v1", api_key: "\${TEST_UPSTREAM_KEY}" }
  - { id: acctB, provider: openai-compatible, base_url: "${b.url}/v1", api_key: "\${TEST_UPSTREAM_KEY}" }
models:
  # $1 a call on acctA, $2 on acctB (5 prompt tokens).
  - name: routed
    strategy: cheap
    price: { input: 200000, output: 0 }
    targets:
      - { upstream: acctA, model: up-a }
      - { upstream: acctB, model: up-b, price: { input: 400000, output: 0 } }
keys:
  - { name: k, key_sha256: ${hashKey(KEY)}, metadata: { team: search } }
budgets:
  - { name: a-credit, amount_usd: 2, period: day, upstream: acctA }
  - { name: search, amount_usd: 5, period: month, tag: { team: search } }
budget_alerts: { url: "${hook}/hook", thresholds: [1.0, 0.5] }
`;
}

describe('budgets on the in-memory store', () => {
  const acctA = new Account('acctA');
  const acctB = new Account('acctB');
  const posts: { budget: string; threshold: number; spent_usd: number }[] = [];
  const hook: Server = createServer((req, res) => {
    let text = '';
    req.on('data', (c: Buffer) => (text += c.toString()));
    req.on('end', () => {
      posts.push(JSON.parse(text) as (typeof posts)[number]);
      res.writeHead(204).end();
    });
  });
  let gw: TestGateway;

  const call = async (): Promise<RawReply> => {
    const id = randomUUID();
    const r = await postChat(gw, { model: 'routed', messages: [{ role: 'user', content: 'hi' }] }, { key: KEY, headers: { 'x-request-id': id } });
    await finishedLine(gw, id);
    return r;
  };

  before(async () => {
    await Promise.all([acctA.start(), acctB.start(), new Promise<void>((r) => hook.listen(0, '127.0.0.1', r))]);
    gw = await startGateway(yaml(acctA, acctB, `http://127.0.0.1:${(hook.address() as AddressInfo).port}`), { TEST_UPSTREAM_KEY: UPSTREAM_KEY });
    assert.equal(gw.store.mode, 'memory');
  });

  after(async () => {
    await gw?.close();
    await Promise.allSettled([acctA.fake.close(), acctB.fake.close(), new Promise((r) => hook.close(r))]);
  });

  test('an account budget routes around, a tag budget refuses, each threshold alerts once', async () => {
    const replies: RawReply[] = [];
    for (let i = 0; i < 4; i++) replies.push(await call());
    // $1 + $1 on acctA (its $2 spent), then $2 on acctB: $4 of the $5 tag budget, then $6.
    assert.deepEqual(
      replies.map((r) => [r.status, r.headers.get('x-switchyard-upstream'), r.headers.get('x-switchyard-cost-usd')]),
      [
        [200, 'acctA', '1'],
        [200, 'acctA', '1'],
        [200, 'acctB', '2'],
        [200, 'acctB', '2'],
      ],
    );
    const refused = await call();
    assert.equal(refused.status, 429);
    assert.match(refused.text, /budget \\"search\\"/);
    assert.equal(acctB.count, 2, 'the refused request reached no upstream');
    await waitFor(() => posts.length >= 4, 3000, 'four alerts');
    await new Promise((r) => setTimeout(r, 200));
    assert.deepEqual(posts.map((p) => `${p.budget}@${p.threshold}=${p.spent_usd}`).sort(), ['a-credit@0.5=1', 'a-credit@1=2', 'search@0.5=4', 'search@1=6']);
  });
});

describe('an account whose budget is spent is passed over on every path, the wait after a throttle included', () => {
  const acctA = new Account('acctA');
  const acctB = new Account('acctB');
  let gw: TestGateway;

  before(async () => {
    await Promise.all([acctA.start(), acctB.start()]);
    const config = yaml(acctA, acctB, 'http://127.0.0.1:9')
      .replace('{ name: a-credit, amount_usd: 2,', '{ name: a-credit, amount_usd: 1,')
      .replace(/budget_alerts:.*\n/, '');
    gw = await startGateway(config, { TEST_UPSTREAM_KEY: UPSTREAM_KEY });
  });
  after(async () => {
    await gw?.close();
    await Promise.allSettled([acctA.fake.close(), acctB.fake.close()]);
  });

  test("a request acctB throttled waits for a place to free, and takes acctB's, never spent acctA's", async () => {
    const post = (content: string) => postChat(gw, { model: 'routed', messages: [{ role: 'user', content }] }, { key: KEY });
    // $1 on acctA: its $1 credit is spent.
    assert.equal((await post('hi')).headers.get('x-switchyard-upstream'), 'acctA');
    // acctB answers in 300 ms, but refuses its second call as over its rate while the first
    // runs (a throttle: the route then waits for a place there to free, not for Retry-After).
    let calls = 0;
    acctB.fake.on((req) =>
      calls++ === 1
        ? {
            status: 429,
            headers: { 'retry-after': '1' },
            body: { error: { message: 'Rate limit reached for requests', type: 'requests', param: null, code: 'rate_limit_exceeded' } },
          }
        : answer(req, 'from acctB', 300),
    );
    const running = post('r2');
    await new Promise((r) => setTimeout(r, 50));
    const r1 = await post('r1');
    const other = await running;
    assert.deepEqual(
      [r1.status, r1.headers.get('x-switchyard-upstream'), other.status, other.headers.get('x-switchyard-upstream')],
      [200, 'acctB', 200, 'acctB'],
    );
    assert.equal(acctA.count, 1, 'acctA, its budget spent, got no call after the first');
  });
});
