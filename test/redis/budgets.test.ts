/**
 * Tag and account budgets and their alert webhook across two real gateways sharing one real
 * redis-server, against fake upstream accounts that answer 5 prompt tokens and 2 completion
 * tokens, priced so that every call costs exactly $1 (acctB: $2):
 *
 * - a tag budget spent on one replica refuses the next request on the other, before any
 *   upstream is called, in the chat and the messages API's shape; tags from the key's
 *   metadata win over the header's;
 * - an account budget, once spent, routes calls to the model's other account; a model with
 *   no other account answers 503 naming the budget;
 * - the webhook gets exactly one POST per threshold and period, with both replicas and
 *   concurrent requests crossing it, for tag and key budgets; a webhook that keeps failing is
 *   retried, counted and logged without its URL's token or its headers.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { hashKey } from '../../src/auth/keys.js';
import { buildAdmin } from '../../src/server/admin/api.js';
import { Account } from '../helpers/accounts.js';
import { finishedLine, postChat, startGateway, UPSTREAM_KEY, waitFor, type RawReply, type TestGateway } from '../helpers/gateway.js';
import { metricSum, metricValue } from '../helpers/metrics-text.js';
import { promtoolCheckMetrics } from '../helpers/prometheus.js';
import { RedisServer } from '../helpers/redis-server.js';

const ADMIN_KEY = 'sk-admin-budgets-0123456789abcdef';
const ALERT_TOKEN = 'alert-header-secret-0123456789';
const URL_TOKEN = 'alert-url-secret-9876543210';
const KEYS = {
  search: 'sk-budget-search-0123456789',
  ads: 'sk-budget-ads-0123456789',
  free: 'sk-budget-free-0123456789',
  router: 'sk-budget-router-0123456789',
  alerting: 'sk-budget-alerting-0123456789',
  kb: 'sk-budget-kb-0123456789',
  doomed: 'sk-budget-doomed-0123456789',
};

function yaml(a: Account, b: Account, plain: Account, redisUrl: string, hookUrl: string): string {
  const up = (id: string, acc: Account) => `  - { id: ${id}, provider: openai-compatible, base_url: "${acc.url}/v1", api_key: "\${TEST_UPSTREAM_KEY}" }`;
  return `
server: { log_level: info }
admin: { key_sha256: ${hashKey(ADMIN_KEY)} }
store: { redis_url: "${redisUrl}", replicas: 2, command_timeout_ms: 500 }
routing: { max_attempts: 2 }
upstreams:
${up('acctA', a)}
${up('acctB', b)}
${up('plain', plain)}
models:
  # $1 a call: 5 prompt tokens at $200,000 per 1M.
  - name: tagged
    price: { input: 200000, output: 0 }
    targets: [{ upstream: plain, model: up-plain }]
  - name: routed
    strategy: cheap
    price: { input: 200000, output: 0 }
    targets:
      - { upstream: acctA, model: up-a }
      - { upstream: acctB, model: up-b, price: { input: 400000, output: 0 } }
  - name: solo
    price: { input: 200000, output: 0 }
    targets: [{ upstream: acctA, model: up-a }]
keys:
  - { name: search, key_sha256: ${hashKey(KEYS.search)}, metadata: { team: search } }
  - { name: ads, key_sha256: ${hashKey(KEYS.ads)}, metadata: { team: ads } }
  - { name: free, key_sha256: ${hashKey(KEYS.free)} }
  - { name: router, key_sha256: ${hashKey(KEYS.router)} }
  - { name: alerting, key_sha256: ${hashKey(KEYS.alerting)}, metadata: { team: alerts } }
  - { name: kb, key_sha256: ${hashKey(KEYS.kb)}, limits: { budget_usd: { amount: 2, period: day } } }
  - { name: doomed, key_sha256: ${hashKey(KEYS.doomed)}, metadata: { team: doomed } }
budgets:
  - { name: search, amount_usd: 3, period: month, tag: { team: search } }
  - { name: acct-a-credit, amount_usd: 2, period: day, upstream: acctA }
  - { name: alerts, amount_usd: 10, period: month, tag: { team: alerts } }
  - { name: doomed, amount_usd: 1, period: month, tag: { team: doomed } }
budget_alerts:
  url: "${hookUrl}/hook?token=\${ALERT_URL_TOKEN}"
  headers: { authorization: "Bearer \${ALERT_TOKEN}" }
  retries: 1
  timeout_ms: 2000
`;
}

interface Hook {
  readonly headers: Record<string, string | string[] | undefined>;
  readonly url: string;
  readonly body: { budget: string; scope: unknown; period: string; threshold: number; spent_usd: number; amount_usd: number; at: string; resets_at: string };
}

/** A webhook receiver: records every POST; answers 500 to alerts of the budget `doomed` (while `failDoomed`), 200 to the rest. */
class Receiver {
  readonly hooks: Hook[] = [];
  failDoomed = true;
  private readonly server: Server = createServer((req, res) => {
    let text = '';
    req.on('data', (c: Buffer) => (text += c.toString()));
    req.on('end', () => {
      const hook: Hook = { headers: req.headers, url: req.url ?? '', body: JSON.parse(text) as Hook['body'] };
      this.hooks.push(hook);
      res.writeHead(hook.body.budget === 'doomed' && this.failDoomed ? 500 : 200).end();
    });
  });
  url = '';

