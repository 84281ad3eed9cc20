#!/usr/bin/env node
// npm run bench:cache — does the gateway keep each agent session's prompt cache warm while it
// spreads load? S sessions (--sessions 12) of T growing turns (--turns 8) each, all at once, in
// three client styles (scripts/bench/cache-clients.mjs), through the built gateway (dist/) in
// front of a fake provider whose accounts each keep their own prefix cache
// (scripts/bench/cache-provider.mjs; it never reads the gateway's config: its caps are its own).
//   claude  Anthropic SDK, /v1/messages, Claude Code's session header, metadata and breakpoints
//   codex   OpenAI SDK, /v1/responses, `prompt_cache_key` and a `session_id` header
//   chat    OpenAI SDK, /v1/chat/completions, `user`
// --stream true (the default: Claude Code and Codex always stream) calls with `stream: true`,
// the provider answering in each API's SSE shapes, first event at the prefill, the last at the
// same total time as unstreamed; a turn's latency is to its last event. --stream false: JSON.
// Arms: `ideal` (each session straight to one uncapped account: the best a cache can do),
// `spread` (the gateway spreading every call, `balanced` with `cache_affinity.enabled: false`,
// as before cache affinity), `default` (the gateway with the config a README reader writes:
// three accounts, no strategy line, no limits), and on request `sticky`; --arms to choose.
// Situations: `room` (3 accounts taking --room (5) calls each: 15 places for 12 sessions) and
// `tight` (--tight (3) each: 9 places). Each session's own system prompt and tools, ~7.5k
// tokens, then ~1.4k tokens per turn; 100-700 ms of the agent's own work between turns.
// Reported per style, situation and arm, from the provider's own log: cached share of input
// tokens, input cost per session (USD; input $3 / 1M, cache read 0.1x, cache write 1.25x on
// Messages), accounts touched per session, turns served, turn latency p50 / p99, and the
// gateway's x-switchyard-cache answers (warm / moved / cold).
import { createHash, randomUUID } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { performance } from 'node:perf_hooks';
import { client, turn } from './bench/cache-clients.mjs';
import { startCacheProvider } from './bench/cache-provider.mjs';
import { freePort, start, stop, waitHttp } from './bench/procs.mjs';

const { values } = parseArgs({
  options: {
    sessions: { type: 'string', default: '12' },
    turns: { type: 'string', default: '8' },
    room: { type: 'string', default: '5' },
    tight: { type: 'string', default: '3' },
    styles: { type: 'string', default: 'claude,codex,chat' },
    arms: { type: 'string', default: 'ideal,spread,default' },
    situations: { type: 'string', default: 'room,tight' },
    gateway: { type: 'string', default: 'dist/main.js' },
    stream: { type: 'string', default: 'true' },
  },
});
if (!['true', 'false'].includes(values.stream)) throw new Error('--stream takes true or false');
const STREAM = values.stream === 'true';
const S = Number(values.sessions);
const T = Number(values.turns);
const KEY = 'sk-bench-cache';
const PRICE_IN = 3; // USD per 1M input tokens
const ACCOUNTS = ['acct-1', 'acct-2', 'acct-3'];

/** Deterministic filler words for session `seed` (the same text in every arm). */
function words(seed, chars) {
  const vocab = [
    'refactor',
    'module',
    'test',
    'import',
    'function',
    'return',
    'config',
    'router',
    'stream',
    'token',
    'cache',
    'session',
    'account',
    'retry',
    'error',
    'value',
  ];
  let h = createHash('sha256').update(seed).digest();
  const out = [];
  let n = 0;
  for (let i = 0; n < chars; i++) {
    if (i % 32 === 31) h = createHash('sha256').update(h).digest();
    const w = `${vocab[h[i % 32] % vocab.length]}${h[(i + 7) % 32] % 50}`;
    out.push(w);
    n += w.length + 1;
  }
  return out.join(' ');
}

