#!/usr/bin/env node
// npm run docs:dashboard — regenerates docs/dashboard.png, a preview of the Grafana dashboard
// (docker/grafana/dashboards/switchyard.json) drawn from real metrics, without Grafana.
//
//   node scripts/docs-dashboard.mjs [--seconds 60] [--out docs/dashboard.png] [--keep]
//
// --seconds  length of the simulated traffic run (default 60)
// --out      where the PNG goes (default docs/dashboard.png; the HTML is written next to the
//            work files and kept with --keep)
// --keep     keep the temporary work directory (configs, logs, Prometheus TSDB, HTML)
//
// What runs (all from the compiled dist/; `npm run docs:dashboard` builds first):
//   1. `switchyard simulate --throttle` with 3 simulated provider accounts (docs/simulator.md):
//      acct-1 and acct-2 serve the reasoning model, acct-3 the cheap chat model. The accounts
//      throttle deep (reasoning_effort=high) bursts: 429 + Retry-After, or stalls;
//   2. a throwaway redis-server on a free port (no persistence);
//   3. two gateway replicas (`switchyard serve`) sharing that Redis, like docker-compose.yml;
//      the gateway is told a window limit slightly above the accounts' real one, so bursts
//      produce upstream 429s, retries and fallbacks as well as sheds;
//   4. a real Prometheus (/usr/bin/prometheus) scraping both replicas every second;
//   5. --seconds of mixed traffic through the official `openai` client from three client keys:
//      steady streamed chat, medium-effort reasoning streams, reasoning_effort=high bursts, a
//      rate-limited CI key, and a few errors (unknown model, model not allowed, bad keys from
//      another loopback address, enough to trip the bad-key throttle);
//   6. every panel's PromQL from the dashboard JSON, run through Prometheus's HTTP API
//      (query_range over the run, 1 s step) — `$__rate_interval` becomes RATE_INTERVAL and
//      `$__range` the run's length; the dashboard has no template variables;
//   7. a self-contained HTML page (inline SVG, no external assets) laid out on the dashboard's
//      own 24-column gridPos, screenshotted with playwright-core + the system chromium.
// Every child process is stopped at the end, also on error or Ctrl-C.
import { spawn, execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, mkdirSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { setInterval, clearInterval } from 'node:timers';
import { URLSearchParams, fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import OpenAI from 'openai';
import { chromium } from 'playwright-core';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const { values: opt } = parseArgs({
  options: {
    seconds: { type: 'string', default: '60' },
    out: { type: 'string', default: join(root, 'docs', 'dashboard.png') },
    keep: { type: 'boolean', default: false },
  },
});
const RUN_S = Number(opt.seconds);
if (!Number.isFinite(RUN_S) || RUN_S < 10) throw new Error('--seconds must be a number >= 10');
const OUT = resolve(opt.out);
const MAIN = join(root, 'dist', 'main.js');
const DASHBOARD = join(root, 'docker', 'grafana', 'dashboards', 'switchyard.json');
const PROMETHEUS = '/usr/bin/prometheus';
const CHROMIUM = '/usr/bin/chromium';
/** What `$__rate_interval` becomes in every query. */
const RATE_INTERVAL = '1m';
const work = mkdtempSync(join(tmpdir(), 'switchyard-dashboard-'));

// ---------------------------------------------------------------------------------------
// Child processes: started through start(), all stopped by stopAll() whatever happens.
const children = [];
function start(name, cmd, args, env = {}) {
  const log = openSync(join(work, `${name}.log`), 'w');
  const child = spawn(cmd, args, { stdio: ['ignore', log, log], env: { ...process.env, ...env } });
  child.label = name;
  child.exited = new Promise((r) => child.once('exit', r));
  child.once('error', (err) => console.error(`${name}: ${err.message}`));
  children.push(child);
  return child;
}
const running = (c) => c.exitCode === null && c.signalCode === null;
async function stopAll() {
  await Promise.all(
    children.map(async (c) => {
      if (!running(c)) return;
      c.kill('SIGTERM');
      await Promise.race([c.exited, sleep(8_000)]);
      if (running(c)) c.kill('SIGKILL');
    }),
  );
}
// Last resort if the process exits without reaching the finally block.
process.on('exit', () => children.forEach((c) => running(c) && c.kill('SIGKILL')));
process.on('SIGINT', () => process.exit(130));
process.on('SIGTERM', () => process.exit(143));

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const freePort = () =>
  new Promise((res, rej) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => res(port));
    });
    s.on('error', rej);
  });
