/**
 * The built-in console (GET /console on the admin listener), end to end in a real browser:
 * the gateway and its admin app in-process, two fake upstreams, Debian's Chromium driven by
 * playwright-core. The page is opened once; traffic sent with the `openai` client (a plain
 * call, a replayed stream, a fallback, an upstream error) must show up in its tables
 * without a reload, and no key, prompt or completion may ever reach the page.
 * Takes a full-page screenshot: into docs/console.png when SWITCHYARD_UPDATE_DOCS=1 (to
 * refresh the picture in docs/observability.md), else into the OS temp dir, so a test run rewrites no
 * tracked file.
 */
import assert from 'node:assert/strict';
import { mkdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Writable } from 'node:stream';
import { after, before, describe, test } from 'node:test';
import type { FastifyInstance } from 'fastify';
import OpenAI from 'openai';
import { chromium, type Browser, type Page } from 'playwright-core';
import { buildApp, type Gateway } from '../../src/app.js';
import { hashKey } from '../../src/auth/keys.js';
import { parseTestConfig } from '../helpers/config.js';
import { buildAdmin } from '../../src/server/admin/api.js';
import { FakeUpstream, type ReceivedRequest, type ScriptedReply } from '../helpers/fake-upstream.js';
import { CLIENT_KEY, OTHER_KEY, UPSTREAM_KEY } from '../helpers/gateway.js';
import { replay } from '../helpers/recordings.js';

const ADMIN_KEY = 'sk-admin-console-0123456789abcdef0123';
const SPARE_UPSTREAM_KEY = 'sk-spare-upstream-secret-zyxwvutsrqponm';
const PROMPT_CANARY = 'PROMPT-CANARY-7d1c4e';
const COMPLETION_CANARY = 'COMPLETION-CANARY-93ab0f';
const here = dirname(fileURLToPath(import.meta.url));
/** docs/console.png (from the compiled `.test-build/test/integration`) when asked, else a temp file. */
const SCREENSHOT =
  process.env['SWITCHYARD_UPDATE_DOCS'] === '1' ? join(here, '..', '..', '..', 'docs', 'console.png') : join(tmpdir(), `switchyard-console-${process.pid}.png`);

const STREAM = replay('openai-chat-stream-text-include-usage.sse');

function answer(req: ReceivedRequest, from: string): ScriptedReply {
  const model = String(req.json?.['model'] ?? '');
  if (model.startsWith('upstream-broken') || model.startsWith('upstream-down')) {
    return { status: 500, body: { error: { message: `boom from ${from}`, type: 'server_error', param: null, code: null } } };
  }
  if (req.json?.['stream'] === true) return STREAM(req);
  return {
    status: 200,
    delayMs: 20,
    body: {
      id: 'chatcmpl-console',
      object: 'chat.completion',
      created: 1,
      model,
      choices: [{ index: 0, message: { role: 'assistant', content: `${COMPLETION_CANARY} from ${from}` }, finish_reason: 'stop' }],
      usage: { prompt_tokens: 1200, completion_tokens: 300, total_tokens: 1500, prompt_tokens_details: { cached_tokens: 800 } },
    },
  };
}

function yaml(fake: string, spare: string): string {
  return `
server:
  log_level: info
admin:
  key_sha256: ${hashKey(ADMIN_KEY)}
routing:
  max_attempts: 2
  cooldown: { failures: 1, base_ms: 60000, max_ms: 60000 }
upstreams:
  - id: fake
    provider: openai-compatible
    base_url: ${fake}/v1
    api_key: \${TEST_UPSTREAM_KEY}
    max_concurrency: 16
    timeouts: { connect_ms: 2000, first_byte_ms: 5000, idle_ms: 5000 }
  - id: spare
    provider: openai-compatible
    base_url: ${spare}/v1
    api_key: \${SPARE_UPSTREAM_KEY}
    timeouts: { connect_ms: 2000, first_byte_ms: 5000, idle_ms: 5000 }
models:
  - name: gpt-test
    price: { input: 2.5, output: 10 }
    targets:
      - { upstream: fake, model: upstream-model-x }
  - name: flaky
    price: { input: 2.5, output: 10 }
    fallbacks: [backup]
    targets:
      - { upstream: fake, model: upstream-broken }
  - name: backup
    price: { input: 1, output: 4 }
    targets:
      - { upstream: spare, model: upstream-backup }
  - name: broken
    price: { input: 1, output: 1 }
    targets:
      - { upstream: fake, model: upstream-down }
keys:
  - name: team-a
    key_sha256: ${hashKey(CLIENT_KEY)}
    models: ["*"]
  - name: team-budget
    key_sha256: ${hashKey(OTHER_KEY)}
    models: ["gpt-test"]
    limits: { rpm: 60, budget_usd: { amount: 5, period: day } }
`;
}

