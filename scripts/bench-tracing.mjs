#!/usr/bin/env node
// npm run bench:tracing — the CPU the gateway's tracing costs per model call, measured in
// process (so a busy machine moves it far less than an end-to-end run): the built
// dist/tracing code drives N calls of one attempt each, exactly as the pipeline calls it
// (open the call span, open the attempt span, its traceparent, the upstream's status, end
// both with a finished record), with tracing off and with tracing on exporting to a local
// OTLP/HTTP sink (a child process, so its CPU is not counted). The export work (batching,
// protobuf encoding, the HTTP posts) runs in this process and is counted: the run ends with
// a shutdown that flushes every span.
//
//   node scripts/bench-tracing.mjs [--calls 50000] [--rounds 5]
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { performance } from 'node:perf_hooks';
import { setImmediate } from 'node:timers';
import pino from 'pino';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const { values: o } = parseArgs({ options: { calls: { type: 'string', default: '50000' }, rounds: { type: 'string', default: '5' } } });
const CALLS = Number(o.calls);
const ROUNDS = Number(o.rounds);

const { startTracing, TRACING_OFF } = await import(join(root, 'dist', 'tracing', 'index.js'));

// The sink: counts spans by their names' bytes in the protobuf bodies (every span here is named `chat bench-…`).
const SINK = `
const http = require('node:http');
const NAME = Buffer.from('chat bench-');
let spans = 0;
const server = http.createServer((req, res) => {
  if (req.method === 'GET') { res.end(String(spans)); return; }
  const parts = [];
  req.on('error', () => {});
  req.on('data', (c) => parts.push(c));
  req.on('end', () => {
    const body = Buffer.concat(parts);
    for (let i = body.indexOf(NAME); i >= 0; i = body.indexOf(NAME, i + NAME.length)) spans++;
    res.writeHead(200, { 'content-type': 'application/x-protobuf' });
    res.end();
  });
}).listen(0, '127.0.0.1', () => process.stdout.write(server.address().port + '\\n'));
`;
const sink = spawn(process.execPath, ['-e', SINK], { stdio: ['ignore', 'pipe', 'inherit'] });
const [portLine] = await once(sink.stdout, 'data');
const sinkUrl = `http://127.0.0.1:${String(portLine).trim()}`;
const sinkSpans = async () => Number(await (await fetch(`${sinkUrl}/stats`, { headers: { connection: 'close' } })).text());

// What the pipeline hands tracing: an attempt, its provider, the attempt's outcome, the finished record.
const upstream = { id: 'mock', provider: 'openai-compatible', base_url: 'http://127.0.0.1:9/v1' };
const model = { name: 'bench-model' };
const attempt = { target: { upstream, model: 'bench-upstream-model' }, model, number: 1, startedAt: Date.now(), queuedMs: 0, deep: false };
const provider = { genAiProvider: 'openai' };
const usage = { input: 16, cached: 0, output: 20, reasoning: 0 };
const outcome = { kind: 'answered', relayed: { usage, failure: null } };
const headers = { traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01', 'content-type': 'application/json' };
const record = (startedAt) => ({
  requestId: 'req-1',
  api: 'chat',
  key: 'bench',
  model: 'bench-model',
  requestedModel: 'bench-model',
  upstream: 'mock',
  upstreamModel: 'bench-upstream-model',
  stream: false,
  status: 200,
  outcome: 'ok',
  errorClass: null,
  startedAt,
  durationMs: 1,
  ttftMs: null,
  usage,
  usageEstimated: false,
  costUsd: 0.000056,
  attempts: 1,
  fallback: null,
  shed: null,
  tags: {},
});

/** N calls through `tracing`, then its shutdown (every span exported); CPU µs per call (user + system) and wall ms. */
async function run(tracing) {
  const t0 = process.cpuUsage();
  const w0 = performance.now();
  for (let i = 0; i < CALLS; i++) {
    const now = Date.now();
    const call = tracing.modelCall(headers, now, 'chat', 'bench-model');
    const span = call.attempt({ ...attempt, startedAt: now }, provider);
    if (span.headers && !span.headers.traceparent) throw new Error('no traceparent');
    span.responded(200);
    span.end(outcome);
    call.end(record(now));
    // Let the batch processor's timers and the exporter's I/O run, as they would between requests.
    if (i % 256 === 255) await new Promise((r) => setImmediate(r));
  }
  await tracing.shutdown();
  const cpu = process.cpuUsage(t0);
  return { cpuUsPerCall: (cpu.user + cpu.system) / CALLS, wallMs: performance.now() - w0 };
}

const log = pino({ level: 'warn' });
const env = {
  // OTEL_* settings of this shell apply too (e.g. OTEL_EXPORTER_OTLP_PROTOCOL=http/json, OTEL_TRACES_SAMPLER=always_off).
  ...Object.fromEntries(Object.entries(process.env).filter(([k]) => k.startsWith('OTEL_'))),
  OTEL_EXPORTER_OTLP_ENDPOINT: sinkUrl,
  // Large enough that no span is dropped while the loop runs faster than a real gateway could.
  OTEL_BSP_MAX_QUEUE_SIZE: String(CALLS * 2),
};
const results = { off: [], on: [] };
let exported = 0;
for (let r = 0; r < ROUNDS; r++) {
  results.off.push(await run(TRACING_OFF));
  const before = await sinkSpans();
  results.on.push(await run(await startTracing(env, log, 'bench')));
  exported = (await sinkSpans()) - before;
}
sink.kill();

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const row = (name, rs) =>
  `| ${name} | ${median(rs.map((x) => x.cpuUsPerCall)).toFixed(2)} | ${Math.min(...rs.map((x) => x.cpuUsPerCall)).toFixed(2)} | ${Math.max(...rs.map((x) => x.cpuUsPerCall)).toFixed(2)} |`;
process.stdout.write(
  [
    `${CALLS} calls (1 attempt each) per round, ${ROUNDS} rounds, Node ${process.versions.node}; spans exported in the last "on" round: ${exported} of ${2 * CALLS}`,
    '',
    '| tracing | CPU µs per call (median) | min | max |',
    '|---|---:|---:|---:|',
    row('off', results.off),
    row(`on (${env.OTEL_EXPORTER_OTLP_PROTOCOL ?? 'http/protobuf'}, sampler ${env.OTEL_TRACES_SAMPLER ?? 'parentbased_always_on'})`, results.on),
    '',
  ].join('\n'),
);