async function waitHttp(url, ms = 20_000) {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    try {
      const r = await fetch(url);
      await r.arrayBuffer();
      if (r.ok) return;
    } catch {
      // not up yet
    }
    await sleep(150);
  }
  throw new Error(`${url} did not come up (logs in ${work})`);
}

// ---------------------------------------------------------------------------------------
// Configs.
const KEYS = {
  'web-app': 'sk-preview-web-app',
  'batch-jobs': 'sk-preview-batch-jobs',
  'ci-bot': 'sk-preview-ci-bot',
};
const sha = (s) => createHash('sha256').update(s).digest('hex');
// The accounts' real limit is 3 deep calls per 4 s window; the gateway believes 5.
const SIM_THRESHOLD = 3;
const GATEWAY_THRESHOLD = 5;

function simulatorYaml() {
  return `# generated by scripts/docs-dashboard.mjs: settings for \`switchyard simulate\`
upstreams:
  - id: simulated-account
    provider: simulator
    simulator:
      chunk_delay_ms: 15
      first_byte_delay_ms: 120
      seed: 7
      throttle:
        enabled: true
        window_ms: 4000
        deep_threshold: ${SIM_THRESHOLD}
        deep_efforts: [high, xhigh]
        reject_share: 0.7
        retry_after_s: 1
        stall_first_token_ms: 2500
        stall_pause_ms: 200
        stall_pause_every: 20
models:
  - name: unused
    price: { input: 0, output: 0 }
    targets: [{ upstream: simulated-account, model: deepseek-reasoner }]
keys:
  - { name: unused, key_sha256: ${sha('unused')}, models: ["*"] }
`;
}

function gatewayYaml(simUrl, redisUrl) {
  const acct = (n) => `  - id: acct-${n}
    provider: openai-compatible
    base_url: ${simUrl}/acct-${n}/v1
    api_key: sk-simulated-acct-${n}
    max_concurrency: ${n === 3 ? 6 : 16}
    window: { seconds: 4, threshold: ${GATEWAY_THRESHOLD} }
`;
  return `# generated by scripts/docs-dashboard.mjs: two replicas share this config and one Redis
server: { log_level: warn, drain_ms: 2000 }
store: { redis_url: ${redisUrl}, replicas: 2 }
routing:
  strategy: balanced
  max_attempts: 3
  retry_after_cap_ms: 2000
  queue: { max: 32, timeout_ms: 3000 }
upstreams:
${[1, 2, 3].map(acct).join('')}models:
  - name: gpt-5.5-codex
    reasoning: true
    price: { input: 1.25, cached_input: 0.125, output: 10.0 }
    deep_effort: high
    default_effort: medium
    fallbacks: [deepseek-v3.2]
    shed: { policy: downgrade, fallback: deepseek-v3.2 }
    targets:
      - { upstream: acct-1, model: deepseek-reasoner }
      - { upstream: acct-2, model: deepseek-reasoner }
  - name: deepseek-v3.2
    reasoning: false
    price: { input: 0.28, cached_input: 0.028, output: 0.42 }
    targets:
      - { upstream: acct-3, model: deepseek-chat }
keys:
  - name: web-app
    key_sha256: ${sha(KEYS['web-app'])}
    models: ["*"]
  - name: batch-jobs
    key_sha256: ${sha(KEYS['batch-jobs'])}
    models: ["*"]
    limits: { budget_usd: { amount: 0.12, period: day } }
  - name: ci-bot
    key_sha256: ${sha(KEYS['ci-bot'])}
    models: ["deepseek-*"]
    limits: { rpm: 30 }
`;
}

const prometheusYaml = (targets) => `# generated by scripts/docs-dashboard.mjs
global: { scrape_interval: 1s, evaluation_interval: 1s }
scrape_configs:
  - job_name: switchyard
    metrics_path: /metrics
    static_configs:
      - targets: [${targets.map((t) => `"${t}"`).join(', ')}]
`;

// ---------------------------------------------------------------------------------------
// Traffic. Each helper swallows its own errors (they are part of the picture) and counts them.
const tally = {};
const count = (what) => (tally[what] = (tally[what] ?? 0) + 1);
const pick = (arr) => arr[Math.floor(Math.random() * arr.length)];
const PROMPTS = ['Summarise the release notes.', 'Explain the retry policy.', 'Draft a status update.', 'Refactor this function.'];

function clientFor(baseURL, key, maxRetries = 1) {
  return new OpenAI({ baseURL, apiKey: KEYS[key] ?? key, maxRetries, timeout: 60_000 });
}

