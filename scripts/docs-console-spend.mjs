#!/usr/bin/env node
// npm run docs:console-spend — regenerates docs/console-spend.png, a screenshot of the
// console's spend page (GET /console/spend) over a week of ledger rows.
//
//   node scripts/docs-console-spend.mjs [--out docs/console-spend.png] [--days 7]
//
// What runs (all from the compiled dist/; `npm run docs:console-spend` builds first):
//   1. a scratch database on the machine's PostgreSQL (127.0.0.1:5432, user postgres;
//      PGHOST/PGPORT override), dropped at the end;
//   2. the gateway in-process with its ledger on that database, its admin API, and one
//      in-process `simulator` upstream serving every model (no network, no provider key);
//   3. a few real requests through the `openai` client from four keys with
//      x-switchyard-tags (they land in the current hour);
//   4. --days of history before that: synthetic finished-request records (a daily rhythm
//      per key, a share of them shed or served by a fallback) handed to the gateway's own
//      ledger (`gw.ledger.add`), so they are written the way real ones are;
//   5. the spend page in the system chromium (playwright-core): signed in with the admin
//      key, range "last 7 days", hourly, grouped by key; a full-page screenshot.
// The test of the page is test/postgres/console-spend.test.ts; this script only draws it.
import { randomBytes, randomUUID } from 'node:crypto';
import { dirname, join, relative, resolve } from 'node:path';
import { tmpdir } from 'node:os';
import { Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import OpenAI from 'openai';
import pg from 'pg';
import { chromium } from 'playwright-core';
import { buildApp } from '../dist/app.js';
import { hashKey } from '../dist/auth/keys.js';
import { parseConfig } from '../dist/config/load.js';
import { PROVIDERS } from '../dist/providers/registry.js';
import { buildAdmin } from '../dist/server/admin/api.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const { values: opt } = parseArgs({
  options: {
    out: { type: 'string', default: join(root, 'docs', 'console-spend.png') },
    days: { type: 'string', default: '7' },
  },
});
const OUT = resolve(opt.out);
const DAYS = Number(opt.days);
if (!Number.isInteger(DAYS) || DAYS < 1 || DAYS > 30) throw new Error('--days must be a whole number from 1 to 30');
const HOST = process.env.PGHOST ?? '127.0.0.1';
const PORT = Number(process.env.PGPORT ?? 5432);
const DB = `sy_preview_spend_${process.pid}`;
const ADMIN_URL = `postgres://postgres@${HOST}:${PORT}/postgres`;
const ADMIN_KEY = `sk-preview-admin-${randomBytes(12).toString('hex')}`;
const HOUR = 3_600_000;

/** USD per 1M tokens, as in config/switchyard.yaml. */
const PRICES = {
  'gpt-5.5-codex': { input: 1.25, output: 10 },
  'claude-sonnet-4.6': { input: 3, output: 15 },
  'deepseek-v3.2': { input: 0.28, output: 0.42 },
  'deepseek-reasoner': { input: 0.28, output: 0.42 },
};
/** Who sends what: requests per busy hour, models (weights), repo tag, busy hours (UTC). */
const KEYS = {
  'search-team': { rate: 14, models: { 'gpt-5.5-codex': 3, 'deepseek-v3.2': 2 }, repo: 'search', hours: [7, 18] },
  'web-team': { rate: 9, models: { 'claude-sonnet-4.6': 2, 'deepseek-v3.2': 3 }, repo: 'web', hours: [8, 19] },
  'ci-bot': { rate: 6, models: { 'deepseek-v3.2': 4, 'gpt-5.5-codex': 1 }, repo: 'ci', hours: [0, 24] },
  'data-science': { rate: 5, models: { 'deepseek-reasoner': 2, 'gpt-5.5-codex': 2 }, repo: 'notebooks', hours: [10, 22] },
};
const clientKeys = Object.fromEntries(Object.keys(KEYS).map((k) => [k, `sk-preview-${k}-${randomBytes(8).toString('hex')}`]));

function yaml(dbUrl) {
  const models = Object.entries(PRICES)
    .map(
      ([name, p]) =>
        `  - name: ${name}\n    price: { input: ${p.input}, output: ${p.output} }\n    targets: [{ upstream: simulator, model: ${name.includes('reasoner') ? 'deepseek-reasoner' : name} }]`,
    )
    .join('\n');
  const keys = Object.keys(KEYS)
    .map((k) => `  - { name: ${k}, key_sha256: ${hashKey(clientKeys[k])}, models: ["*"] }`)
    .join('\n');
  return `
server: { log_level: warn }
admin: { key_sha256: ${hashKey(ADMIN_KEY)} }
ledger: { postgres_url: "${dbUrl}", flush_ms: 100, spool_path: "${join(tmpdir(), `switchyard-preview-spool-${process.pid}.jsonl`)}" }
upstreams:
  - { id: simulator, provider: simulator, max_concurrency: 100, simulator: { chunk_delay_ms: 0, first_byte_delay_ms: 0, seed: 3 } }
models:
${models}
keys:
${keys}
`;
}

/** A small deterministic random source (mulberry32), so every run draws the same week. */
function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
const pick = (rand, weights) => {
  const total = Object.values(weights).reduce((a, b) => a + b, 0);
  let x = rand() * total;
  for (const [k, w] of Object.entries(weights)) if ((x -= w) < 0) return k;
  return Object.keys(weights)[0];
};

