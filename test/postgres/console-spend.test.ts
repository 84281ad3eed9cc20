/**
 * The console's spend page (GET /console/spend on the admin listener), end to end: a real
 * gateway with its ledger on a fresh PostgreSQL database, traffic from three keys over three
 * models with tags (x-switchyard-tags) sent with the `openai` client, among it two calls
 * shed by a hot reasoning account and one served by a fallback, then the page in headless
 * Chromium (playwright-core, Debian's chromium). What the page shows is compared with what
 * GET /admin/spend answers for the same range; a tag value that is HTML must stay text; and
 * a gateway without a ledger gets the page that says how to configure one.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { FastifyInstance } from 'fastify';
import OpenAI from 'openai';
import { chromium, type Browser, type Page } from 'playwright-core';
import { hashKey } from '../../src/auth/keys.js';
import { buildAdmin } from '../../src/server/admin/api.js';
import { deferred } from '../helpers/accounts.js';
import { FakeUpstream, type ReceivedRequest, type ScriptedReply } from '../helpers/fake-upstream.js';
import { CLIENT_KEY, OTHER_KEY, startGateway, testConfigYaml, UPSTREAM_KEY, waitFor, type TestGateway } from '../helpers/gateway.js';
import { TestDatabase } from '../helpers/postgres.js';

const ADMIN_KEY = 'sk-admin-spend-page-0123456789abcdef';
const CI_KEY = 'sk-test-ci-bot-0123456789abcdef0';
/**
 * A tag value that is markup. Tag values may not hold `,` or `=` (record/tags.ts), so no
 * attribute can carry a value; an element made from it (img, script) would still show.
 */
const XSS = '<img src onerror alert(1)><script>alert(1)</script>';
const BROWSER_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/** Usage per upstream model: big-x 1000/500 tokens, small-x 2000/1000, thinker-x 3000/2000; flaky-x fails. */
function answer(req: ReceivedRequest): ScriptedReply {
  const model = String(req.json?.['model'] ?? '');
  if (model === 'flaky-x') return { status: 500, body: { error: { message: 'flaky upstream', type: 'server_error', param: null, code: null } } };
  const [prompt, completion] = model === 'big-x' ? [1000, 500] : model === 'thinker-x' ? [3000, 2000] : [2000, 1000];
  return {
    status: 200,
    body: {
      id: 'chatcmpl-spend',
      object: 'chat.completion',
      created: 1,
      model,
      choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }],
      usage: { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion },
    },
  };
}

function yaml(fake: string, deep: string, dbUrl: string, spool: string): string {
  return `
server: { log_level: warn }
admin:
  key_sha256: ${hashKey(ADMIN_KEY)}
routing: { max_attempts: 2 }
ledger: { postgres_url: "${dbUrl}", flush_ms: 50, retry_ms: 200, spool_path: "${spool}" }
upstreams:
  - { id: fake, provider: openai-compatible, base_url: "${fake}/v1", api_key: "\${TEST_UPSTREAM_KEY}" }
  - { id: deep-acct, provider: openai-compatible, base_url: "${deep}/v1", api_key: "\${TEST_UPSTREAM_KEY}", capacity: { start: 1, ceiling: 1 } }
models:
  - name: gpt-big
    price: { input: 5, output: 20 }
    targets: [{ upstream: fake, model: big-x }]
  - name: gpt-small
    price: { input: 0.5, output: 2 }
    targets: [{ upstream: fake, model: small-x }]
  - name: gpt-flaky
    price: { input: 1, output: 1 }
    fallbacks: [gpt-small]
    targets: [{ upstream: fake, model: flaky-x }]
  - name: thinker
    reasoning: true
    price: { input: 2, output: 8 }
    shed: { policy: downgrade, fallback: gpt-small }
    targets: [{ upstream: deep-acct, model: thinker-x }]
keys:
  - { name: team-search, key_sha256: ${hashKey(CLIENT_KEY)}, models: ["*"] }
  - { name: team-web, key_sha256: ${hashKey(OTHER_KEY)}, models: ["*"] }
  - { name: ci-bot, key_sha256: ${hashKey(CI_KEY)}, models: ["*"] }
`;
}

type SpendRow = Record<string, string | number | null>;
interface Spend {
  totals: { requests: number; cost_usd: number };
  data: SpendRow[];
  backlog_rows: number;
}