async function chatStream(client, body, tag) {
  try {
    const stream = await client.chat.completions.create({
      ...body,
      stream: true,
      stream_options: { include_usage: true },
      messages: [{ role: 'user', content: pick(PROMPTS) }],
    });
    for await (const _chunk of stream) {
      // drain: the gateway counts tokens and spend when the stream ends
    }
    count(`${tag} ok`);
  } catch (err) {
    count(`${tag} ${err?.status ?? err?.constructor?.name ?? 'error'}`);
  }
}

async function chatOnce(client, body, tag) {
  try {
    await client.chat.completions.create({ ...body, messages: [{ role: 'user', content: pick(PROMPTS) }] });
    count(`${tag} ok`);
  } catch (err) {
    count(`${tag} ${err?.status ?? err?.constructor?.name ?? 'error'}`);
  }
}

/**
 * POST from 127.0.0.2, so the gateway's bad-key throttle (per client address) blocks this
 * "attacker" and not the rest of the load, which comes from 127.0.0.1. (fetch/undici ignore
 * a localAddress; node:http honours it.) Resolves to the HTTP status.
 */
function postFromOtherAddress(url, key, body) {
  return new Promise((res, rej) => {
    const u = new URL(url);
    const req = httpRequest(
      {
        host: u.hostname,
        port: u.port,
        path: u.pathname,
        method: 'POST',
        localAddress: '127.0.0.2',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      },
      (r) => {
        r.resume();
        r.on('end', () => res(r.statusCode));
      },
    );
    req.on('error', rej);
    req.end(JSON.stringify(body));
  });
}

async function drive(gateways) {
  const t0 = Date.now();
  const until = t0 + RUN_S * 1000;
  const elapsed = () => (Date.now() - t0) / 1000;
  const clients = (key, retries) => gateways.map((g) => clientFor(`${g}/v1`, key, retries));
  const web = clients('web-app');
  const batch = clients('batch-jobs');
  const ci = clients('ci-bot', 0);
  const tasks = [];
  const loop = (fn, pauseMs) =>
    tasks.push(
      (async () => {
        while (Date.now() < until) {
          await fn();
          await sleep(pauseMs());
        }
      })(),
    );

  // Steady streamed chat from the web app (4 loops) and medium-effort reasoning (not deep).
  for (let i = 0; i < 4; i++)
    loop(
      () => chatStream(pick(web), { model: 'deepseek-v3.2' }, 'chat'),
      () => 150 + Math.random() * 500,
    );
  loop(
    () => chatStream(pick(web), { model: 'gpt-5.5-codex', reasoning_effort: 'medium' }, 'codex-medium'),
    () => 500 + Math.random() * 1000,
  );
  // The CI bot: non-streaming, ~0.8 requests/s against an rpm limit of 30, no client retries.
  loop(
    () => chatOnce(pick(ci), { model: 'deepseek-v3.2', max_tokens: 64 }, 'ci-bot'),
    () => 1100,
  );

  // reasoning_effort=high bursts: 12 concurrent streams, every ~12 s, split over both replicas.
  tasks.push(
    (async () => {
      for (let at = 6; at < RUN_S - 6; at += 12) {
        await sleep(Math.max(0, at * 1000 - (Date.now() - t0)));
        const burst = Array.from({ length: 12 }, (_, i) =>
          chatStream(batch[i % batch.length], { model: 'gpt-5.5-codex', reasoning_effort: 'high' }, 'burst-high'),
        );
        console.log(`  t=${elapsed().toFixed(0).padStart(2)} s  burst of ${burst.length} reasoning_effort=high streams`);
        await Promise.race([Promise.all(burst), sleep(2_000)]);
        tasks.push(...burst);
      }
    })(),
  );

  // A few errors: unknown model, model the key may not use, and a run of bad keys.
  tasks.push(
    (async () => {
      for (let at = 4; at < RUN_S; at += 8) {
        await sleep(Math.max(0, at * 1000 - (Date.now() - t0)));
        await chatOnce(pick(web), { model: 'gpt-9-imaginary' }, 'unknown-model');
        await chatOnce(pick(ci), { model: 'gpt-5.5-codex' }, 'not-allowed');
      }
    })(),
    (async () => {
      await sleep((RUN_S * 1000) / 2);
      // 14 bad keys to one replica within a minute: its per-address throttle (10) blocks the rest.
      for (let i = 0; i < 14; i++) {
        try {
          const status = await postFromOtherAddress(`${gateways[0]}/v1/chat/completions`, `sk-wrong-${i}`, {
            model: 'deepseek-v3.2',
            messages: [{ role: 'user', content: 'hi' }],
          });
          count(`bad-key ${status}`);
        } catch (err) {
          count(`bad-key ${err.message}`);
        }
        await sleep(400);
      }
    })(),
  );

  const progress = setInterval(
    () => console.log(`  t=${elapsed().toFixed(0).padStart(2)} s  ${Object.values(tally).reduce((a, b) => a + b, 0)} requests done`),
    10_000,
  );
  try {
    await Promise.all(tasks);
  } finally {
    clearInterval(progress);
  }
  return { t0, t1: Date.now() };
}

