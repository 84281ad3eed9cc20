#!/usr/bin/env node
// npm run bench:clustering — deep-reasoning bursts on one provider account vs routed through
// Switchyard, reproduced in one run against simulated, throttling provider accounts.
//
//   node scripts/bench-clustering.mjs [--quick] [--out docs/bench/clustering.json] [--no-docs]
//
// --quick    12 chains and 10 uncongested calls (smoke run; writes under .bench/, not docs/)
// --no-docs  keep docs/clustering.md and docs/clustering-latency.svg as they are
// --render <report.json>  only rewrite docs/clustering.md and the SVG from an earlier report
//
// What runs (all from the compiled dist/, `npm run bench:clustering` builds first):
//   - `switchyard simulate` with 4 throttling accounts (docs/simulator.md): acct-1..3 serve the
//     reasoning model (`deepseek-reasoner`), acct-4 the cheap one (`deepseek-chat`);
//   - a throwaway redis-server on a free port (no persistence), for the two-replica arm;
//   - one or two gateways (`switchyard serve`) with a generated config, per arm;
//   - the load: agent chains of streamed, tool-calling, reasoning_effort=high calls through
//     the official `openai` client with its default retries (maxRetries 2, Retry-After honoured).
// Arms, each after POST /reset of the simulator (empty windows, same PRNG seeds):
//   uncongested      a sample of the same steps one at a time straight at acct-1
//   direct           all chains, 8 at a time, straight at acct-1
//   switchyard       through one gateway over acct-1..3, shedding to deepseek-v3.2 on acct-4
//   switchyard x2    two gateways sharing a Redis store, chains alternating between them
//
// Prints a table, writes docs/bench/clustering.json, docs/clustering.md and
// docs/clustering-latency.svg. Whole run: about 5 minutes on 2 cores.
import { spawn, execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import { createConnection, createServer } from 'node:net';
import { cpus } from 'node:os';
import { performance } from 'node:perf_hooks';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import cliProgress from 'cli-progress';
import OpenAI from 'openai';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const { values: o } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    'no-docs': { type: 'boolean', default: false },
    out: { type: 'string' },
    render: { type: 'string' },
  },
});
const work = join(root, '.bench', 'clustering');
mkdirSync(work, { recursive: true });
const writeDocs = !o.quick && !o['no-docs'];
const outJson = resolve(o.out ?? (o.quick ? join(work, 'clustering.json') : join(root, 'docs', 'bench', 'clustering.json')));
const MAIN = join(root, 'dist', 'main.js');

// ---------------------------------------------------------------------------------------
// Parameters. The simulator's throttle and the gateway's window use the same numbers: the
// gateway is configured with the provider's known limits.
const SEED = 20_250_601;
const SIM = {
  chunk_delay_ms: 20, // the default pace: a tool-call step streams 52 events in ~1.2 s
  first_byte_delay_ms: 150,
  seed: SEED,
  throttle: {
    enabled: true,
    window_ms: 6_000, // a stalled step (~6.2 s) counts for nearly its whole life, so a stall keeps the account hot
    deep_threshold: 4, // 8 concurrent deep calls are twice one account's limit; 3 accounts take 12
    deep_efforts: ['high', 'xhigh'],
    reject_share: 0.6, // 60% of congested calls get 429 + Retry-After, the rest stall
    retry_after_s: 2,
    stall_first_token_ms: 3_000, // a stalled step takes ~6.2 s instead of ~1.2 s …
    stall_pause_ms: 400, // … with 5 pauses in its 40-event reasoning burst
    stall_pause_every: 8,
  },
};
const WORKLOAD = {
  chains: o.quick ? 12 : 48,
  steps: 5,
  concurrency: 8,
  uncongested_calls: o.quick ? 10 : 40,
  model: 'gpt-5.5-codex',
  direct_model: 'deepseek-reasoner',
  reasoning_effort: 'high',
  max_retries: 2,
};
/** USD per 1M tokens. */
const PRICES = {
  'gpt-5.5-codex': { input: 1.25, cached_input: 0.125, output: 10 },
  'deepseek-v3.2': { input: 0.28, cached_input: 0.028, output: 0.42 },
};
/** Upstream model id (x-switchyard-model, or what a direct client called) -> public model it serves. */
const SERVES = { 'deepseek-reasoner': 'gpt-5.5-codex', 'deepseek-chat': 'deepseek-v3.2' };
const TOOLS = [
  {
    type: 'function',
    function: {
      name: 'weather',
      description: 'Current weather for a city.',
      parameters: { type: 'object', properties: { location: { type: 'string' } }, required: ['location'] },
    },
  },
];
const CITIES = ['San Francisco', 'Berlin', 'Tokyo', 'Lagos', 'Lima', 'Oslo', 'Pune', 'Perth'];
const ASKS = [
  'Plan a field trip; start by checking the weather in',
  'Compare the next step against the forecast for',
  'Decide whether the outdoor deploy window holds, given the weather in',
  'Re-check your assumption about conditions in',
  'Write the final go/no-go note, confirming the weather in',
];