function sessionText(s) {
  const id = `s${String(s).padStart(3, '0')}`;
  const system = `You are a coding agent. session ${id}\n${words(`${id}-system`, 24_000)}`;
  const tools = Array.from({ length: 6 }, (_v, k) => ({
    name: `tool_${k}`,
    description: words(`${id}-tool-${k}`, 1_000),
    schema: { type: 'object', properties: { path: { type: 'string' } } },
  }));
  return { id, system, tools, user: (t) => `turn ${t}: ${words(`${id}-turn-${t}`, 4_000)}` };
}

/** An agent's time between two turns, ms: 100-700, fixed per session and turn (every arm waits the same). */
const thinkMs = (id, t) => 100 + (createHash('sha256').update(`${id}-think-${t}`).digest()[0] / 255) * 600;

const pct = (xs, p) => (xs.length ? [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.ceil((p / 100) * xs.length) - 1)] : NaN);

/** Runs S sessions of T turns in `style` against `baseURL`; returns the client-side results. */
async function runSessions(style, baseURL, model) {
  const sdk = client(style, baseURL, KEY);
  const latencies = [];
  const marks = { warm: 0, moved: 0, cold: 0 };
  let served = 0;
  await Promise.all(
    Array.from({ length: S }, async (_v, s) => {
      const sess = sessionText(s);
      const uuid = randomUUID();
      const history = [];
      await new Promise((r) => setTimeout(r, (s * 37) % 200));
      for (let t = 0; t < T; t++) {
        history.push({ role: 'user', content: sess.user(t) });
        const began = performance.now();
        try {
          const { reply, cache } = await turn(style, sdk, sess, history, model, uuid, STREAM);
          latencies.push(performance.now() - began);
          served++;
          if (cache in marks) marks[cache]++;
          history.push({ role: 'assistant', content: reply });
        } catch (err) {
          history.pop();
          process.stderr.write(`${style} session ${sess.id} turn ${t}: ${err.status ?? ''} ${String(err.message).slice(0, 120)}\n`);
        }
        // The agent's own work between turns (tool calls, edits): 100-700 ms, the same in every arm.
        await new Promise((r) => setTimeout(r, thinkMs(sess.id, t)));
      }
    }),
  );
  return { latencies, served, marks };
}

/** The provider-side books of one run: cached share, input cost per session, accounts per session. */
function books(log, style) {
  let input = 0;
  let cached = 0;
  let cost = 0;
  const accounts = new Map();
  for (const e of log) {
    input += e.input;
    cached += e.cached;
    const uncached = e.input - e.cached - e.written;
    cost += (uncached + e.cached * 0.1 + e.written * (style === 'claude' ? 1.25 : 1)) * (PRICE_IN / 1e6);
    if (!accounts.has(e.session)) accounts.set(e.session, new Set());
    accounts.get(e.session).add(e.account);
  }
  const perSession = [...accounts.values()].map((a) => a.size);
  return {
    cachedShare: input ? cached / input : 0,
    costPerSession: cost / S,
    accountsPerSession: perSession.reduce((a, b) => a + b, 0) / Math.max(1, perSession.length),
  };
}

function gatewayConfig(port, arm) {
  const base = (a) => `http://127.0.0.1:${port}/${a}/v1`;
  const ups = ACCOUNTS.flatMap((a) => [
    `  - { id: ${a}-anthropic, provider: anthropic, base_url: "${base(a)}", api_key: "\${BENCH_KEY}" }`,
    `  - { id: ${a}-responses, provider: openai-compatible, base_url: "${base(a)}", api_key: "\${BENCH_KEY}", options: { responses: true } }`,
    `  - { id: ${a}-chat, provider: openai-compatible, base_url: "${base(a)}", api_key: "\${BENCH_KEY}" }`,
  ]);
  const model = (name, kind, upstreamModel) =>
    `  - name: ${name}\n    price: { input: ${PRICE_IN}, output: 15 }\n    targets:\n${ACCOUNTS.map((a) => `      - { upstream: ${a}-${kind}, model: ${upstreamModel} }`).join('\n')}`;
  return [
    ...(arm === 'spread' ? ['routing: { strategy: balanced, cache_affinity: { enabled: false } }'] : arm === 'sticky' ? ['routing: { strategy: sticky }'] : []),
    'upstreams:',
    ...ups,
    'models:',
    model('claude-sonnet-4.6', 'anthropic', 'claude-sonnet-4-6'),
    model('gpt-5.5-codex', 'responses', 'gpt-5.5-codex'),
    model('gpt-5.5', 'chat', 'gpt-5.5'),
    'keys:',
    `  - { name: bench, key_sha256: "${createHash('sha256').update(KEY).digest('hex')}" }`,
    '',
  ].join('\n');
}