// ---------------------------------------------------------------------------------------
// Prometheus queries.
async function promQuery(promUrl, path, params) {
  const r = await fetch(`${promUrl}/api/v1/${path}?${new URLSearchParams(params)}`);
  const body = await r.json();
  if (body.status !== 'success') throw new Error(`Prometheus ${path} ${params.query}: ${body.error ?? r.status}`);
  return body.data;
}

/** Dashboard expression -> plain PromQL for this run. */
function toPromQL(expr, rangeS) {
  return expr
    .replaceAll('$__rate_interval', RATE_INTERVAL)
    .replaceAll('${__rate_interval}', RATE_INTERVAL)
    .replaceAll('$__range', `${rangeS}s`)
    .replaceAll('${__range}', `${rangeS}s`);
}

const legendOf = (fmt, metric) => (fmt ? fmt.replace(/\{\{\s*(\w+)\s*\}\}/g, (_, l) => metric[l] ?? '') : JSON.stringify(metric));

async function fetchPanels(promUrl, { start, end }) {
  const dash = JSON.parse(readFileSync(DASHBOARD, 'utf8'));
  const rangeS = Math.round(end - start);
  const panels = [];
  for (const p of dash.panels) {
    const panel = { ...p, series: [] };
    for (const t of p.targets ?? []) {
      const query = toPromQL(t.expr, rangeS);
      const data = await promQuery(promUrl, 'query_range', { query, start, end, step: 1 });
      for (const s of data.result) {
        panel.series.push({
          name: legendOf(t.legendFormat, s.metric),
          points: s.values.map(([ts, v]) => [Number(ts), Number(v)]).filter(([, v]) => Number.isFinite(v)),
        });
      }
    }
    panel.series.sort((a, b) => a.name.localeCompare(b.name));
    panels.push(panel);
  }
  return { dash, panels };
}

// ---------------------------------------------------------------------------------------
// Rendering: one HTML page, inline SVG, dark theme close to Grafana's.
const COLORS = [
  '#73bf69',
  '#f2cc0c',
  '#5794f2',
  '#ff780a',
  '#f2495c',
  '#b877d9',
  '#8ab8ff',
  '#fade2a',
  '#37872d',
  '#ff9830',
  '#c4162a',
  '#1f60c4',
  '#8f3bb8',
  '#96d98d',
  '#ffb357',
];
const esc = (s) => String(s).replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]);

function fmtNum(v, digits = 3) {
  if (v === 0) return '0';
  const a = Math.abs(v);
  if (a >= 1e6) return `${+(v / 1e6).toPrecision(digits)}M`;
  if (a >= 1e3) return `${+(v / 1e3).toPrecision(digits)}k`;
  if (a >= 0.001) return `${+v.toPrecision(digits)}`;
  return v.toExponential(1);
}
function fmtUnit(v, unit) {
  if (v === undefined || v === null || !Number.isFinite(v)) return '–';
  switch (unit) {
    case 'reqps':
      return `${fmtNum(v)} req/s`;
    case 'percentunit':
      return `${+(v * 100).toPrecision(3)}%`;
    case 's':
      return Math.abs(v) < 1 ? `${+(v * 1000).toPrecision(3)} ms` : `${+v.toPrecision(3)} s`;
    case 'bytes':
      return `${+(v / 1024 / 1024).toPrecision(3)} MiB`;
    case 'currencyUSD':
      return Math.abs(v) < 0.01 && v !== 0 ? `$${v.toPrecision(2)}` : `$${+v.toFixed(2)}`;
    default:
      return fmtNum(v);
  }
}
const niceStep = (raw) => {
  const p = 10 ** Math.floor(Math.log10(raw));
  return [1, 2, 2.5, 5, 10].map((m) => m * p).find((s) => s >= raw) ?? 10 * p;
};
const clock = (ts) => new Date(ts * 1000).toISOString().slice(11, 19);
const stats = (pts) => {
  const v = pts.map(([, y]) => y);
  return { mean: v.reduce((a, b) => a + b, 0) / (v.length || 1), max: v.length ? Math.max(...v) : NaN, last: v.at(-1) };
};