// ---------------------------------------------------------------------------------------
// Processes.
const children = [];
function start(name, cmd, args, opts = {}) {
  const log = openSync(join(work, `${name}.log`), 'w');
  const child = spawn(cmd, args, { stdio: ['ignore', log, log], env: { ...process.env, ...opts.env } });
  child.exited = new Promise((r) => child.once('exit', r));
  children.push(child);
  return child;
}
async function stop(child) {
  if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
  await Promise.race([child.exited, new Promise((r) => setTimeout(r, 5_000))]);
  if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
}
const stopAll = () => children.forEach((c) => c.exitCode === null && c.signalCode === null && c.kill('SIGTERM'));
process.on('exit', stopAll);
process.on('SIGINT', () => process.exit(130));

const freePort = () =>
  new Promise((res) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => res(port));
    });
  });

async function waitHttp(url, ms = 15_000) {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    try {
      const r = await fetch(url);
      await r.arrayBuffer();
      if (r.status < 500) return;
    } catch {
      // not up yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${url} did not come up (logs in ${relative(root, work)}/)`);
}

function redisPing(port) {
  return new Promise((res) => {
    const s = createConnection({ port, host: '127.0.0.1' }, () => s.write('PING\r\n'));
    s.setTimeout(500, () => s.destroy());
    s.on('data', (d) => {
      s.destroy();
      res(d.toString().startsWith('+PONG'));
    });
    s.on('error', () => res(false));
    s.on('close', () => res(false));
  });
}

/** `total_commands_processed` from INFO stats: shows the replicas really shared state through Redis. */
function redisCommands(port) {
  return new Promise((res) => {
    let buf = '';
    const s = createConnection({ port, host: '127.0.0.1' }, () => s.write('INFO stats\r\n'));
    s.setTimeout(1_000, () => s.destroy());
    s.on('data', (d) => {
      buf += d.toString();
      const m = /total_commands_processed:(\d+)/.exec(buf);
      if (m) {
        s.destroy();
        res(Number(m[1]));
      }
    });
    s.on('error', () => res(null));
    s.on('close', () => res(null));
  });
}

function hasRedis() {
  try {
    execFileSync('redis-server', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

if (o.render) {
  present(JSON.parse(readFileSync(resolve(o.render), 'utf8')), true);
  process.exit(0);
}

// ---------------------------------------------------------------------------------------
// Configs.
const simPort = await freePort();
const SIM_URL = `http://127.0.0.1:${simPort}`;
const benchKey = 'sk-bench-clustering-key';
const keysYaml = `keys:\n  - name: bench\n    key_sha256: ${createHash('sha256').update(benchKey).digest('hex')}\n    models: ["*"]\n`;
const pricesYaml = (m) => `{ input: ${PRICES[m].input}, cached_input: ${PRICES[m].cached_input}, output: ${PRICES[m].output} }`;

// The simulator's settings are the first `simulator` upstream of this (otherwise minimal) config.
const t = SIM.throttle;
const simConfig = join(work, 'simulator.yaml');
writeFileSync(
  simConfig,
  `# generated by scripts/bench-clustering.mjs: settings for \`switchyard simulate\`
upstreams:
  - id: simulated-account
    provider: simulator
    simulator:
      chunk_delay_ms: ${SIM.chunk_delay_ms}
      first_byte_delay_ms: ${SIM.first_byte_delay_ms}
      seed: ${SIM.seed}
      throttle:
        enabled: true
        window_ms: ${t.window_ms}
        deep_threshold: ${t.deep_threshold}
        deep_efforts: [${t.deep_efforts.join(', ')}]
        reject_share: ${t.reject_share}
        retry_after_s: ${t.retry_after_s}
        stall_first_token_ms: ${t.stall_first_token_ms}
        stall_pause_ms: ${t.stall_pause_ms}
        stall_pause_every: ${t.stall_pause_every}
models:
  - name: unused
    targets: [{ upstream: simulated-account, model: deepseek-reasoner }]
    price: { input: 0, output: 0 }
${keysYaml}`,
);

function gatewayYaml(redisUrl) {
  const acct = (n) => `  - id: acct-${n}
    provider: openai-compatible
    base_url: ${SIM_URL}/acct-${n}/v1
    api_key: sk-simulated-acct-${n}
    max_concurrency: 64
    window: { seconds: ${t.window_ms / 1000}, threshold: ${t.deep_threshold} }
`;
  return `# generated by scripts/bench-clustering.mjs
server:
  log_level: info
${redisUrl ? `store: { redis_url: ${redisUrl}, replicas: 2 }\n` : ''}routing:
  strategy: balanced
upstreams:
${[1, 2, 3, 4].map(acct).join('')}models:
  - name: gpt-5.5-codex
    reasoning: true
    deep_effort: high
    shed: { policy: downgrade, fallback: deepseek-v3.2 }
    price: ${pricesYaml('gpt-5.5-codex')}
    targets:
      - { upstream: acct-1, model: deepseek-reasoner }
      - { upstream: acct-2, model: deepseek-reasoner }
      - { upstream: acct-3, model: deepseek-reasoner }
  - name: deepseek-v3.2
    reasoning: false
    price: ${pricesYaml('deepseek-v3.2')}
    targets:
      - { upstream: acct-4, model: deepseek-chat }
${keysYaml}`;
}

function checkConfig(path) {
  try {
    return execFileSync(process.execPath, [MAIN, 'check-config', '--config', path], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();
  } catch (err) {
    throw new Error(`generated config ${relative(root, path)} does not validate:\n${err.stderr || err.message}`);
  }
}

// ---------------------------------------------------------------------------------------
// Load.
const pct = (sorted, q) => (sorted.length ? sorted[Math.max(0, Math.ceil(q * sorted.length) - 1)] : NaN);

function cost(model, usage) {
  const p = PRICES[model];
  if (!p || !usage) return 0;
  const input = usage.prompt_tokens ?? 0;
  const cached = usage.prompt_tokens_details?.cached_tokens ?? usage.prompt_cache_hit_tokens ?? 0;
  return ((input - cached) * p.input + cached * p.cached_input + (usage.completion_tokens ?? 0) * p.output) / 1e6;
}

function messagesFor(chain, step, history) {
  const ask = (s) => `${ASKS[s]} ${CITIES[(chain + s) % CITIES.length]} (chain ${chain + 1}, step ${s + 1}/${WORKLOAD.steps}).`;
  const msgs = [{ role: 'system', content: 'You are a careful planning agent. Use the weather tool before every decision.' }];
  for (let s = 0; s < step; s++) {
    msgs.push({ role: 'user', content: ask(s) }, ...history[s]);
  }
  msgs.push({ role: 'user', content: ask(step) });
  return msgs;
}

/** One streamed, tool-calling deep call; the time covers the client's own retries. */
async function runStep(client, model, messages) {
  const t0 = performance.now();
  const r = { ok: false, ms: 0, shed: false, fallback: false, served: null, usage: null, calls: [], error: null };
  let content = '';
  try {
    const { data: stream, response } = await client.chat.completions
      .create({
        model,
        reasoning_effort: WORKLOAD.reasoning_effort,
        stream: true,
        stream_options: { include_usage: true },
        tools: TOOLS,
        messages,
      })
      .withResponse();
    r.shed = response.headers.has('x-switchyard-shed');
    r.fallback = response.headers.has('x-switchyard-fallback');
    let chunkModel = null;
    const calls = new Map();
    for await (const chunk of stream) {
      chunkModel ??= chunk.model;
      if (chunk.usage) r.usage = chunk.usage;
      for (const ch of chunk.choices ?? []) {
        content += ch.delta?.content ?? '';
        for (const tc of ch.delta?.tool_calls ?? []) {
          const c = calls.get(tc.index) ?? { id: '', name: '', arguments: '' };
          c.id ||= tc.id ?? '';
          c.name += tc.function?.name ?? '';
          c.arguments += tc.function?.arguments ?? '';
          calls.set(tc.index, c);
        }
      }
    }
    const upstreamModel = response.headers.get('x-switchyard-model') ?? (/reasoner/i.test(chunkModel ?? model) ? 'deepseek-reasoner' : 'deepseek-chat');
    r.served = SERVES[upstreamModel] ?? model;
    r.calls = [...calls.values()];
    r.ok = r.calls.length > 0 || content.length > 0;
    if (!r.ok) r.error = 'empty stream';
  } catch (err) {
    r.error = err?.status ? `HTTP ${err.status}` : (err?.constructor?.name ?? 'error');
  }
  r.ms = performance.now() - t0;
  return r;
}

function makeClient(baseURL, counters) {
  return new OpenAI({
    baseURL,
    apiKey: benchKey,
    maxRetries: WORKLOAD.max_retries,
    timeout: 120_000,
    // Counts every HTTP attempt the SDK makes, so 429s it retried internally are seen too.
    fetch: async (url, init) => {
      const res = await fetch(url, init);
      counters.attempts++;
      if (res.status === 429) counters.c429++;
      return res;
    },
  });
}

const bar = new cliProgress.SingleBar(
  {
    format: '{arm} |{bar}| {value}/{total} steps | chains ok {chainsOk}/{chainsDone} | 429s {c429} | sheds {sheds} | {duration_formatted}',
    stream: process.stderr,
    hideCursor: true,
    noTTYOutput: !process.stderr.isTTY,
    notTTYSchedule: 15_000,
    etaBuffer: 40,
  },
  cliProgress.Presets.shades_classic,
);

/**
 * Runs `chains` agent chains, `concurrency` at a time (steps of a chain in order; a chain
 * stops at its first failed step), chain i on baseURLs[i % n].
 */
async function runArm({ name, label, baseURLs, model, chains, steps, concurrency }) {
  await (await fetch(`${SIM_URL}/reset`, { method: 'POST' })).arrayBuffer();
  const counters = { c429: 0, attempts: 0 };
  const clients = baseURLs.map((u) => makeClient(u, counters));
  const results = [];
  const chainOk = [];
  const live = { arm: label.padEnd(22), chainsOk: 0, chainsDone: 0, c429: 0, sheds: 0 };
  bar.start(chains * steps, 0, live);
  const t0 = performance.now();
  let next = 0;
  async function worker() {
    while (next < chains) {
      const chain = next++;
      const client = clients[chain % clients.length];
      const history = [];
      let ok = true;
      for (let step = 0; step < steps; step++) {
        const r = await runStep(client, model, messagesFor(chain, step, history));
        results.push(r);
        live.c429 = counters.c429;
        live.sheds += r.shed ? 1 : 0;
        if (!r.ok) {
          ok = false;
          bar.increment(steps - step, live);
          break;
        }
        const calls = r.calls.length ? r.calls : [{ id: '', name: 'weather', arguments: '{}' }];
        history.push([
          {
            role: 'assistant',
            content: null,
            tool_calls: calls.map((c, i) => ({ id: c.id || `call_${chain}_${step}_${i}`, type: 'function', function: { name: c.name || 'weather', arguments: c.arguments || '{}' } })),
          },
          ...calls.map((c, i) => ({ role: 'tool', tool_call_id: c.id || `call_${chain}_${step}_${i}`, content: JSON.stringify({ temp_c: 12 + ((chain + step) % 15), sky: 'clear' }) })),
        ]);
        bar.increment(1, live);
      }
      chainOk.push(ok);
      live.chainsDone++;
      live.chainsOk += ok ? 1 : 0;
      bar.update(live);
    }
  }
  await Promise.all(Array.from({ length: concurrency }, worker));
  const wall = (performance.now() - t0) / 1000;
  bar.update(chains * steps, live);
  bar.stop();
  const stats = (await (await fetch(`${SIM_URL}/stats`)).json()).accounts;

  const ms = results.map((r) => r.ms).sort((a, b) => a - b);
  const served = {};
  let usd = 0;
  for (const r of results) {
    if (r.served) served[r.served] = (served[r.served] ?? 0) + 1;
    usd += cost(r.served, r.usage);
  }
  const errors = {};
  for (const r of results) if (r.error) errors[r.error] = (errors[r.error] ?? 0) + 1;
  const okSteps = results.filter((r) => r.ok).length;
  return {
    name,
    label,
    base_urls: baseURLs,
    model,
    concurrency,
    wall_s: +wall.toFixed(1),
    steps_run: results.length,
    steps_ok: okSteps,
    step_errors: errors,
    latency_s: { p50: +(pct(ms, 0.5) / 1000).toFixed(2), p95: +(pct(ms, 0.95) / 1000).toFixed(2), p99: +(pct(ms, 0.99) / 1000).toFixed(2), max: +(ms.at(-1) / 1000).toFixed(2) },
    chains,
    chains_ok: chainOk.filter(Boolean).length,
    chain_success: +(chainOk.filter(Boolean).length / chains).toFixed(3),
    client_429s: counters.c429,
    http_attempts: counters.attempts,
    sheds: results.filter((r) => r.shed).length,
    fallbacks: results.filter((r) => r.fallback).length,
    served,
    cost_usd: +usd.toFixed(6),
    cost_usd_per_ok_step: okSteps ? +(usd / okSteps).toFixed(7) : null,
    simulator: stats,
  };
}

// ---------------------------------------------------------------------------------------
// Run.
const started = new Date();
checkConfig(simConfig);
const sim = start('simulator', process.execPath, [MAIN, 'simulate', '--config', simConfig, '--port', String(simPort), '--accounts', '4']);
await waitHttp(`${SIM_URL}/health`);

let redisUrl = null;
let redisPort = null;
let redis = null;
if (hasRedis()) {
  const port = await freePort();
  redis = start('redis', 'redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no']);
  const end = Date.now() + 10_000;
  while (!(await redisPing(port))) {
    if (Date.now() > end) throw new Error('redis-server did not come up');
    await new Promise((r) => setTimeout(r, 100));
  }
  redisUrl = `redis://127.0.0.1:${port}`;
  redisPort = port;
} else {
  process.stderr.write('redis-server not found: skipping the "switchyard x2 + redis" arm\n');
}

const oneConfig = join(work, 'switchyard.yaml');
writeFileSync(oneConfig, gatewayYaml(null));
const checks = [checkConfig(oneConfig)];
const twoConfig = join(work, 'switchyard-redis.yaml');
if (redisUrl) {
  writeFileSync(twoConfig, gatewayYaml(redisUrl));
  checks.push(checkConfig(twoConfig));
}

async function startGateways(config, n, tag) {
  const gws = [];
  for (let i = 0; i < n; i++) {
    const port = await freePort();
    const child = start(`gateway-${tag}-${i + 1}`, process.execPath, [MAIN, '--config', config], { env: { PORT: String(port), HOST: '127.0.0.1' } });
    gws.push({ child, url: `http://127.0.0.1:${port}` });
  }
  for (const g of gws) await waitHttp(`${g.url}/healthz`);
  return gws;
}

const { chains, steps, concurrency } = WORKLOAD;
const acct1 = `${SIM_URL}/acct-1/v1`;
const arms = [];
arms.push(
  await runArm({
    name: 'uncongested',
    label: 'uncongested (1 at a time)',
    baseURLs: [acct1],
    model: WORKLOAD.direct_model,
    chains: Math.ceil(WORKLOAD.uncongested_calls / steps),
    steps,
    concurrency: 1,
  }),
);
arms.push(await runArm({ name: 'direct', label: 'direct (acct-1)', baseURLs: [acct1], model: WORKLOAD.direct_model, chains, steps, concurrency }));
{
  const gws = await startGateways(oneConfig, 1, 'one');
  arms.push(await runArm({ name: 'switchyard', label: 'switchyard', baseURLs: gws.map((g) => `${g.url}/v1`), model: WORKLOAD.model, chains, steps, concurrency }));
  await Promise.all(gws.map((g) => stop(g.child)));
}
if (redisUrl) {
  const gws = await startGateways(twoConfig, 2, 'redis');
  const before = await redisCommands(redisPort);
  const arm = await runArm({ name: 'switchyard_x2_redis', label: 'switchyard x2 + redis', baseURLs: gws.map((g) => `${g.url}/v1`), model: WORKLOAD.model, chains, steps, concurrency });
  const after = await redisCommands(redisPort);
  arm.redis_commands = before !== null && after !== null ? after - before : null;
  arms.push(arm);
  await Promise.all(gws.map((g) => stop(g.child)));
}
await stop(sim);
if (redis) await stop(redis);
const elapsed = (Date.now() - started.getTime()) / 1000;

// ---------------------------------------------------------------------------------------
// Report.
const git = (args) => {
  try {
    return execFileSync('git', args, { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    return null;
  }
};
const report = {
  generated_at: started.toISOString(),
  command: o.quick ? 'node scripts/bench-clustering.mjs --quick' : 'npm run bench:clustering',
  git: { rev: git(['rev-parse', '--short', 'HEAD']), dirty: (git(['status', '--porcelain', '--', 'src']) ?? '') !== '' },
  machine: { node: process.version, cpus: cpus().length, cpu_model: cpus()[0]?.model ?? null },
  elapsed_s: +elapsed.toFixed(1),
  parameters: { simulator: SIM, workload: WORKLOAD, prices_usd_per_1m: PRICES, gateway_config_checks: checks },
  arms,
};
mkdirSync(dirname(outJson), { recursive: true });
writeFileSync(outJson, `${JSON.stringify(report, null, 2)}\n`);

present(report, writeDocs);

/** Prints the tables; with `docs`, writes docs/clustering.md and docs/clustering-latency.svg. */
function present(rep, docs) {
  const HEAD = ['arm', 'p50 s', 'p95 s', 'p99 s', 'chains ok', '429s seen', 'sheds', 'cost', 'steps ok', 'wall s'];
  const rows = rep.arms.map((a) => [
    a.label,
    f2(a.latency_s.p50),
    f2(a.latency_s.p95),
    f2(a.latency_s.p99),
    `${pctStr(a.chain_success)} (${a.chains_ok}/${a.chains})`,
    String(a.client_429s),
    String(a.sheds),
    usdStr(a.cost_usd),
    `${a.steps_ok}/${a.steps_run}`,
    a.wall_s.toFixed(0),
  ]);
  const STAT_HEAD = ['arm', 'account', 'requests', 'deep', '429s', 'stalls', 'peak deep in window'];
  const statRows = rep.arms.flatMap((a) =>
    Object.entries(a.simulator)
      .filter(([, s]) => s.requests > 0)
      .map(([acct, s]) => [a.label, acct, s.requests, s.deep, s.rejected_429, s.stalled, s.peak_deep_in_window].map(String)),
  );
  process.stdout.write(
    `\n${textTable(HEAD, rows)}\n\nsimulator /stats per arm:\n${textTable(STAT_HEAD, statRows)}\n\n` +
      `step latency = full stream time of one step including the client's retries; cost from usage chunks, priced by the model that served.\n` +
      `report: ${relative(root, outJson)}  (run took ${rep.elapsed_s.toFixed(0)} s)\n`,
  );
  if (docs) {
    writeFileSync(join(root, 'docs', 'clustering-latency.svg'), svgChart(rep));
    writeFileSync(join(root, 'docs', 'clustering.md'), markdown(rep, mdTable(HEAD, rows), mdTable(STAT_HEAD, statRows)));
    process.stdout.write('wrote docs/clustering.md, docs/clustering-latency.svg\n');
  }
}

function f2(x) {
  return Number.isFinite(x) ? x.toFixed(2) : '–';
}
function pctStr(x) {
  return `${(x * 100).toFixed(0)}%`;
}
function usdStr(x) {
  return `$${x.toFixed(4)}`;
}
function textTable(head, rows) {
  const w = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const line = (r) => r.map((c, i) => (i === 0 ? c.padEnd(w[i]) : c.padStart(w[i]))).join('  ');
  return [line(head), w.map((n) => '-'.repeat(n)).join('  '), ...rows.map(line)].join('\n');
}
function mdTable(head, rows) {
  return [`| ${head.join(' | ')} |`, `|${head.map((_h, i) => (i === 0 ? '---' : '---:')).join('|')}|`, ...rows.map((r) => `| ${r.join(' | ')} |`)].join('\n');
}

/**
 * A grouped bar chart (p50/p95/p99 per arm) written by hand: it is a dozen rects and labels,
 * so a charting dependency (and a headless browser to render it) would cost far more than it
 * gives; the output is deterministic, diffable text that GitHub renders as an image.
 */
function svgChart(rep) {
  const arms = rep.arms;
  const wl = rep.parameters.workload;
  const th = rep.parameters.simulator.throttle;
  const W = 760;
  const H = 380;
  const m = { top: 56, right: 20, bottom: 50, left: 56 };
  const plotW = W - m.left - m.right;
  const plotH = H - m.top - m.bottom;
  const maxV = Math.max(1, ...arms.flatMap((a) => [a.latency_s.p50, a.latency_s.p95, a.latency_s.p99]));
  const niceStep = [0.5, 1, 2, 2.5, 5, 10, 20, 30, 60].find((s) => maxV / s <= 6) ?? 60;
  const top = Math.ceil(maxV / niceStep) * niceStep;
  const y = (v) => m.top + plotH - (v / top) * plotH;
  const colors = { p50: '#9ecae1', p95: '#4292c6', p99: '#08519c' };
  const groupW = plotW / arms.length;
  const barW = Math.min(44, (groupW * 0.7) / 3);
  const esc = (s) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;');
  const parts = [];
  parts.push(`<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="-apple-system, Segoe UI, Helvetica, Arial, sans-serif" font-size="12">`);
  parts.push(
    '<!-- Written by scripts/bench-clustering.mjs from docs/bench/clustering.json. Hand-written SVG on purpose: a dozen bars and labels need no charting library or headless renderer, and the file stays small, deterministic and diffable. -->',
  );
  parts.push(`<rect width="${W}" height="${H}" fill="#ffffff"/>`);
  parts.push(`<text x="${m.left}" y="22" font-size="15" font-weight="600">Step latency per arm (seconds; lower is better)</text>`);
  parts.push(
    `<text x="${m.left}" y="40" fill="#555">${wl.chains} agent chains × ${wl.steps} streamed deep tool calls, ${wl.concurrency} chains at a time; simulated accounts: ${th.deep_threshold} deep calls / ${th.window_ms / 1000} s window</text>`,
  );
  for (let v = 0; v <= top + 1e-9; v += niceStep) {
    parts.push(`<line x1="${m.left}" x2="${W - m.right}" y1="${y(v).toFixed(1)}" y2="${y(v).toFixed(1)}" stroke="${v === 0 ? '#333' : '#e5e5e5'}"/>`);
    parts.push(`<text x="${m.left - 8}" y="${(y(v) + 4).toFixed(1)}" text-anchor="end" fill="#555">${+v.toFixed(1)}</text>`);
  }
  arms.forEach((a, i) => {
    const cx = m.left + groupW * i + groupW / 2;
    ['p50', 'p95', 'p99'].forEach((k, j) => {
      const v = a.latency_s[k];
      const x = cx + (j - 1.5) * barW;
      parts.push(`<rect x="${x.toFixed(1)}" y="${y(v).toFixed(1)}" width="${(barW - 3).toFixed(1)}" height="${(y(0) - y(v)).toFixed(1)}" fill="${colors[k]}"><title>${esc(a.label)} ${k}: ${v.toFixed(2)} s</title></rect>`);
      parts.push(`<text x="${(x + (barW - 3) / 2).toFixed(1)}" y="${(y(v) - 4).toFixed(1)}" text-anchor="middle" font-size="11">${v.toFixed(1)}</text>`);
    });
    parts.push(`<text x="${cx.toFixed(1)}" y="${H - m.bottom + 18}" text-anchor="middle" font-weight="600">${esc(a.label)}</text>`);
    parts.push(`<text x="${cx.toFixed(1)}" y="${H - m.bottom + 34}" text-anchor="middle" fill="#555">chains ok ${(a.chain_success * 100).toFixed(0)}% · 429s ${a.client_429s}</text>`);
  });
  const lx = W - m.right - 190;
  ['p50', 'p95', 'p99'].forEach((k, j) => {
    parts.push(`<rect x="${lx + j * 62}" y="11" width="12" height="12" fill="${colors[k]}"/>`);
    parts.push(`<text x="${lx + j * 62 + 16}" y="21">${k}</text>`);
  });
  parts.push('</svg>');
  return `${parts.join('\n')}\n`;
}

function markdown(rep, table, stats) {
  const t = rep.parameters.simulator.throttle;
  const wl = rep.parameters.workload;
  const PRICES = rep.parameters.prices_usd_per_1m;
  const by = Object.fromEntries(rep.arms.map((a) => [a.name, a]));
  const un = by['uncongested'];
  const di = by['direct'];
  const sy = by['switchyard'];
  const s2 = by['switchyard_x2_redis'];
  const x = (a, b) => (b > 0 ? `${(a / b).toFixed(1)}×` : '–');
  const reading = [];
  if (un && di) {
    reading.push(
      `- **Direct, 8 chains on one account.** p99 step latency ${f2(di.latency_s.p99)} s against ${f2(un.latency_s.p99)} s uncongested ` +
        `(${x(di.latency_s.p99, un.latency_s.p99)}), p50 ${f2(di.latency_s.p50)} s; ${pctStr(di.chain_success)} of chains finished. ` +
        `The account saw up to ${di.simulator['acct-1']?.peak_deep_in_window ?? '?'} deep calls in its window (limit ${t.deep_threshold}), ` +
        `refused ${di.simulator['acct-1']?.rejected_429 ?? '?'} with 429 and stalled ${di.simulator['acct-1']?.stalled ?? '?'}; the client's two retries ` +
        `(honouring \`Retry-After: ${t.retry_after_s}\`) turn most refusals into multi-second waits, and a step whose three attempts are all refused fails its chain.`,
    );
  }
  for (const a of [sy, s2].filter(Boolean)) {
    const congested = ['acct-1', 'acct-2', 'acct-3'].reduce((n, k) => n + (a.simulator[k]?.congested ?? 0), 0);
    const peaks = ['acct-1', 'acct-2', 'acct-3'].map((k) => a.simulator[k]?.peak_deep_in_window ?? 0).join(' / ');
    reading.push(
      `- **${a.label}.** p99 ${f2(a.latency_s.p99)} s (${x(a.latency_s.p99, un?.latency_s.p99 ?? 0)} the uncongested p99), ` +
        `${pctStr(a.chain_success)} of chains finished, ${a.client_429s} 429s reached the client, ${a.sheds} steps shed to deepseek-v3.2. ` +
        `Peak deep calls in the window per reasoning account: ${peaks} (limit ${t.deep_threshold}); ${congested} calls found an account congested.` +
        (a.redis_commands != null ? ` The replicas sent Redis ${a.redis_commands} commands during the arm.` : '') +
        (congested > 0
          ? ' Calls that still found an account congested mean the gateway let an account past its window; the gateway build measured here did not fully keep to it.'
          : a.sheds === 0
            ? ` Nothing had to be shed: ${wl.concurrency} concurrent deep calls fit in 3 × ${t.deep_threshold} window slots; the downgrade to deepseek-v3.2 acts only when every reasoning account is hot.`
            : ''),
    );
  }
  if (di && sy) {
    const per = (a) => (a.steps_ok ? `$${((a.cost_usd / a.steps_ok) * 1000).toFixed(3)}` : '–');
    reading.push(
      `- **Cost.** Direct ${usdStr(di.cost_usd)} for ${di.steps_ok} completed steps, Switchyard ${usdStr(sy.cost_usd)} for ${sy.steps_ok}` +
        (s2 ? `, two replicas ${usdStr(s2.cost_usd)} for ${s2.steps_ok}` : '') +
        ` (per 1,000 completed steps: direct ${per(di)}, Switchyard ${per(sy)}${s2 ? `, two replicas ${per(s2)}` : ''}). ` +
        'Direct spends less only because it completes less: a refused call bills nothing, and the chains it breaks are lost work. ' +
        `A shed step would be billed at deepseek-v3.2 prices (${x(PRICES['gpt-5.5-codex'].output, PRICES['deepseek-v3.2'].output)} cheaper output).`,
    );
  }
  const sim = rep.parameters.simulator;
  const th = sim.throttle;
  // The recorded DeepSeek tool-call stream: 52 events, 40 of them reasoning deltas.
  const normalStep = (sim.first_byte_delay_ms + 51 * sim.chunk_delay_ms) / 1000;
  const stalledStep = normalStep + (th.stall_first_token_ms + Math.floor(40 / th.stall_pause_every) * th.stall_pause_ms) / 1000;
  return `# Reasoning bursts: one account vs. Switchyard

Generated by \`${rep.command}\` on ${rep.generated_at.slice(0, 10)} (git ${rep.git.rev ?? '?'}${rep.git.dirty ? ', uncommitted src changes' : ''}; Node ${rep.machine.node}, ${rep.machine.cpus} CPUs). Raw numbers: [bench/clustering.json](bench/clustering.json).

When several deep-reasoning calls land on one provider account within a few seconds, the
provider throttles: 429s, stalled first tokens, multi-step agent chains failing. This
benchmark reproduces that against simulated provider accounts ([simulator.md](simulator.md))
and runs the same agent workload four ways in one run.

\`\`\`bash
npm run bench:clustering     # builds, then runs scripts/bench-clustering.mjs (~4-5 min on 2 cores)
\`\`\`

![step latency per arm](clustering-latency.svg)

## Results

${table}

Step latency is the full stream time of one step, including the \`openai\` client's own
retries (a failed step counts with the time it took to fail). "429s seen" counts every
429 the client received, retried or not. "sheds" counts responses with \`x-switchyard-shed\`.
Cost is the usage chunks × the price table below, priced by the model that served the
step (\`x-switchyard-model\`; direct calls are the reasoning model's account).

Simulator \`/stats\` after each arm (accounts that saw traffic):

${stats}

## Reading

${reading.join('\n')}

## Setup

| | |
|---|---|
| workload | ${rep.parameters.workload.chains * rep.parameters.workload.steps} prompts = ${rep.parameters.workload.chains} agent chains × ${rep.parameters.workload.steps} steps, ${rep.parameters.workload.concurrency} chains at a time, steps of a chain in order; a chain fails at its first failed step |
| step | \`openai\` client (maxRetries ${rep.parameters.workload.max_retries}), \`model: ${rep.parameters.workload.model}\` (direct: \`${rep.parameters.workload.direct_model}\`), \`reasoning_effort: ${rep.parameters.workload.reasoning_effort}\`, \`stream: true\`, \`stream_options.include_usage\`, one function tool; ok when the stream completes with a tool call or content |
| uncongested | ${un ? un.steps_run : '–'} of the same steps, one at a time, straight at acct-1 |
| simulator | \`switchyard simulate --accounts 4\`: acct-1..3 serve \`deepseek-reasoner\` (recorded DeepSeek reasoner tool-call stream, 52 events), acct-4 \`deepseek-chat\`; \`chunk_delay_ms: ${sim.chunk_delay_ms}\`, \`first_byte_delay_ms: ${sim.first_byte_delay_ms}\`, \`seed: ${sim.seed}\` |
| throttle | \`window_ms: ${th.window_ms}\`, \`deep_threshold: ${th.deep_threshold}\`, \`deep_efforts: [${th.deep_efforts.join(', ')}]\`, \`reject_share: ${th.reject_share}\`, \`retry_after_s: ${th.retry_after_s}\`, \`stall_first_token_ms: ${th.stall_first_token_ms}\`, \`stall_pause_ms: ${th.stall_pause_ms}\` every \`${th.stall_pause_every}\` reasoning events |
| gateway | \`gpt-5.5-codex\`: \`reasoning: true\`, \`deep_effort: high\`, \`shed: { policy: downgrade, fallback: deepseek-v3.2 }\`, targets acct-1..3 (\`deepseek-reasoner\`), each with \`window: { seconds: ${th.window_ms / 1000}, threshold: ${th.deep_threshold} }\`; \`deepseek-v3.2\` on acct-4 (\`deepseek-chat\`); \`routing.strategy: balanced\` |
| x2 + redis | two gateway processes, same config plus \`store: { redis_url: redis://127.0.0.1:<port>, replicas: 2 }\`, a throwaway \`redis-server --save '' --appendonly no\`; chains alternate between the replicas |
| prices | gpt-5.5-codex ${PRICES['gpt-5.5-codex'].input} / ${PRICES['gpt-5.5-codex'].cached_input} / ${PRICES['gpt-5.5-codex'].output}, deepseek-v3.2 ${PRICES['deepseek-v3.2'].input} / ${PRICES['deepseek-v3.2'].cached_input} / ${PRICES['deepseek-v3.2'].output} USD per 1M input / cached input / output tokens |

Why these throttle numbers: ${rep.parameters.workload.concurrency} concurrent deep calls are twice what one account takes
(${th.deep_threshold} in its ${th.window_ms / 1000} s window), so the direct arm is congested from the first wave, and
it stays so: a stall (${th.stall_first_token_ms / 1000} s before the first token, ${th.stall_pause_ms} ms pauses in the
reasoning burst) turns a ${normalStep.toFixed(1)} s step into a ${stalledStep.toFixed(1)} s one that counts in the window for
nearly all of it, like the throttling spiral of a real account. Three accounts take
${3 * th.deep_threshold}, so fanning the same ${rep.parameters.workload.concurrency} out leaves headroom without shedding. \`Retry-After: ${th.retry_after_s}\`
is what the client waits per refusal; with ${Math.round(th.reject_share * 100)}% of congested calls refused, about
${Math.round(th.reject_share ** 3 * 100)}% of congested steps see all three attempts refused and fail their chain. The
numbers also keep the whole run under 5 minutes. The seed is fixed and every arm starts
from \`POST /reset\`, so each arm's throttle decisions replay
identically for the same arrival order; the remaining run-to-run variation is timing.
`;
}