const MODEL = { claude: 'claude-sonnet-4.6', codex: 'gpt-5.5-codex', chat: 'gpt-5.5' };
const dir = mkdtempSync(join(tmpdir(), 'switchyard-bench-cache-'));
const rows = [];
console.log(`streamed: ${STREAM} (--stream ${values.stream}); ${S} sessions x ${T} turns; ${values.room} / ${values.tight} calls per account`);
for (const situation of values.situations.split(',')) {
  const cap = Number(situation === 'room' ? values.room : values.tight);
  const provider = await startCacheProvider({ caps: Object.fromEntries(ACCOUNTS.map((a) => [a, cap])) });
  for (const arm of values.arms.split(',')) {
    let gateway = null;
    let url = `http://127.0.0.1:${provider.port}/ideal`;
    if (arm !== 'ideal') {
      const config = join(dir, `${arm}.yaml`);
      writeFileSync(config, gatewayConfig(provider.port, arm));
      const port = await freePort();
      gateway = start(dir, `gateway-${situation}-${arm}`, process.execPath, [values.gateway, '--config', config], {
        PORT: String(port),
        BENCH_KEY: 'x',
        LOG_LEVEL: 'warn',
      });
      url = `http://127.0.0.1:${port}`;
      await waitHttp(`${url}/healthz`);
    }
    for (const style of values.styles.split(',')) {
      provider.reset();
      const began = performance.now();
      const { latencies, served, marks } = await runSessions(style, url, MODEL[style]);
      const b = books(provider.log(), style);
      rows.push({
        style,
        situation,
        arm,
        ...b,
        served: served / (S * T),
        p50: pct(latencies, 50),
        p99: pct(latencies, 99),
        seconds: (performance.now() - began) / 1000,
        marks,
      });
      const r = rows[rows.length - 1];
      console.log(
        `${style.padEnd(6)} ${situation.padEnd(5)} ${arm.padEnd(8)} cached ${(r.cachedShare * 100).toFixed(1).padStart(5)}%  $${r.costPerSession.toFixed(4)}/session  ${r.accountsPerSession.toFixed(2)} accounts/session  served ${(r.served * 100).toFixed(1)}%  p50 ${r.p50.toFixed(0)} ms  p99 ${r.p99.toFixed(0)} ms  (${r.seconds.toFixed(1)} s)${arm === 'ideal' ? '' : `  warm/moved/cold ${marks.warm}/${marks.moved}/${marks.cold}`}`,
      );
    }
    if (gateway) await stop(gateway);
  }
  await provider.close();
}

console.log('\nagainst the ideal (same style): cached share ratio, cost ratio; p99 against the ideal in the room situation');
for (const r of rows.filter((x) => x.arm !== 'ideal')) {
  const ideal = rows.find((x) => x.arm === 'ideal' && x.style === r.style && x.situation === r.situation);
  const calm = rows.find((x) => x.arm === 'ideal' && x.style === r.style);
  if (!ideal) continue;
  console.log(
    `${r.style.padEnd(6)} ${r.situation.padEnd(5)} ${r.arm.padEnd(8)} cached ${(r.cachedShare / ideal.cachedShare).toFixed(3)}x  cost ${(r.costPerSession / ideal.costPerSession).toFixed(2)}x  p99 ${(r.p99 / calm.p99).toFixed(2)}x`,
  );
}