  async start(): Promise<this> {
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', r));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  of(budget: string): Hook[] {
    return this.hooks.filter((h) => h.body.budget === budget);
  }

  close(): Promise<void> {
    return new Promise((r) => this.server.close(() => r()));
  }
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
const errorOf = (r: RawReply) => (JSON.parse(r.text) as { error: { type: string; code: string; message: string } }).error;

describe('tag and account budgets across two replicas on Redis', () => {
  let redis: RedisServer;
  const acctA = new Account('acctA');
  const acctB = new Account('acctB');
  const plain = new Account('plain');
  const receiver = new Receiver();
  let a: TestGateway;
  let b: TestGateway;

  /** One non-streamed chat call, returned once the gateway has charged it (its `request finished` line is written after). */
  async function call(gw: TestGateway, key: string, model: string, headers: Record<string, string> = {}): Promise<RawReply> {
    const id = randomUUID();
    const r = await postChat(gw, { model, messages: [{ role: 'user', content: 'hi' }] }, { key, headers: { 'x-request-id': id, ...headers } });
    await finishedLine(gw, id);
    return r;
  }

  const anthropic = (gw: TestGateway, key: string) => new Anthropic({ apiKey: key, baseURL: gw.url, maxRetries: 0 });
  const message = (gw: TestGateway, key: string, model: string) =>
    anthropic(gw, key).messages.create({ model, max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] });

  async function adminBudgets(
    gw: TestGateway,
  ): Promise<{ alerts: unknown; data: { name: string; scope: unknown; spent_usd: number; remaining_usd: number; exhausted: boolean; resets_at: string }[] }> {
    const admin = await buildAdmin(gw);
    try {
      const res = await admin.inject({ method: 'GET', url: '/admin/budgets', headers: { authorization: `Bearer ${ADMIN_KEY}` } });
      assert.equal(res.statusCode, 200, res.body);
      return res.json();
    } finally {
      await admin.close();
    }
  }

  before(async () => {
    redis = await RedisServer.start();
    await Promise.all([acctA.start(), acctB.start(), plain.start(), receiver.start()]);
    const env = { TEST_UPSTREAM_KEY: UPSTREAM_KEY, ALERT_TOKEN, ALERT_URL_TOKEN: URL_TOKEN };
    a = await startGateway(yaml(acctA, acctB, plain, redis.url, receiver.url), env);
    b = await startGateway(yaml(acctA, acctB, plain, redis.url, receiver.url), env);
    assert.equal(a.store.mode, 'redis');
    assert.equal(b.store.mode, 'redis');
  });

  after(async () => {
    await Promise.allSettled([a?.close(), b?.close()]);
    await Promise.allSettled([acctA.fake.close(), acctB.fake.close(), plain.fake.close(), receiver.close()]);
    await redis?.stop();
  });

  test('a tag budget spent through one replica refuses the next request on the other, in each API’s shape', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 3; i++) statuses.push((await call(i % 2 ? b : a, KEYS.search, 'tagged')).status);
    assert.deepEqual(statuses, [200, 200, 200], 'three $1 calls fit the $3 budget');
    const upstreamBefore = plain.count;

    const refused = await call(b, KEYS.search, 'tagged');
    assert.equal(refused.status, 429, refused.text);
    assert.equal(errorOf(refused).type, 'insufficient_quota');
    assert.equal(errorOf(refused).code, 'insufficient_quota');
    assert.match(errorOf(refused).message, /budget "search" \(requests tagged team=search\) spent \$3\.000000 of its \$3 monthly budget/);
    assert.ok(Number(refused.headers.get('retry-after')) >= 1, 'Retry-After until the month ends');
    assert.equal(refused.headers.get('x-should-retry'), 'false', 'nothing changes before the period ends');

    // The OpenAI SDK raises its RateLimitError with the same code, without its own retries
    // (it retries a 429 twice by default, ignoring a Retry-After over a minute).
    const refusedBefore = metricSum(await a.metricsText(), 'switchyard_budget_refusals_total', { budget: 'search', action: 'refused' });
    const sdkErr = await new OpenAI({ apiKey: KEYS.search, baseURL: `${a.url}/v1`, maxRetries: 2 }).chat.completions
      .create({ model: 'tagged', messages: [{ role: 'user', content: 'hi' }] })
      .then(
        () => null,
        (e: unknown) => e,
      );
    assert.ok(sdkErr instanceof OpenAI.RateLimitError, String(sdkErr));
    assert.equal(sdkErr.code, 'insufficient_quota');
    assert.equal(metricSum(await a.metricsText(), 'switchyard_budget_refusals_total', { budget: 'search', action: 'refused' }) - refusedBefore, 1, 'one try');

    // The messages API answers in Anthropic's shape.
    const err = await message(a, KEYS.search, 'tagged').then(
      () => null,
      (e: unknown) => e,
    );
    assert.ok(err instanceof Anthropic.RateLimitError, `expected Anthropic's RateLimitError, got ${String(err)}`);
    const body = err.error as { type: string; error: { type: string; message: string } };
    assert.equal(body.type, 'error');
    assert.equal(body.error.type, 'rate_limit_error');
    assert.match(body.error.message, /budget "search"/);

    // A key without metadata counts against the budget through the header; the key's
    // metadata wins over the header (the `ads` key cannot claim team=search).
    assert.equal((await call(a, KEYS.free, 'tagged', { 'x-switchyard-tags': 'team=search' })).status, 429);
    assert.equal(plain.count, upstreamBefore, 'no refused request reached the upstream');
    assert.equal((await call(b, KEYS.ads, 'tagged', { 'x-switchyard-tags': 'team=search' })).status, 200);
    assert.equal((await call(a, KEYS.free, 'tagged')).status, 200);

    assert.ok(metricSum(await b.metricsText(), 'switchyard_budget_refusals_total', { budget: 'search', action: 'refused' }) >= 1);
    const search = (await adminBudgets(a)).data.find((d) => d.name === 'search')!;
    assert.deepEqual(
      { scope: search.scope, spent: search.spent_usd, remaining: search.remaining_usd, exhausted: search.exhausted },
      { scope: { tag: { team: 'search' } }, spent: 3, remaining: 0, exhausted: true },
    );
  });

  test('an account whose budget is spent is routed around until none is left', async () => {
    const served: (string | null)[] = [];
    for (let i = 0; i < 4; i++) {
      const r = await call(i % 2 ? b : a, KEYS.router, 'routed');
      assert.equal(r.status, 200, r.text);
      served.push(r.headers.get('x-switchyard-upstream'));
    }
    // acctA is the cheaper account: it takes calls until its $2 budget is spent, then acctB does.
    assert.deepEqual(served, ['acctA', 'acctA', 'acctB', 'acctB']);
    assert.equal(acctA.count, 2);
    assert.equal(acctB.count, 2);

    // A model served by acctA alone has no account left.
    const none = await call(b, KEYS.router, 'solo');
    assert.equal(none.status, 503, none.text);
    assert.equal(errorOf(none).code, 'no_upstream_available');
    assert.match(errorOf(none).message, /budget "acct-a-credit" of upstream "acctA" spent \$2\.000000 of its \$2 daily budget/);
    assert.equal(none.headers.get('x-should-retry'), 'false', 'nothing changes before the period ends');
    assert.equal(none.headers.get('retry-after'), null, 'a final 5xx names no wait (a client that ignores x-should-retry would sleep it out)');
    const err = await message(a, KEYS.router, 'solo').then(
      () => null,
      (e: unknown) => e,
    );
    assert.ok(err instanceof Anthropic.APIError && err.status === 503, String(err));
    assert.match((err.error as { error: { message: string } }).error.message, /acct-a-credit/);
    assert.equal(acctA.count, 2, 'no call went to the spent account');

    const credit = (await adminBudgets(b)).data.find((d) => d.name === 'acct-a-credit')!;
    assert.deepEqual(
      { scope: credit.scope, spent: credit.spent_usd, exhausted: credit.exhausted },
      { scope: { upstream: 'acctA' }, spent: 2, exhausted: true },
    );
    const text = await a.metricsText();
    assert.equal(metricValue(text, 'switchyard_budget_spent_usd', { budget: 'acct-a-credit' }), 2);
    assert.equal(metricValue(text, 'switchyard_budget_amount_usd', { budget: 'acct-a-credit' }), 2);
    assert.ok(metricSum(text, 'switchyard_budget_refusals_total', { budget: 'acct-a-credit', action: 'routed_around' }) >= 1);
    const lint = promtoolCheckMetrics(text);
    assert.equal(lint.status, 0, `promtool check metrics: ${lint.stdout}${lint.stderr}`);
  });

  test('the webhook gets one POST per threshold, with both replicas and concurrent requests crossing it', async () => {
    const results = await Promise.all(
      Array.from({ length: 12 }, (_x, i) => postChat(i % 2 ? b : a, { model: 'tagged', messages: [{ role: 'user', content: 'hi' }] }, { key: KEYS.alerting })),
    );
    const ok = results.filter((r) => r.status === 200).length;
    assert.ok(ok >= 10, `at least the $10 fit: ${ok} of 12 served`);
    assert.ok(results.every((r) => r.status === 200 || r.status === 429));
    await waitFor(() => receiver.of('alerts').length >= 3, 5000, 'three alerts');
    await sleep(500);
    const hooks = receiver.of('alerts');
    assert.deepEqual(hooks.map((h) => h.body.threshold).sort(), [0.5, 0.8, 1], 'each threshold once');
    for (const h of hooks) {
      assert.equal(h.headers['authorization'], `Bearer ${ALERT_TOKEN}`);
      assert.equal(h.headers['content-type'], 'application/json');
      assert.equal(h.url, `/hook?token=${URL_TOKEN}`);
      assert.deepEqual(h.body.scope, { tag: { team: 'alerts' } });
      assert.equal(h.body.period, 'month');
      assert.equal(h.body.amount_usd, 10);
      assert.ok(h.body.spent_usd >= h.body.threshold * 10 && h.body.spent_usd <= 12, `spent ${h.body.spent_usd} at threshold ${h.body.threshold}`);
      assert.ok(!Number.isNaN(Date.parse(h.body.at)) && !Number.isNaN(Date.parse(h.body.resets_at)));
    }
    // Past the budget: refused, and no alert is sent again.
    assert.equal((await call(a, KEYS.alerting, 'tagged')).status, 429);

    // A key's own budget alerts too: $1 of $2 crosses 50 %, the second $1 crosses 80 % and 100 %.
    assert.equal((await call(a, KEYS.kb, 'tagged')).status, 200);
    await waitFor(() => receiver.of('key:kb').length >= 1, 5000, 'the key budget 50% alert');
    assert.equal((await call(b, KEYS.kb, 'tagged')).status, 200);
    await waitFor(() => receiver.of('key:kb').length >= 3, 5000, 'the key budget 80% and 100% alerts');
    const refused = await call(a, KEYS.kb, 'tagged');
    assert.equal(errorOf(refused).code, 'insufficient_quota');
    await sleep(300);
    assert.deepEqual(
      receiver
        .of('key:kb')
        .map((h) => [h.body.threshold, h.body.spent_usd])
        .sort(),
      [
        [0.5, 1],
        [0.8, 2],
        [1, 2],
      ],
    );
    assert.deepEqual(receiver.of('key:kb')[0]!.body.scope, { key: 'kb' });
    assert.equal(receiver.of('alerts').length, 3, 'still one alert per threshold');
    // The budgets of the tests before crossed their three thresholds too, once each.
    for (const budget of ['search', 'acct-a-credit'])
      assert.deepEqual(
        receiver
          .of(budget)
          .map((h) => h.body.threshold)
          .sort(),
        [0.5, 0.8, 1],
        budget,
      );
    const sent =
      metricSum(await a.metricsText(), 'switchyard_budget_webhooks_total', { result: 'sent' }) +
      metricSum(await b.metricsText(), 'switchyard_budget_webhooks_total', { result: 'sent' });
    assert.equal(sent, 12, 'every POST answered 2xx is counted once');
  });

  test('a webhook that keeps failing is retried, counted and logged without its secrets', async () => {
    assert.equal((await call(b, KEYS.doomed, 'tagged')).status, 200);
    // Three thresholds crossed at once, each tried twice (retries: 1), all answered 500.
    const failed = async () =>
      metricSum(await a.metricsText(), 'switchyard_budget_webhooks_total', { result: 'failed' }) +
      metricSum(await b.metricsText(), 'switchyard_budget_webhooks_total', { result: 'failed' });
    const end = Date.now() + 6000;
    while ((await failed()) < 3 && Date.now() < end) await sleep(50);
    assert.equal(await failed(), 3);
    assert.equal(receiver.of('doomed').length, 6, 'two tries per threshold');
    const lines = [...a.logLines(), ...b.logLines()].filter((l) => l['msg'] === 'budget alert webhook failed');
    assert.equal(lines.length, 3);
    for (const l of lines) {
      assert.equal(l['budget'], 'doomed');
      assert.equal(l['webhook_host'], new URL(receiver.url).host);
      assert.equal(l['error'], 'HTTP 500');
    }
    for (const line of [...a.logs, ...b.logs]) {
      assert.ok(!line.includes(ALERT_TOKEN) && !line.includes(URL_TOKEN), `a log line holds a webhook secret: ${line.slice(0, 200)}`);
    }
    const view = await adminBudgets(a);
    assert.deepEqual(view.alerts, { webhook_host: new URL(receiver.url).host, thresholds: [0.5, 0.8, 1] });
    assert.ok(!JSON.stringify(view).includes(URL_TOKEN));

    // Undelivered alerts gave their claims back: once the webhook answers, the next add on the
    // other replica sends each of them, once.
    receiver.failDoomed = false;
    const sentOn = async (g: typeof a) => metricSum(await g.metricsText(), 'switchyard_budget_webhooks_total', { result: 'sent' });
    const sentBefore = await sentOn(a);
    await call(a, KEYS.doomed, 'tagged');
    const until = Date.now() + 6000;
    while ((await sentOn(a)) < sentBefore + 3 && Date.now() < until) await sleep(50);
    assert.equal((await sentOn(a)) - sentBefore, 3, 'each undelivered threshold is sent later');
    assert.equal(receiver.of('doomed').length, 9);
    await call(a, KEYS.doomed, 'tagged');
    await call(b, KEYS.doomed, 'tagged');
    await sleep(300);
    assert.equal(receiver.of('doomed').length, 9, 'and then never again this period');
  });
});