/** Waits until the browser expression `expr` is truthy (polled from here: the page's CSP refuses eval). */
async function until(page: Page, expr: string, ms = 5000): Promise<void> {
  const end = Date.now() + ms;
  for (;;) {
    if (await page.evaluate(`(() => { try { return !!(${expr}); } catch { return false; } })()`)) return;
    if (Date.now() > end) throw new Error(`timed out waiting for ${expr}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** The chart's series and the legend's entries (name, total text), in drawing order. */
async function chart(page: Page): Promise<{ series: string[]; legend: [string, string][]; rects: number }> {
  return page.evaluate(`({
    series: [...document.querySelectorAll('#chart-svg g.series')].map((g) => g.dataset.series),
    legend: [...document.querySelectorAll('#spend-legend li')].map((li) => [li.dataset.series, li.querySelector('span.muted:last-child').textContent]),
    rects: document.querySelectorAll('#chart-svg g.series rect').length,
  })`);
}

/** The top-keys table's body rows: data-key and each data-col cell's text. */
async function keyRows(page: Page): Promise<{ key: string; cols: Record<string, string> }[]> {
  return page.evaluate(`[...document.querySelectorAll('#top-keys tbody tr[data-key]')].map((tr) => ({
    key: tr.dataset.key,
    cols: Object.fromEntries([...tr.querySelectorAll('td[data-col]')].map((td) => [td.dataset.col, td.textContent])),
  }))`);
}

const dollars = (s: string | undefined): number => Number((s ?? '').replace(/[$,]/g, ''));
const count = (s: string | undefined): number => Number((s ?? '').replace(/,/g, ''));
const percent = (s: string | undefined): number => Number((s ?? '').replace('%', ''));
/** Equal to the page's 6-decimal dollars. */
const sameUsd = (shown: string | undefined, usd: number): boolean => Math.abs(dollars(shown) - usd) <= 5e-7 + 1e-12;

async function signIn(page: Page, url: string): Promise<void> {
  await page.goto(url);
  await page.waitForSelector('#login:not([hidden])', { timeout: 5000 });
  await page.fill('#key', ADMIN_KEY);
  await page.click('#login button[type=submit]');
}

describe('console spend page', () => {
  let db: TestDatabase;
  let dir: string;
  const fake = new FakeUpstream();
  const deep = new FakeUpstream();
  let gw: TestGateway;
  let adm: FastifyInstance;
  let adminUrl: string;
  let browser: Browser;
  let page: Page;
  const pageErrors: string[] = [];
  const cspErrors: string[] = [];
  const dialogs: string[] = [];

  const spend = async (qs: string): Promise<Spend> => {
    const res = await fetch(`${adminUrl}/admin/spend?${qs}`, { headers: { authorization: `Bearer ${ADMIN_KEY}` } });
    assert.equal(res.status, 200, qs);
    return (await res.json()) as Spend;
  };
  /** What the chart on the page was drawn from: its range, as the page asked it. */
  const shownRange = async (): Promise<string> => {
    const [from, to] = (await page.evaluate(`[document.getElementById('spend-chart').dataset.from, document.getElementById('spend-chart').dataset.to]`)) as [
      string,
      string,
    ];
    return `from=${encodeURIComponent(from)}&to=${encodeURIComponent(to)}`;
  };

  before(async () => {
    db = await TestDatabase.create();
    dir = mkdtempSync(join(tmpdir(), 'sy-console-spend-'));
    await fake.start();
    await deep.start();
    fake.on(answer);
    const gate = deferred();
    deep.on(async (req) => {
      await gate.promise;
      return answer(req);
    });
    gw = await startGateway(yaml(fake.url, deep.url, db.url(), join(dir, 'spool.jsonl')), { TEST_UPSTREAM_KEY: UPSTREAM_KEY });
    adm = await buildAdmin(gw);
    adminUrl = await adm.listen({ host: '127.0.0.1', port: 0 });

    const client = (apiKey: string) => new OpenAI({ apiKey, baseURL: `${gw.url}/v1`, maxRetries: 0 });
    const chat = (c: OpenAI, model: string, tags: string | null, extra: { reasoning_effort?: 'high' } = {}) =>
      c.chat.completions
        .create({ model, messages: [{ role: 'user', content: 'hi' }], ...extra }, tags === null ? {} : { headers: { 'x-switchyard-tags': tags } })
        .withResponse();
    const search = client(CLIENT_KEY);
    const web = client(OTHER_KEY);
    const ci = client(CI_KEY);
    for (let i = 0; i < 4; i++) await chat(search, 'gpt-big', 'repo=api,dev=ana');
    for (let i = 0; i < 2; i++) await chat(search, 'gpt-small', 'repo=api');
    for (let i = 0; i < 3; i++) await chat(web, 'gpt-small', 'repo=web');
    await chat(web, 'gpt-big', `repo=${XSS}`);
    // ci-bot: one deep call holds the reasoning account's only place; the next two are shed.
    const held = chat(ci, 'thinker', null, { reasoning_effort: 'high' });
    await waitFor(() => deep.requests.length === 1, 3000, 'the first deep call to reach the account');
    for (let i = 0; i < 2; i++) {
      const shed = await chat(ci, 'thinker', null, { reasoning_effort: 'high' });
      assert.equal(shed.response.headers.get('x-switchyard-shed'), 'thinker->gpt-small');
    }
    gate.resolve();
    assert.equal((await held).response.headers.get('x-switchyard-shed'), null);
    // Last, so its failure cools nothing the others use.
    const fb = await chat(web, 'gpt-flaky', 'repo=web');
    assert.equal(fb.response.headers.get('x-switchyard-fallback'), 'gpt-flaky->gpt-small');

    const end = Date.now() + 10_000;
    for (;;) {
      const s = await spend('granularity=none');
      if (s.totals.requests === 14 && s.backlog_rows === 0) break;
      if (Date.now() > end) throw new Error(`the ledger never held the 14 rows: ${JSON.stringify(s)}`);
      await new Promise((r) => setTimeout(r, 50));
    }

    browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: BROWSER_ARGS });
    page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
    page.on('pageerror', (err) => pageErrors.push(err.message));
    page.on('console', (msg) => {
      if (msg.type() === 'error' && /Content Security Policy|Refused to/i.test(msg.text())) cspErrors.push(msg.text());
    });
    page.on('dialog', (d) => {
      dialogs.push(d.message());
      void d.dismiss();
    });
  });
  after(async () => {
    await browser?.close();
    await adm?.close();
    await gw?.close();
    await fake.close();
    await deep.close();
    await db?.drop();
    rmSync(dir, { recursive: true, force: true });
  });

  test('the page is public and static, with its own strict CSP; its data needs the admin key', async () => {
    const res = await fetch(`${adminUrl}/console/spend`);
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^text\/html/);
    const csp = res.headers.get('content-security-policy') ?? '';
    assert.match(csp, /default-src 'none'/);
    assert.match(csp, /script-src 'sha256-[A-Za-z0-9+/=]+'(;|$)/);
    assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval|https?:/);
    const live = (await fetch(`${adminUrl}/console`)).headers.get('content-security-policy') ?? '';
    assert.notEqual(/script-src ([^;]+)/.exec(csp)?.[1], /script-src ([^;]+)/.exec(live)?.[1], 'each page allows only its own script');
    const html = await res.text();
    assert.doesNotMatch(html, /<script[^>]+src=|<link[^>]+stylesheet|https?:\/\/(?!www\.w3\.org\/2000\/svg)/, 'no external assets');
    assert.ok(!html.includes('team-search') && !html.includes('gpt-big'), 'the page itself carries no data');
    assert.match(html, /<a href="\/console">Live<\/a><a href="\/console\/spend" aria-current="page">Spend<\/a>/);
    assert.equal((await fetch(`${gw.url}/console/spend`)).status, 404, 'not on the client listener');
  });

  test('per key: one series per key, the top keys and totals equal /admin/spend, the shed share shows', async () => {
    await signIn(page, `${adminUrl}/console/spend`);
    await page.waitForSelector('#spend-chart[data-group="key"]', { timeout: 5000 });
    assert.equal(await page.isVisible('#ledger-off'), false);
    assert.equal(await page.isVisible('#tag'), false, 'no tag name field unless grouping by tag');
    const range = await shownRange();

    const perPeriod = await spend(`${range}&granularity=hour&group_by=key`);
    const byKey = new Map<string, number>();
    for (const r of perPeriod.data) byKey.set(String(r['key']), (byKey.get(String(r['key'])) ?? 0) + Number(r['cost_usd']));
    const expected = [...byKey.entries()].sort((a, b) => b[1] - a[1]);
    assert.deepEqual(expected.map(([k]) => k).sort(), ['ci-bot', 'team-search', 'team-web']);
    const c = await chart(page);
    assert.deepEqual(
      c.series,
      expected.map(([k]) => k),
      'one series per key, biggest first',
    );
    assert.deepEqual(
      c.legend.map(([name]) => name),
      c.series,
    );
    for (const [name, total] of c.legend) assert.ok(sameUsd(total, byKey.get(name)!), `${name}: legend ${total} vs ${byKey.get(name)}`);
    assert.ok(c.rects >= 3, 'every key has a column segment');

    const keys = await spend(`${range}&granularity=none&group_by=key`);
    const rows = await keyRows(page);
    assert.deepEqual(
      rows.map((r) => r.key),
      keys.data.map((r) => r['key']),
      'top keys in the API order (by spend)',
    );
    for (const api of keys.data) {
      const shown = rows.find((r) => r.key === api['key'])!.cols;
      const n = Number(api['requests']);
      assert.ok(sameUsd(shown['cost_usd'], Number(api['cost_usd'])), `${api['key']} spend ${shown['cost_usd']} vs ${api['cost_usd']}`);
      assert.equal(count(shown['requests']), n);
      assert.equal(count(shown['input_tokens']), Number(api['input_tokens']));
      assert.equal(count(shown['output_tokens']), Number(api['output_tokens']));
      assert.ok(Math.abs(percent(shown['shed_share']) - (100 * Number(api['shed'])) / n) <= 0.05, `${api['key']} shed share ${shown['shed_share']}`);
      assert.ok(
        Math.abs(percent(shown['fallback_share']) - (100 * Number(api['fallback'])) / n) <= 0.05,
        `${api['key']} fallback share ${shown['fallback_share']}`,
      );
    }
    const ci = rows.find((r) => r.key === 'ci-bot')!.cols;
    assert.equal(ci['shed_share'], '66.7%', "two of ci-bot's three calls were shed");
    assert.equal(rows.find((r) => r.key === 'team-web')!.cols['fallback_share'], '20.0%');
    assert.equal(rows.find((r) => r.key === 'team-search')!.cols['input_tokens'], '8,000');

    const total = async (name: string) => (await page.textContent(`#spend-totals td[data-total="${name}"]`)) ?? '';
    assert.ok(sameUsd(await total('cost_usd'), keys.totals.cost_usd));
    assert.equal(count(await total('requests')), keys.totals.requests);
    assert.equal(keys.totals.requests, 14);
    assert.equal(await total('shed'), '2');
    assert.equal(await total('shed_share'), '14.3%');
    assert.equal(await total('fallback_share'), '7.1%');
    const foot = await page.evaluate(`[...document.querySelectorAll('#top-keys tfoot td[data-col]')].map((td) => td.textContent)`);
    assert.equal((foot as string[])[0], 'All keys');
    assert.ok(sameUsd((foot as string[])[1], keys.totals.cost_usd));
  });

  test('group by tag: a tag value that is markup is drawn as text; no tag is its own series', async () => {
    await page.selectOption('#group', 'tag');
    assert.equal(await page.isVisible('#tag'), true, 'the tag name field shows');
    await page.fill('#tag', 'repo');
    await page.press('#tag', 'Enter');
    await page.waitForSelector('#spend-chart[data-group="tag:repo"]', { timeout: 5000 });
    const c = await chart(page);
    const api = await spend(`${await shownRange()}&granularity=hour&group_by=${encodeURIComponent('tag:repo')}`);
    const names = [...new Set(api.data.map((r) => (r['tag:repo'] === null ? '(no tag repo)' : String(r['tag:repo']))))];
    assert.deepEqual([...c.series].sort(), names.sort());
    assert.deepEqual([...c.series].sort(), ['(no tag repo)', XSS, 'api', 'web'].sort());
    assert.ok(
      c.legend.some(([name]) => name === XSS),
      'the markup is the legend text, character for character',
    );
    const markup = await page.evaluate(`({
      elements: document.querySelectorAll('#main img, #main script, #main iframe, #main object').length,
      titles: [...document.querySelectorAll('#chart-svg title')].some((t) => t.textContent.startsWith(${JSON.stringify(XSS)})),
    })`);
    assert.deepEqual(markup, { elements: 0, titles: true });
    assert.deepEqual(dialogs, [], 'nothing ran');
  });

  test("changing the group to model re-renders; a bad tag name shows the API's message", async () => {
    await page.selectOption('#group', 'model');
    await page.waitForSelector('#spend-chart[data-group="model"]', { timeout: 5000 });
    assert.equal(await page.isVisible('#tag'), false);
    const api = await spend(`${await shownRange()}&granularity=hour&group_by=model`);
    const byModel = new Map<string, number>();
    for (const r of api.data) byModel.set(String(r['model']), (byModel.get(String(r['model'])) ?? 0) + Number(r['cost_usd']));
    const c = await chart(page);
    assert.deepEqual(
      c.series,
      [...byModel.entries()].sort((a, b) => b[1] - a[1]).map(([m]) => m),
    );
    assert.deepEqual([...c.series].sort(), ['gpt-big', 'gpt-small', 'thinker'], 'shed and fallback calls count for the model that served them');
    for (const [name, total] of c.legend) assert.ok(sameUsd(total, byModel.get(name)!), `${name}: ${total}`);

    await page.selectOption('#granularity', 'day');
    await page.waitForSelector('#spend-chart[data-granularity="day"]', { timeout: 5000 });
    const days = await page.evaluate(`[...new Set([...document.querySelectorAll('#chart-svg rect[data-period]')].map((r) => r.dataset.period))]`);
    const today = new Date().toISOString().slice(0, 10);
    assert.ok(
      (days as string[]).every((d) => d.endsWith('T00:00:00.000Z')) && (days as string[]).some((d) => d.startsWith(today)),
      `day columns: ${String(days)}`,
    );

    // (Picking "tag" again redraws by tag:repo, the name still in the field.)
    await page.selectOption('#group', 'tag');
    await page.fill('#tag', 'Repo');
    await page.press('#tag', 'Enter');
    await until(page, `document.getElementById('spend-error').textContent.includes('Unknown group "tag:Repo"')`);
    assert.notEqual(await page.getAttribute('#spend-chart', 'data-group'), 'tag:Repo', 'nothing drawn for the refused question');
    assert.equal(await page.isVisible('#chart-svg'), true, 'the last good chart stays');
    assert.deepEqual(pageErrors, []);
    assert.deepEqual(cspErrors, []);
  });

  test('the tabs share the sign-in: Live and back to Spend without the key again', async () => {
    await page.click('nav a[href="/console"]');
    await page.waitForSelector('#upstreams tbody tr[data-target]', { timeout: 5000 });
    assert.equal(await page.isVisible('#login'), false);
    await page.click('nav a[href="/console/spend"]');
    await page.waitForSelector('#spend-chart[data-group="key"]', { timeout: 5000 });
    const text = await page.innerText('body');
    for (const secret of [ADMIN_KEY, CLIENT_KEY, OTHER_KEY, CI_KEY, UPSTREAM_KEY, hashKey(CLIENT_KEY)]) assert.ok(!text.includes(secret), 'no key on the page');
    assert.deepEqual(pageErrors, []);
    assert.deepEqual(cspErrors, []);
    assert.deepEqual(dialogs, []);
  });
});