interface RowData {
  requestId: string;
  cols: Record<string, string>;
}

/**
 * The data rows of a table (those naming a request, a target or a key), each with its
 * `data-col` cells as column name -> text. (Browser code is passed as text: the test build
 * has no DOM types.)
 */
async function rows(page: Page, table: string): Promise<RowData[]> {
  return page.evaluate(`[...document.querySelectorAll('#${table} tbody tr')]
    .filter((tr) => tr.dataset.requestId !== undefined || tr.dataset.target !== undefined || tr.dataset.key !== undefined)
    .map((tr) => ({
      requestId: tr.dataset.requestId ?? tr.dataset.target ?? tr.dataset.key,
      cols: Object.fromEntries([...tr.querySelectorAll('td[data-col]')].map((td) => [td.dataset.col, td.textContent.trim()])),
    }))`);
}

/**
 * Waits until the browser expression `expr` is truthy, polling from here (waitForFunction
 * with a string would `eval` inside the page, which the page's CSP rightly refuses).
 */
async function until(page: Page, expr: string, ms = 5000): Promise<void> {
  const end = Date.now() + ms;
  for (;;) {
    if (await page.evaluate(`(() => { try { return !!(${expr}); } catch { return false; } })()`)) return;
    if (Date.now() > end) throw new Error(`timed out waiting for ${expr}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function total(page: Page, name: string): Promise<string> {
  return (await page.textContent(`#totals td[data-total="${name}"]`))?.trim() ?? '';
}

const dollars = (s: string | undefined): number => Number((s ?? '').replace(/[$,]/g, ''));

describe('console', () => {
  const fake = new FakeUpstream();
  const spare = new FakeUpstream();
  let gw: Gateway;
  let admin: FastifyInstance;
  let url: string;
  let adminUrl: string;
  let browser: Browser;

  before(async () => {
    await fake.start();
    await spare.start();
    fake.on((req) => answer(req, 'fake'));
    spare.on((req) => answer(req, 'spare'));
    const quiet = new Writable({ write: (_c, _e, cb) => cb() });
    const env = { TEST_UPSTREAM_KEY: UPSTREAM_KEY, SPARE_UPSTREAM_KEY };
    gw = await buildApp(parseTestConfig(yaml(fake.url, spare.url), env, 'console.yaml'), { logStream: quiet, env });
    url = await gw.app.listen({ host: '127.0.0.1', port: 0 });
    admin = await buildAdmin(gw);
    adminUrl = await admin.listen({ host: '127.0.0.1', port: 0 });
    browser = await chromium.launch({
      executablePath: '/usr/bin/chromium',
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
    });
  });
  after(async () => {
    await browser?.close();
    await Promise.allSettled([admin?.close(), gw?.app.close()]);
    await fake.close();
    await spare.close();
  });

  test('the data endpoint needs the admin key; the page is public, strict CSP, no data in it', async () => {
    const data = `${adminUrl}/admin/console.json`;
    for (const [headers, status] of [
      [{}, 401],
      [{ authorization: 'Bearer sk-wrong-key' }, 401],
      [{ authorization: `Bearer ${CLIENT_KEY}` }, 403],
      [{ authorization: `Bearer ${ADMIN_KEY}` }, 200],
    ] as const) {
      const res = await fetch(data, { headers });
      assert.equal(res.status, status, `console.json with ${JSON.stringify(headers)}`);
      await res.arrayBuffer();
    }
    // Not on the client listener.
    assert.equal((await fetch(`${url}/console`)).status, 404);
    assert.equal((await fetch(`${url}/admin/console.json`, { headers: { authorization: `Bearer ${ADMIN_KEY}` } })).status, 404);

    const page = await fetch(`${adminUrl}/console`);
    assert.equal(page.status, 200);
    assert.match(page.headers.get('content-type') ?? '', /^text\/html/);
    const csp = page.headers.get('content-security-policy') ?? '';
    assert.match(csp, /default-src 'none'/);
    assert.match(csp, /connect-src 'self'/);
    assert.match(csp, /script-src 'sha256-[A-Za-z0-9+/=]+'(;|$)/);
    assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval|https?:/);
    const html = await page.text();
    assert.doesNotMatch(html, /<script[^>]+src=|<link[^>]+stylesheet|https?:\/\//, 'no external assets');
    assert.ok(!html.includes('team-a') && !html.includes('upstream-model-x'), 'the page itself carries no data');
  });

  test('live page: upstream table, then traffic shows up without a reload; no secrets anywhere', async () => {
    const page = await browser.newPage({ viewport: { width: 1500, height: 900 } });
    const cspErrors: string[] = [];
    const pageErrors: string[] = [];
    page.on('console', (msg) => {
      if (msg.type() === 'error' && /Content Security Policy|Refused to/i.test(msg.text())) cspErrors.push(msg.text());
    });
    page.on('pageerror', (err) => pageErrors.push(err.message));

    await page.goto(`${adminUrl}/console`);
    await page.waitForSelector('#login:not([hidden])', { timeout: 5000 });
    assert.equal(await page.isVisible('#main'), false, 'no data before the key is given');

    // A client key is refused with a message, and is not kept.
    await page.fill('#key', CLIENT_KEY);
    await page.click('#login button[type=submit]');
    await until(page, `document.getElementById('login-error').textContent.includes('client key')`);
    assert.equal(await page.evaluate('sessionStorage.length'), 0);

    await page.fill('#key', ADMIN_KEY);
    await page.click('#login button[type=submit]');
    await page.waitForSelector('#upstreams tbody tr[data-target]', { timeout: 5000 });
    assert.equal(await page.inputValue('#key'), '', 'the key does not stay in the input');

    const ups = await rows(page, 'upstreams');
    assert.deepEqual(ups.map((r) => `${r.cols['upstream']}|${r.cols['model']}|${r.cols['state']}`).sort(), [
      'fake|broken|healthy',
      'fake|flaky|healthy',
      'fake|gpt-test|healthy',
      'spare|backup|healthy',
    ]);
    assert.ok(ups.every((r) => r.cols['provider'] === 'openai-compatible' && r.cols['mode'] === 'live'));
    assert.ok(
      ups.every((r) => /^\d+ \/ \d+$/.test(r.cols['heat'] ?? '') && /\d/.test(r.cols['latency'] ?? '')),
      'window heat and latency estimate shown',
    );
    assert.equal(await total(page, 'requests'), '0');
    assert.equal((await rows(page, 'recent')).length, 0);
    const keysBefore = await rows(page, 'keys');
    assert.deepEqual(keysBefore.map((k) => k.cols['name']).sort(), ['team-a', 'team-budget']);
    assert.equal(dollars(keysBefore.find((k) => k.cols['name'] === 'team-a')?.cols['spend_today']), 0);
    assert.match(keysBefore.find((k) => k.cols['name'] === 'team-budget')?.cols['budget'] ?? '', /of \$5\.00 \/ day/);
    assert.ok(
      keysBefore.every((k) => k.cols['cache_reads'] === '\u2013'),
      'no cache reads before any prompt',
    );

    // Marks this document: a reload would lose it.
    await page.evaluate(`window.consoleMarker = 'still-here'`);

    const client = new OpenAI({ apiKey: CLIENT_KEY, baseURL: `${url}/v1`, maxRetries: 0 });
    const messages = [{ role: 'user' as const, content: `${PROMPT_CANARY} hello` }];
    const r1 = await client.chat.completions.create({ model: 'gpt-test', messages });
    assert.match(r1.choices[0]?.message.content ?? '', new RegExp(COMPLETION_CANARY));
    await client.chat.completions.create({ model: 'gpt-test', messages });
    const stream = await client.chat.completions.create({ model: 'gpt-test', messages, stream: true, stream_options: { include_usage: true } });
    for await (const _chunk of stream) void _chunk;
    const fb = await client.chat.completions.create({ model: 'flaky', messages }).withResponse();
    assert.equal(fb.response.headers.get('x-switchyard-fallback'), 'flaky->backup');
    await assert.rejects(
      client.chat.completions.create({ model: 'broken', messages }),
      (err: unknown) => err instanceof OpenAI.APIError && (err.status ?? 0) >= 500,
    );

    await until(page, `document.querySelectorAll('#recent tbody tr[data-request-id]').length === 5`);
    assert.equal(await page.evaluate('window.consoleMarker'), 'still-here', 'the page was not reloaded');

    const recent = await rows(page, 'recent');
    assert.deepEqual(recent.map((r) => r.cols['model']).sort(), ['backup', 'broken', 'gpt-test', 'gpt-test', 'gpt-test']);
    assert.ok(recent.every((r) => r.cols['key'] === 'team-a'));
    assert.equal(recent[0]!.cols['model'], 'broken', 'newest first');
    assert.ok(Number(recent[0]!.cols['status']) >= 500);
    assert.match(recent[0]!.cols['outcome'] ?? '', /^upstream_error \(server\)$/);
    const backup = recent.find((r) => r.cols['model'] === 'backup')!;
    assert.equal(backup.cols['status'], '200');
    assert.equal(backup.cols['upstream'], 'spare');
    assert.match(backup.cols['marks'] ?? '', /attempts 2/);
    assert.ok(dollars(backup.cols['cost']) > 0);
    const ok = recent.filter((r) => r.cols['model'] === 'gpt-test');
    assert.ok(ok.every((r) => r.cols['status'] === '200' && r.cols['outcome'] === 'ok' && r.cols['upstream'] === 'fake'));
    assert.ok(ok.every((r) => dollars(r.cols['cost']) > 0 && /^[\d,]+ \/ [\d,]+$/.test(r.cols['tokens'] ?? '')));
    assert.equal(ok.filter((r) => r.cols['ttft'] !== '\u2013').length, 1, 'TTFT only for the stream');
    assert.ok(ok.filter((r) => r.cols['tokens'] === '1,200 / 300').length === 2, 'usage of the JSON answers');
    const ids = new Set(recent.map((r) => r.requestId));
    assert.ok(ids.has(fb.response.headers.get('x-request-id') ?? ''), 'rows carry the request id');

    // Counters moved.
    await until(page, `document.querySelector('#totals td[data-total="requests"]').textContent === '5'`);
    assert.equal(await total(page, 'ok'), '4');
    assert.equal(await total(page, 'upstream_error'), '1');
    assert.equal(await total(page, 'fallbacks'), '1');
    assert.ok(dollars(await total(page, 'spend_today')) > 0);
    const reroutes = await page.evaluate(
      `[...document.querySelectorAll('#reroute-counts tbody tr')].map((tr) => [...tr.cells].map((c) => c.textContent).join('|'))`,
    );
    assert.deepEqual(reroutes, ['fallback|flaky \u2192 backup|1']);
    const rerouted = await rows(page, 'reroute-recent');
    assert.deepEqual(
      rerouted.map((r) => `${r.cols['model']}|${r.cols['marks']}`),
      ['backup|fallback flaky \u2192 backupattempts 2'],
    );

    // Spend for the key (the store's per-day counter is written just after the response).
    await until(page, `Number(document.querySelector('#keys tr[data-key="team-a"] td[data-col="spend_today"]').textContent.replace(/[$,]/g, '')) > 0`);
    const spend = dollars((await rows(page, 'keys')).find((k) => k.cols['name'] === 'team-a')?.cols['spend_today']);
    assert.ok(Math.abs(spend - (await gw.limits.spendToday('key', 'team-a'))) < 1e-6, `page spend ${spend} matches the store`);
    // Cache reads per key: 800 of each JSON answer's 1,200 prompt tokens (two gpt-test, one backup).
    const reads = new Map((await rows(page, 'keys')).map((k) => [k.cols['name'], k.cols['cache_reads']]));
    assert.ok(/^2,400 \(\d+\.\d%\)$/.test(reads.get('team-a') ?? '') && reads.get('team-budget') === '\u2013', JSON.stringify([...reads]));

    // The broken target's circuit opened.
    await until(page, `document.querySelector('#upstreams tr[data-target="fake/upstream-down"] td[data-col="state"]').textContent === 'cooling'`);

    // No key, hash, prompt or completion anywhere: not in the DOM, not in what the page fetched.
    const html = await page.content();
    const text = await page.innerText('body');
    const json = await (await fetch(`${adminUrl}/admin/console.json`, { headers: { authorization: `Bearer ${ADMIN_KEY}` } })).text();
    for (const secret of [
      CLIENT_KEY,
      OTHER_KEY,
      UPSTREAM_KEY,
      SPARE_UPSTREAM_KEY,
      ADMIN_KEY,
      hashKey(CLIENT_KEY),
      hashKey(ADMIN_KEY),
      PROMPT_CANARY,
      COMPLETION_CANARY,
    ]) {
      assert.ok(!html.includes(secret), `page HTML leaks ${secret.slice(0, 12)}…`);
      assert.ok(!text.includes(secret), `page text leaks ${secret.slice(0, 12)}…`);
      assert.ok(!json.includes(secret), `console.json leaks ${secret.slice(0, 12)}…`);
    }
    assert.deepEqual(cspErrors, [], 'no CSP violations');
    assert.deepEqual(pageErrors, [], 'no script errors');

    mkdirSync(dirname(SCREENSHOT), { recursive: true });
    await page.screenshot({ path: SCREENSHOT, fullPage: true });
    assert.ok(statSync(SCREENSHOT).size > 10_000, 'the screenshot has the page in it');
    if (process.env['SWITCHYARD_UPDATE_DOCS'] !== '1') rmSync(SCREENSHOT);

    // Signing out forgets the key.
    await page.click('#signout');
    await page.waitForSelector('#login:not([hidden])', { timeout: 5000 });
    assert.equal(await page.evaluate('sessionStorage.length'), 0);
    await page.close();
  });
});