/** The history: finished-request records (record/request.ts's shape) for every hour of the last --days before `now`. */
function history(now) {
  const rand = rng(42);
  const out = [];
  const first = Math.floor(now / HOUR) * HOUR - DAYS * 24 * HOUR;
  for (let h = first; h < Math.floor(now / HOUR) * HOUR; h += HOUR) {
    const hour = new Date(h).getUTCHours();
    const weekend = [0, 6].includes(new Date(h).getUTCDay());
    for (const [key, k] of Object.entries(KEYS)) {
      const busy = hour >= k.hours[0] && hour < k.hours[1];
      const n = Math.round(k.rate * (busy ? 1 : 0.15) * (weekend && key !== 'ci-bot' ? 0.3 : 1) * (0.6 + 0.8 * rand()));
      for (let i = 0; i < n; i++) {
        let model = pick(rand, k.models);
        const requested = model;
        let shed = null;
        let fallback = null;
        const r = rand();
        if (model === 'gpt-5.5-codex' && r < 0.08) [model, shed] = ['deepseek-v3.2', 'gpt-5.5-codex->deepseek-v3.2'];
        else if (model === 'claude-sonnet-4.6' && r < 0.04) [model, fallback] = ['deepseek-v3.2', 'claude-sonnet-4.6->deepseek-v3.2'];
        const input = Math.round(800 + rand() * 6000);
        const output = Math.round(100 + rand() * (model.includes('reasoner') || model === 'gpt-5.5-codex' ? 3000 : 900));
        const p = PRICES[model];
        out.push({
          requestId: randomUUID(),
          api: 'chat',
          key,
          model,
          requestedModel: requested,
          upstream: 'simulator',
          upstreamModel: model,
          stream: rand() < 0.7,
          status: 200,
          outcome: 'ok',
          errorClass: null,
          startedAt: h + Math.floor(rand() * HOUR),
          durationMs: 500 + Math.floor(rand() * 8000),
          ttftMs: 150 + Math.floor(rand() * 900),
          usage: { input, cached: 0, output, reasoning: 0 },
          usageEstimated: false,
          costUsd: (input * p.input + output * p.output) / 1e6,
          attempts: fallback ? 2 : 1,
          fallback,
          shed,
          tags: { repo: k.repo },
        });
      }
    }
  }
  return out;
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const admin = new pg.Client({ connectionString: ADMIN_URL });
await admin.connect();
await admin.query(`CREATE DATABASE ${DB}`);
let gw;
let adm;
let browser;
try {
  const quiet = new Writable({ write: (_c, _e, cb) => cb() });
  gw = await buildApp(parseConfig(yaml(`postgres://postgres@${HOST}:${PORT}/${DB}`), { kinds: PROVIDERS, env: {}, path: 'preview.yaml' }), {
    logStream: quiet,
    env: {},
  });
  const url = await gw.app.listen({ host: '127.0.0.1', port: 0 });
  adm = await buildAdmin(gw);
  const adminUrl = await adm.listen({ host: '127.0.0.1', port: 0 });

  const rows = history(Date.now());
  for (const rec of rows) gw.ledger.add(rec);
  let live = 0;
  for (const [key, k] of Object.entries(KEYS)) {
    const client = new OpenAI({ apiKey: clientKeys[key], baseURL: `${url}/v1`, maxRetries: 0 });
    for (const model of Object.keys(k.models)) {
      await client.chat.completions.create(
        { model, messages: [{ role: 'user', content: 'Summarise the build log.' }] },
        { headers: { 'x-switchyard-tags': `repo=${k.repo}` } },
      );
      live++;
    }
  }
  const want = rows.length + live;
  const end = Date.now() + 60_000;
  for (;;) {
    const res = await fetch(`${adminUrl}/admin/spend?granularity=none&from=${new Date(Date.now() - (DAYS + 1) * 24 * HOUR).toISOString()}`, {
      headers: { authorization: `Bearer ${ADMIN_KEY}` },
    });
    const s = await res.json();
    if (res.ok && s.totals.requests >= want && s.backlog_rows === 0) break;
    if (Date.now() > end) throw new Error(`the ledger never held the ${want} rows: ${JSON.stringify(s).slice(0, 300)}`);
    await sleep(200);
  }

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
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  await page.goto(`${adminUrl}/console/spend`);
  await page.fill('#key', ADMIN_KEY);
  await page.click('#login button[type=submit]');
  await page.waitForSelector('#spend-chart[data-group="key"]');
  await page.selectOption('#range', DAYS <= 7 ? '7d' : '30d');
  // Polled from here: page.waitForFunction would evaluate in the page, which its CSP refuses.
  const drawn = () => page.evaluate('document.querySelectorAll("#chart-svg g.series rect").length');
  for (let i = 0; (await drawn()) <= 100; i++) {
    if (i > 100) throw new Error('the week was not drawn');
    await sleep(100);
  }
  await page.screenshot({ path: OUT, fullPage: true });
  console.log(`wrote ${relative(process.cwd(), OUT) || OUT} (${want} ledger rows over ${DAYS} days)`);
} finally {
  await browser?.close();
  await adm?.close();
  await gw?.app.close();
  await admin.query(`DROP DATABASE IF EXISTS ${DB} WITH (FORCE)`);
  await admin.end();
}