describe('console spend page without a ledger', () => {
  test('says that no ledger is configured and how to set one, instead of a chart', async () => {
    const fake = await new FakeUpstream().start();
    const gw = await startGateway(testConfigYaml(fake.url) + `admin:\n  key_sha256: ${hashKey(ADMIN_KEY)}\n`);
    const adm = await buildAdmin(gw);
    const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: BROWSER_ARGS });
    try {
      const url = await adm.listen({ host: '127.0.0.1', port: 0 });
      const page = await browser.newPage();
      const errors: string[] = [];
      page.on('pageerror', (err) => errors.push(err.message));
      await signIn(page, `${url}/console/spend`);
      await page.waitForSelector('#ledger-off:not([hidden])', { timeout: 5000 });
      const text = await page.innerText('#ledger-off');
      assert.match(text, /DATABASE_URL/);
      assert.match(text, /ledger\.postgres_url/);
      assert.match(await page.innerText('#ledger-off-detail'), /No usage ledger is configured/, "the API's own message");
      assert.equal(await page.isVisible('#spend-data'), false, 'no empty chart or tables');
      assert.equal(await page.isVisible('#login'), false);
      assert.match((await page.textContent('#status')) ?? '', /ledger is unavailable/);
      assert.deepEqual(errors, []);
    } finally {
      await browser.close();
      await adm.close();
      await gw.close();
      await fake.close();
    }
  });
});