/** A time-series chart (stacked when the panel stacks) with a Grafana-style table legend. */
function timeseriesSvg(panel, w, h, range) {
  const unit = panel.fieldConfig?.defaults?.unit;
  const stacked = panel.fieldConfig?.defaults?.custom?.stacking?.mode === 'normal';
  const pad = { l: 68, r: 10, t: 6, b: 18 };
  const pw = w - pad.l - pad.r;
  const ph = h - pad.t - pad.b;
  // Stack on a common 1 s grid; a series missing at a timestamp adds nothing there.
  const lines = [];
  const base = new Map();
  panel.series.forEach((s, i) => {
    const pts = s.points.map(([t, v]) => {
      const b = stacked ? (base.get(t) ?? 0) : 0;
      if (stacked) base.set(t, b + v);
      return [t, b + v, b];
    });
    lines.push({ color: COLORS[i % COLORS.length], pts });
  });
  const maxY = Math.max(0, ...lines.flatMap((l) => l.pts.map((p) => p[1])));
  const step = maxY > 0 ? niceStep(maxY / 4) : 1;
  const top = maxY > 0 ? Math.ceil(maxY / step) * step : 1;
  const x = (t) => pad.l + ((t - range.start) / (range.end - range.start)) * pw;
  const y = (v) => pad.t + ph - (v / top) * ph;
  let svg = `<svg width="${w}" height="${h}" xmlns="http://www.w3.org/2000/svg">`;
  for (let v = 0; v <= top + 1e-12; v += step) {
    svg += `<line x1="${pad.l}" x2="${w - pad.r}" y1="${y(v)}" y2="${y(v)}" class="grid"/><text x="${pad.l - 6}" y="${y(v) + 4}" class="ax" text-anchor="end">${esc(fmtUnit(v, unit))}</text>`;
  }
  const tickS = (range.end - range.start) / 5;
  for (let k = 0; k <= 5; k++) {
    const t = range.start + k * tickS;
    const anchor = k === 0 ? 'start' : k === 5 ? 'end' : 'middle';
    svg += `<line x1="${x(t)}" x2="${x(t)}" y1="${pad.t}" y2="${pad.t + ph}" class="grid"/><text x="${x(t)}" y="${h - 4}" class="ax" text-anchor="${anchor}">${clock(t)}</text>`;
  }
  // Split at gaps (> 2.5 s) so an absent series does not draw a line across the hole.
  for (const l of lines) {
    const segs = [];
    let cur = [];
    for (const p of l.pts) {
      if (cur.length && p[0] - cur.at(-1)[0] > 2.5) {
        segs.push(cur);
        cur = [];
      }
      cur.push(p);
    }
    if (cur.length) segs.push(cur);
    for (const seg of segs) {
      const upper = seg.map(([t, v]) => `${x(t).toFixed(1)},${y(v).toFixed(1)}`);
      const lower = seg.map(([t, , b]) => `${x(t).toFixed(1)},${y(b).toFixed(1)}`).reverse();
      svg += `<polygon points="${[...upper, ...lower].join(' ')}" fill="${l.color}" fill-opacity="0.12"/>`;
      svg +=
        seg.length === 1
          ? `<circle cx="${upper[0].split(',')[0]}" cy="${upper[0].split(',')[1]}" r="1.5" fill="${l.color}"/>`
          : `<polyline points="${upper.join(' ')}" fill="none" stroke="${l.color}" stroke-width="1.3"/>`;
    }
  }
  if (!panel.series.length) svg += `<text x="${pad.l + pw / 2}" y="${pad.t + ph / 2}" class="nodata" text-anchor="middle">No data</text>`;
  return `${svg}</svg>`;
}

function legendTable(panel, maxRows) {
  if (!panel.series.length) return '';
  const unit = panel.fieldConfig?.defaults?.unit;
  const rows = panel.series.slice(0, maxRows).map((s, i) => {
    const st = stats(s.points);
    return `<tr><td class="nm"><i style="background:${COLORS[i % COLORS.length]}"></i>${esc(s.name)}</td><td>${fmtUnit(st.mean, unit)}</td><td>${fmtUnit(st.max, unit)}</td><td>${fmtUnit(st.last, unit)}</td></tr>`;
  });
  const more = panel.series.length > maxRows ? `<tr><td class="nm more" colspan="4">+ ${panel.series.length - maxRows} more series</td></tr>` : '';
  return `<table class="lg"><tr><th></th><th>Mean</th><th>Max</th><th>Last</th></tr>${rows.join('')}${more}</table>`;
}

