#!/usr/bin/env node
// A fake OpenAI-compatible provider with several accounts that throttle like real ones, for
// the burst benchmark (scripts/bench-clustering.mjs) and the capacity tests. It is NOT the
// gateway's simulator and never reads the gateway's config: every limit here comes from
// this process's own flags (or the options of `startThrottledProvider`), so a gateway
// measured against it has to find the limits out.
//
//   node scripts/bench/throttled-provider.mjs --port 9300 --accounts 3 --cap 4 --shape 429
//   node scripts/bench/throttled-provider.mjs --port 9300 --accounts 3 --caps 3,4,6 --shape stall
//
// Accounts are path prefixes: http://127.0.0.1:<port>/acct-1/v1/chat/completions …
// Each account counts its own calls in flight. A call that arrives while `cap` calls are
// already in flight on its account is throttled, by shape:
//   429    answered 429 `rate_limit_exceeded` (OpenAI's body) with `retry-after: <s>`;
//   stall  accepted, but its first event comes `stall_ms` late (and it counts in flight).
// A served stream: a role chunk, `reasoning_events` reasoning deltas, then a tool call (when
// the request has tools) or `content_events` content deltas, a finish chunk, the usage chunk
// (with include_usage), `[DONE]`; `ttft_ms` before the first event, `event_ms` between events.
//
// GET /stats: per account {requests, throttled, stalled, served, peak_in_flight, in_flight, cap};
// POST /stats/reset; POST /cap {"account": "acct-1" | "*", "cap": n} changes a cap live.
import { createServer } from 'node:http';
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';

const DEFAULTS = {
  accounts: 3,
  cap: 4,
  shape: '429',
  stall_ms: 4000,
  retry_after_s: 1,
  ttft_ms: 300,
  event_ms: 25,
  reasoning_events: 24,
  content_events: 16,
};

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function chunk(id, model, delta, finish = null) {
  return `data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created: Math.floor(Date.now() / 1000), model, choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }] })}\n\n`;
}

function planEvents(o, body, id) {
  const model = String(body.model ?? 'mock');
  const out = [chunk(id, model, { role: 'assistant', content: '' })];
  const reasoning = body.reasoning_effort !== undefined && body.reasoning_effort !== null;
  if (reasoning) for (let i = 0; i < o.reasoning_events; i++) out.push(chunk(id, model, { reasoning_content: `thought ${i} ` }));
  const tools = Array.isArray(body.tools) && body.tools.length > 0;
  if (tools) {
    const name = String(body.tools[0]?.function?.name ?? 'tool');
    out.push(chunk(id, model, { tool_calls: [{ index: 0, id: `call_${id}`, type: 'function', function: { name, arguments: '' } }] }));
    for (const part of ['{"path":', '"src/', 'main.ts"}']) out.push(chunk(id, model, { tool_calls: [{ index: 0, function: { arguments: part } }] }));
    out.push(chunk(id, model, {}, 'tool_calls'));
  } else {
    for (let i = 0; i < o.content_events; i++) out.push(chunk(id, model, { content: `word${i} ` }));
    out.push(chunk(id, model, {}, 'stop'));
  }
  const completion = out.length * 2;
  if (body.stream_options?.include_usage === true) {
    out.push(
      `data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created: Math.floor(Date.now() / 1000), model, choices: [], usage: { prompt_tokens: 200, completion_tokens: completion, total_tokens: 200 + completion, completion_tokens_details: { reasoning_tokens: reasoning ? o.reasoning_events * 2 : 0 } } })}\n\n`,
    );
  }
  out.push('data: [DONE]\n\n');
  return out;
}

/**
 * Starts the provider on `port` (0: any free port). Options as DEFAULTS (snake_case) plus
 * `port`, `host`. Returns { url, accountUrl(i), stats(), reset(), setCap(account|'*', n), close() }.
 */
