#!/usr/bin/env node
// The soak's fake provider account (run as its own process): an OpenAI-compatible
// /v1/chat/completions that answers JSON or SSE (with a usage chunk) and injects faults at
// its own rates, from its own flags, never from the gateway's config:
//   --port N --seed N --reset 0.01 --stall 0.01 --r429 0.01 --r500 0.01 --stall-ms 3000
// reset: the socket is destroyed before any byte; stall: a stream stops after its first
// chunk for stall-ms (a JSON answer waits stall-ms before its headers); 429 comes with
// Retry-After: 1. Counts of what it did go to stdout as one JSON line on SIGTERM.
import { createServer } from 'node:http';
import { parseArgs } from 'node:util';

const { values } = parseArgs({
  options: {
    port: { type: 'string', default: '0' },
    seed: { type: 'string', default: '1' },
    reset: { type: 'string', default: '0.01' },
    stall: { type: 'string', default: '0.01' },
    r429: { type: 'string', default: '0.01' },
    r500: { type: 'string', default: '0.01' },
    'stall-ms': { type: 'string', default: '3000' },
  },
});
const P = { reset: Number(values.reset), stall: Number(values.stall), r429: Number(values.r429), r500: Number(values.r500) };
const STALL_MS = Number(values['stall-ms']);

// mulberry32: the same faults for the same seed and request order.
let a = Number(values.seed) >>> 0;
const rnd = () => {
  a = (a + 0x6d2b79f5) >>> 0;
  let t = a;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
};

const counts = { requests: 0, ok: 0, reset: 0, stall: 0, r429: 0, r500: 0 };
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const usage = { prompt_tokens: 40, completion_tokens: 12, total_tokens: 52 };
const chunk = (delta, finish = null) =>
  `data: ${JSON.stringify({ id: 'chatcmpl-soak', object: 'chat.completion.chunk', created: 1, model: 'soak-upstream', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;

async function answer(req, res, body) {
  counts.requests++;
  const r = rnd();
  const stream = body?.stream === true;
  if (r < P.reset) {
    counts.reset++;
    req.socket.destroy();
    return;
  }
  if (r < P.reset + P.r429) {
    counts.r429++;
    res.writeHead(429, { 'content-type': 'application/json', 'retry-after': '1' });
    res.end(JSON.stringify({ error: { message: 'Rate limit reached (soak fault).', type: 'requests', param: null, code: 'rate_limit_exceeded' } }));
    return;
  }
  if (r < P.reset + P.r429 + P.r500) {
    counts.r500++;
    res.writeHead(500, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ error: { message: 'The server had an error (soak fault).', type: 'server_error', param: null, code: null } }));
    return;
  }
  const stall = r < P.reset + P.r429 + P.r500 + P.stall;
  if (stall) counts.stall++;
  else counts.ok++;
  if (!stream) {
    await sleep(stall ? STALL_MS : 15);
    if (res.destroyed) return;
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(
      JSON.stringify({
        id: 'chatcmpl-soak',
        object: 'chat.completion',
        created: 1,
        model: 'soak-upstream',
        choices: [{ index: 0, message: { role: 'assistant', content: 'soak answer' }, finish_reason: 'stop' }],
        usage,
      }),
    );
    return;
  }
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  res.write(chunk({ role: 'assistant', content: '' }));
  for (let i = 0; i < 6; i++) {
    if (stall && i === 1) await sleep(STALL_MS);
    else await sleep(3);
    if (res.destroyed) return;
    res.write(chunk({ content: `part ${i} ` }));
  }
  res.write(chunk({}, 'stop'));
  res.write(`data: ${JSON.stringify({ id: 'chatcmpl-soak', object: 'chat.completion.chunk', created: 1, model: 'soak-upstream', choices: [], usage })}\n\n`);
  res.end('data: [DONE]\n\n');
}

const server = createServer((req, res) => {
  const parts = [];
  req.on('data', (c) => parts.push(c));
  req.on('end', () => {
    let body;
    try {
      body = JSON.parse(Buffer.concat(parts).toString('utf8'));
    } catch {
      body = undefined;
    }
    answer(req, res, body).catch(() => res.destroy());
  });
  req.on('error', () => {});
});
server.keepAliveTimeout = 30_000;
server.listen(Number(values.port), '127.0.0.1', () => process.stdout.write(`listening ${server.address().port}\n`));
process.on('SIGTERM', () => {
  process.stdout.write(`${JSON.stringify(counts)}\n`);
  process.exit(0);
});