function statHtml(panel, w, h) {
  const unit = panel.fieldConfig?.defaults?.unit;
  const textMode = panel.options?.textMode;
  const thresholds = panel.fieldConfig?.defaults?.thresholds?.steps;
  const colorFor = (v) => {
    if (!thresholds) return '#73bf69';
    let c = thresholds[0].color;
    for (const s of thresholds) if (s.value !== null && v >= s.value) c = s.color;
    return { green: '#73bf69', red: '#f2495c' }[c] ?? c;
  };
  if (!panel.series.length) return `<div class="stat"><div class="big nodata">No data</div></div>`;
  const cells = panel.series.map((s) => {
    const last = s.points.at(-1)?.[1];
    const color = colorFor(last);
    const spark =
      panel.options?.graphMode === 'area' && s.points.length > 1
        ? (() => {
            const max = Math.max(...s.points.map((p) => p[1])) || 1;
            const t0 = s.points[0][0];
            const span = s.points.at(-1)[0] - t0 || 1;
            const pts = s.points.map(([t, v]) => `${(((t - t0) / span) * w).toFixed(1)},${(h * 0.5 - (v / max) * h * 0.45).toFixed(1)}`);
            return `<svg class="spark" width="${w}" height="${h * 0.5}"><polygon points="0,${h * 0.5} ${pts.join(' ')} ${w},${h * 0.5}" fill="${color}" fill-opacity="0.18"/><polyline points="${pts.join(' ')}" fill="none" stroke="${color}" stroke-width="1.2"/></svg>`;
          })()
        : '';
    const text = textMode === 'name' ? esc(s.name) : esc(fmtUnit(last, unit));
    return `<div class="cell">${spark}<div class="big${textMode === 'name' ? ' name' : ''}" style="color:${color}">${text}</div>${textMode === 'name' ? '' : `<div class="sub">${esc(s.name)}</div>`}</div>`;
  });
  return `<div class="stat">${cells.join('')}</div>`;
}

function bargaugeHtml(panel) {
  const unit = panel.fieldConfig?.defaults?.unit;
  const vals = panel.series.map((s) => ({ name: s.name, v: s.points.at(-1)?.[1] ?? 0 }));
  const max = Math.max(...vals.map((d) => d.v), 0) || 1;
  if (!vals.length) return `<div class="stat"><div class="big nodata">No data</div></div>`;
  return `<div class="bars">${vals
    .map(
      (d) =>
        `<div class="bar"><span class="bn">${esc(d.name)}</span><span class="bt"><span class="bf" style="width:${((d.v / max) * 100).toFixed(1)}%"></span></span><span class="bv">${esc(fmtUnit(d.v, unit))}</span></div>`,
    )
    .join('')}</div>`;
}