export async function startThrottledProvider(options = {}) {
  const o = { ...DEFAULTS, ...options };
  const accounts = new Map();
  // `caps` ("3,4,6" or [3, 4, 6]) gives each account its own cap; accounts past its end take `cap`.
  const caps = (Array.isArray(o.caps) ? o.caps : String(o.caps ?? '').split(','))
    .filter((c) => String(c).trim() !== '')
    .map(Number)
    .filter((n) => Number.isInteger(n) && n >= 0);
  for (let i = 1; i <= o.accounts; i++)
    accounts.set(`acct-${i}`, { cap: caps[i - 1] ?? o.cap, inFlight: 0, requests: 0, throttled: 0, stalled: 0, served: 0, peak: 0 });
  const sockets = new Set();
  let seq = 0;

  const server = createServer((req, res) => {
    const url = req.url ?? '/';
    if (req.method === 'GET' && url === '/stats') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify(
          Object.fromEntries(
            [...accounts].map(([k, a]) => [
              k,
              { requests: a.requests, throttled: a.throttled, stalled: a.stalled, served: a.served, peak_in_flight: a.peak, in_flight: a.inFlight, cap: a.cap },
            ]),
          ),
        ),
      );
      return;
    }
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => void handle(req, res, url, Buffer.concat(chunks).toString('utf8')));
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });

  async function handle(req, res, url, text) {
    if (req.method === 'POST' && url === '/stats/reset') {
      for (const a of accounts.values()) Object.assign(a, { requests: 0, throttled: 0, stalled: 0, served: 0, peak: a.inFlight });
      res.writeHead(204).end();
      return;
    }
    if (req.method === 'POST' && url === '/cap') {
      const { account, cap } = JSON.parse(text);
      for (const [k, a] of accounts) if (account === '*' || account === k) a.cap = cap;
      res.writeHead(204).end();
      return;
    }
    const m = /^\/(acct-\d+)\/v1\/chat\/completions/.exec(url);
    const a = m ? accounts.get(m[1]) : undefined;
    if (!a || req.method !== 'POST') {
      res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":{"message":"not found","type":"invalid_request_error","code":"unknown_url"}}');
      return;
    }
    let body;
    try {
      body = JSON.parse(text);
    } catch {
      res.writeHead(400, { 'content-type': 'application/json' }).end('{"error":{"message":"bad JSON","type":"invalid_request_error"}}');
      return;
    }
    a.requests++;
    const over = a.inFlight >= a.cap;
    if (over && o.shape === '429') {
      a.throttled++;
      res.writeHead(429, { 'content-type': 'application/json', 'retry-after': String(o.retry_after_s) });
      res.end(
        JSON.stringify({
          error: {
            message: `Rate limit reached: more than ${a.cap} requests in flight on this account. Please try again in ${o.retry_after_s}s.`,
            type: 'requests',
            param: null,
            code: 'rate_limit_exceeded',
          },
        }),
      );
      return;
    }
    a.inFlight++;
    a.peak = Math.max(a.peak, a.inFlight);
    if (over) a.stalled++;
    let open = true;
    res.on('close', () => {
      if (open) {
        open = false;
        a.inFlight--;
      }
    });
    const id = `chatcmpl-${++seq}`;
    const events = planEvents(o, body, id);
    try {
      // A stream's headers go out at once (as providers do); its first event is what is late.
      if (body.stream === true) res.writeHead(200, { 'content-type': 'text/event-stream' });
      await sleep(o.ttft_ms + (over ? o.stall_ms : 0));
      if (body.stream !== true) {
        const content = events.length;
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(
          JSON.stringify({
            id,
            object: 'chat.completion',
            created: Math.floor(Date.now() / 1000),
            model: body.model,
            choices: [{ index: 0, message: { role: 'assistant', content: `answer of ${content} events` }, finish_reason: 'stop' }],
            usage: { prompt_tokens: 200, completion_tokens: content, total_tokens: 200 + content },
          }),
        );
      } else {
        for (let i = 0; i < events.length && !res.destroyed; i++) {
          if (i > 0 && o.event_ms > 0) await sleep(o.event_ms);
          res.write(events[i]);
        }
        res.end();
      }
      a.served++;
    } finally {
      if (open) {
        open = false;
        a.inFlight--;
      }
    }
  }

  await new Promise((resolve) => server.listen(o.port ?? 0, o.host ?? '127.0.0.1', resolve));
  const { port } = server.address();
  const url = `http://127.0.0.1:${port}`;
  return {
    url,
    accountUrl: (i) => `${url}/acct-${i}/v1`,
    stats: () =>
      Object.fromEntries(
        [...accounts].map(([k, a]) => [
          k,
          { requests: a.requests, throttled: a.throttled, stalled: a.stalled, served: a.served, peak_in_flight: a.peak, in_flight: a.inFlight, cap: a.cap },
        ]),
      ),
    reset: () => {
      for (const a of accounts.values()) Object.assign(a, { requests: 0, throttled: 0, stalled: 0, served: 0, peak: a.inFlight });
    },
    setCap: (account, cap) => {
      for (const [k, a] of accounts) if (account === '*' || account === k) a.cap = cap;
    },
    close: () =>
      new Promise((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { values: v } = parseArgs({
    options: {
      port: { type: 'string', default: '9300' },
      host: { type: 'string', default: '127.0.0.1' },
      accounts: { type: 'string', default: String(DEFAULTS.accounts) },
      cap: { type: 'string', default: String(DEFAULTS.cap) },
      caps: { type: 'string', default: '' },
      shape: { type: 'string', default: DEFAULTS.shape },
      'stall-ms': { type: 'string', default: String(DEFAULTS.stall_ms) },
      'retry-after': { type: 'string', default: String(DEFAULTS.retry_after_s) },
      'ttft-ms': { type: 'string', default: String(DEFAULTS.ttft_ms) },
      'event-ms': { type: 'string', default: String(DEFAULTS.event_ms) },
    },
  });
  if (v.shape !== '429' && v.shape !== 'stall') throw new Error('--shape is 429 or stall');
  const p = await startThrottledProvider({
    port: Number(v.port),
    host: v.host,
    accounts: Number(v.accounts),
    cap: Number(v.cap),
    caps: v.caps,
    shape: v.shape,
    stall_ms: Number(v['stall-ms']),
    retry_after_s: Number(v['retry-after']),
    ttft_ms: Number(v['ttft-ms']),
    event_ms: Number(v['event-ms']),
  });
  process.stdout.write(
    `throttled provider on ${p.url} (accounts acct-1..acct-${v.accounts}, caps ${Object.values(p.stats())
      .map((a) => a.cap)
      .join('/')}, shape ${v.shape})\n`,
  );
  const stop = () => p.close().then(() => process.exit(0));
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}