function renderHtml({ dash, panels }, range, info) {
  const W = 1600;
  const M = 12;
  const colW = (W - 2 * M) / 24;
  const rowH = 36;
  const items = [];
  let bottom = 0;
  for (const p of panels) {
    const g = p.gridPos;
    const left = M + g.x * colW;
    const top = g.y * rowH;
    const w = g.w * colW - 8;
    const h = g.h * rowH - 8;
    bottom = Math.max(bottom, top + g.h * rowH);
    if (p.type === 'row') {
      items.push(`<div class="row" style="left:${left}px;top:${top + 8}px;width:${w}px">${esc(p.title)}</div>`);
      continue;
    }
    let body;
    if (p.type === 'timeseries') {
      const legendRows = Math.min(p.series.length, 6) + (p.series.length > 6 ? 1 : 0);
      const chartH = h - 30 - (legendRows ? 18 + legendRows * 16 : 0);
      body = timeseriesSvg(p, w - 12, Math.max(chartH, 90), range) + legendTable(p, 6);
    } else if (p.type === 'stat') body = statHtml(p, w - 12, h - 30);
    else if (p.type === 'bargauge') body = bargaugeHtml(p);
    else body = `<div class="nodata">panel type ${esc(p.type)} not previewed</div>`;
    items.push(`<div class="panel" style="left:${left}px;top:${top}px;width:${w}px;height:${h}px"><div class="title">${esc(p.title)}</div>${body}</div>`);
  }
  const css = `
  *{box-sizing:border-box} body{margin:0;background:#111217;color:#ccccdc;font:12px/1.3 Inter,"Helvetica Neue",Arial,sans-serif;width:${W}px}
  header{padding:14px ${M}px 10px} h1{margin:0 0 4px;font-size:19px;color:#fff;font-weight:600} header p{margin:2px 0;color:#9fa3b1;font-size:12.5px}
  .grid-area{position:relative;height:${bottom + 4}px}
  .panel{position:absolute;background:#181b1f;border:1px solid #2a2d33;border-radius:3px;padding:4px 6px;overflow:hidden}
  .title{font-weight:600;color:#e0e0ec;font-size:12.5px;height:22px;line-height:22px;white-space:nowrap;overflow:hidden;text-overflow:ellipsis}
  .row{position:absolute;font-size:15px;font-weight:600;color:#fff;border-bottom:1px solid #2a2d33;padding-bottom:3px}
  svg text.ax{fill:#8e8e9e;font-size:10px} svg .grid{stroke:#2a2d33;stroke-width:1} .nodata{fill:#6e6e7e;color:#6e6e7e;font-size:14px}
  table.lg{width:100%;border-collapse:collapse;font-size:10.5px;margin-top:2px} table.lg th{color:#5794f2;font-weight:500;text-align:right;padding:0 4px;height:16px}
  table.lg td{text-align:right;padding:0 4px;white-space:nowrap;height:16px} table.lg td.nm{text-align:left;max-width:${colW * 12 - 260}px;overflow:hidden;text-overflow:ellipsis}
  table.lg td.more{color:#8e8e9e} table.lg i{display:inline-block;width:12px;height:3px;margin:0 6px 3px 0;vertical-align:middle}
  .stat{display:flex;flex-wrap:wrap;gap:6px;height:calc(100% - 24px);align-items:stretch}
  .cell{position:relative;flex:1 1 45%;display:flex;flex-direction:column;justify-content:center;align-items:center;min-height:40px}
  .cell .spark{position:absolute;bottom:0;left:0;width:100%} .big{font-size:28px;font-weight:500;position:relative} .big.name{font-size:15px}
  .sub{color:#9fa3b1;font-size:11px;position:relative}
  .bars{display:flex;flex-direction:column;gap:8px;padding-top:6px} .bar{display:flex;align-items:center;gap:8px}
  .bn{width:110px;text-align:right;color:#ccccdc} .bt{flex:1;height:22px;background:#22252b;border-radius:2px;overflow:hidden}
  .bf{display:block;height:100%;background:linear-gradient(90deg,#37872d,#73bf69,#fade2a)} .bv{width:70px;color:#73bf69;font-size:15px}
  footer{padding:8px ${M}px 14px;color:#8e8e9e;font-size:11.5px}`;
  return `<!doctype html><html><head><meta charset="utf-8"><title>${esc(dash.title)} preview</title><style>${css}</style></head><body>
<header><h1>Switchyard dashboard panels (docker/grafana/dashboards/switchyard.json) rendered from a real Prometheus over a ${RUN_S} s simulated run — a preview, not Grafana</h1>
<p>${esc(info)}</p></header>
<div class="grid-area">${items.join('\n')}</div>
<footer>Every panel is the dashboard's own PromQL run through Prometheus ${esc(range.promVersion)} query_range (step 1 s, ${clock(range.start)}–${clock(range.end)} UTC) with $__rate_interval = ${RATE_INTERVAL} and $__range = ${Math.round(range.end - range.start)} s.
Stat and bar panels show the last value, as the dashboard's lastNotNull reduction does. Drawn by scripts/docs-dashboard.mjs (npm run docs:dashboard).</footer>
</body></html>`;
}

// ---------------------------------------------------------------------------------------
// Main.
async function main() {
  for (const bin of [PROMETHEUS, CHROMIUM]) execFileSync(bin, ['--version'], { stdio: 'ignore' });
  execFileSync('redis-server', ['--version'], { stdio: 'ignore' });
  const promVersion = execFileSync(PROMETHEUS, ['--version'], { encoding: 'utf8' })
    .split('\n')[0]
    .replace(/^prometheus, version (\S+).*$/, '$1');
  console.log(`work directory: ${work}`);

  // 1. Simulated provider accounts.
  const simPort = await freePort();
  const simUrl = `http://127.0.0.1:${simPort}`;
  writeFileSync(join(work, 'simulator.yaml'), simulatorYaml());
  start('simulator', process.execPath, [
    MAIN,
    'simulate',
    '--config',
    join(work, 'simulator.yaml'),
    '--throttle',
    '--accounts',
    '3',
    '--port',
    String(simPort),
  ]);
  await waitHttp(`${simUrl}/health`);

  // 2. Redis, 3. two gateway replicas.
  const redisPort = await freePort();
  start('redis', 'redis-server', ['--port', String(redisPort), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no']);
  const gwConfig = join(work, 'switchyard.yaml');
  writeFileSync(gwConfig, gatewayYaml(simUrl, `redis://127.0.0.1:${redisPort}`));
  execFileSync(process.execPath, [MAIN, 'check-config', '--config', gwConfig], { stdio: ['ignore', 'ignore', 'inherit'] });
  const gateways = [];
  for (const n of [1, 2]) {
    const port = await freePort();
    start(`switchyard-${n}`, process.execPath, [MAIN, 'serve', '--config', gwConfig], { PORT: String(port), HOST: '127.0.0.1' });
    gateways.push(`http://127.0.0.1:${port}`);
  }
  // Redis may take a moment; wait for both replicas to report the shared store.
  for (const g of gateways) {
    await waitHttp(`${g}/readyz`);
    for (let i = 0; i < 50; i++) {
      const h = await (await fetch(`${g}/readyz`)).json().catch(() => ({}));
      if (h?.store?.mode === 'redis') break;
      await sleep(200);
    }
  }

  // 4. Prometheus.
  const promPort = await freePort();
  const promUrl = `http://127.0.0.1:${promPort}`;
  writeFileSync(join(work, 'prometheus.yml'), prometheusYaml(gateways.map((g) => g.replace('http://', ''))));
  mkdirSync(join(work, 'tsdb'));
  start('prometheus', PROMETHEUS, [
    `--config.file=${join(work, 'prometheus.yml')}`,
    `--storage.tsdb.path=${join(work, 'tsdb')}`,
    `--web.listen-address=127.0.0.1:${promPort}`,
  ]);
  await waitHttp(`${promUrl}/-/ready`, 30_000);
  for (let i = 0; ; i++) {
    const up = await promQuery(promUrl, 'query', { query: 'sum(up{job="switchyard"})' });
    if (Number(up.result[0]?.value[1]) === 2) break;
    if (i > 60) throw new Error('Prometheus does not see both replicas up');
    await sleep(500);
  }
  await sleep(3_000); // a few idle scrapes before the traffic starts

  // 5. Traffic.
  console.log(`driving ${RUN_S} s of traffic through ${gateways.join(' and ')}`);
  const { t0, t1 } = await drive(gateways);
  console.log(
    'client outcomes:',
    Object.entries(tally)
      .sort()
      .map(([k, v]) => `${k}: ${v}`)
      .join(', '),
  );
  await sleep(4_000); // let the last scrapes land
  const sim = await (await fetch(`${simUrl}/stats`)).json();
  const simTotals = Object.values(sim.accounts).reduce((a, s) => ({ r429: a.r429 + s.rejected_429, stalled: a.stalled + s.stalled }), { r429: 0, stalled: 0 });

  // 6. Queries, 7. render.
  const range = { start: Math.floor(t0 / 1000) - 3, end: Math.ceil(t1 / 1000) + 3, promVersion };
  const data = await fetchPanels(promUrl, range);
  const drawn = data.panels.filter((p) => p.type !== 'row');
  const empty = drawn.filter((p) => !p.series.length).map((p) => p.title);
  const total = Object.values(tally).reduce((a, b) => a + b, 0);
  const info =
    `Two gateway replicas sharing a Redis, 3 simulated provider accounts (switchyard simulate --throttle: 429 or stall past ${SIM_THRESHOLD} deep calls per 4 s; ` +
    `the gateway is told ${GATEWAY_THRESHOLD}), Prometheus scraping every 1 s. Load: ${total} client requests with the openai SDK from keys web-app, batch-jobs, ci-bot ` +
    `(streamed chat, medium-effort reasoning, reasoning_effort=high bursts of 12, an rpm-limited CI key, unknown models, bad keys). ` +
    `Accounts answered ${simTotals.r429} × 429 and stalled ${simTotals.stalled} calls.`;
  const html = renderHtml(data, range, info);
  const htmlPath = join(work, 'dashboard.html');
  writeFileSync(htmlPath, html);

  const browser = await chromium.launch({
    executablePath: CHROMIUM,
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
  try {
    const page = await browser.newPage({ viewport: { width: 1600, height: 1000 }, deviceScaleFactor: 1 });
    await page.setContent(html, { waitUntil: 'load' });
    mkdirSync(dirname(OUT), { recursive: true });
    await page.screenshot({ path: OUT, fullPage: true });
  } finally {
    await browser.close();
  }
  console.log(`wrote ${relative(process.cwd(), OUT) || OUT} (${drawn.length} panels${empty.length ? `; no data: ${empty.join(', ')}` : ''})`);
}

try {
  await main();
} catch (err) {
  console.error(`dashboard preview failed: ${err?.stack ?? err}\nlogs: ${work}`);
  process.exitCode = 1;
} finally {
  await stopAll();
  if (!opt.keep && process.exitCode !== 1) rmSync(work, { recursive: true, force: true });
  else console.log(`work files kept in ${work}`);
}
