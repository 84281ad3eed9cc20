// A fake provider whose accounts each keep their own prompt cache, for `npm run bench:cache`.
// It is NOT the gateway's simulator and never reads the gateway's config: its caps, prices and
// cache rules come from its own options, so a gateway measured against it has to keep sessions
// warm by what it sees.
//
// Accounts are path prefixes: http://127.0.0.1:<port>/<account>/v1/{chat/completions,responses,messages}.
// Each account takes `cap` calls in flight (its own option; `ideal` takes any number) and
// answers a call past that 429 with `retry-after: 1`, in the shape of the API called.
//
// The cache rules, per account, from the providers' docs:
// - OpenAI (chat completions, Responses): automatic for prompts of 1,024 tokens or more; the
//   longest prefix seen before on this account is read from cache (platform.openai.com/docs/
//   guides/prompt-caching). Simplified: prefixes end at block boundaries (a tool list, the
//   instructions, one message) rather than every 128 tokens.
// - Anthropic (Messages): only at `cache_control` breakpoints (at most 4); a breakpoint reads
//   the longest cached prefix ending at it or up to 20 blocks before it, and writes the prefix
//   up to the last breakpoint; a prefix under 1,024 tokens is not cached (docs.anthropic.com/
//   en/docs/build-with-claude/prompt-caching). Blocks are tools, system blocks, content blocks.
// - Entries live 5 minutes after their last use.
// Tokens are characters / 4, counted the same way for every arm.
//
// Latency: 120 ms + 20 µs per uncached input token + 2 µs per cached one, then the answer.
// `stream: true` is answered in each API's SSE shapes (scripts/bench/cache-sse.mjs) over the
// same total time, like a model: the first events (usage on Messages' message_start, the first
// text delta) after 20 ms + the per-token part (the prefill), the other text deltas spread over
// the remaining 100 ms (the generation); the account's place is held to the last event.
// The answer is derived from the prompt, so every arm's conversations grow identically.
//
// GET /log: every served call {account, api, session, input, cached, written}; POST /reset clears caches and log.
import { createHash } from 'node:crypto';
import { createServer } from 'node:http';
import { responsesUsage, sseAnswer } from './cache-sse.mjs';

const TTL_MS = 5 * 60_000;
const MIN_CACHED = 1024;
const LOOKBACK = 20;
const FIRST_MS = 20; // before the first token, besides the prefill
const GEN_MS = 100; // from the first token to the last

const tokens = (s) => Math.ceil(s.length / 4);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const text = (c) =>
  typeof c === 'string'
    ? c
    : Array.isArray(c)
      ? c.map((p) => (typeof p === 'string' ? p : (p?.text ?? JSON.stringify(p)))).join('\n')
      : JSON.stringify(c ?? '');

/** The prompt as blocks {text, mark} in the order the provider caches it (tools, system, messages). */
function blocksOf(api, body) {
  const out = [];
  if (api === 'messages') {
    for (const t of body.tools ?? []) out.push({ text: JSON.stringify({ ...t, cache_control: undefined }), mark: !!t.cache_control });
    const system = typeof body.system === 'string' ? [{ type: 'text', text: body.system }] : (body.system ?? []);
    for (const b of system) out.push({ text: `system\n${b.text}`, mark: !!b.cache_control });
    for (const m of body.messages ?? []) {
      const parts = typeof m.content === 'string' ? [{ type: 'text', text: m.content }] : m.content;
      for (const p of parts) out.push({ text: `${m.role}\n${p.text ?? JSON.stringify({ ...p, cache_control: undefined })}`, mark: !!p.cache_control });
    }
    return out;
  }
  if (body.tools?.length) out.push({ text: JSON.stringify(body.tools) });
  if (api === 'responses') {
    if (body.instructions) out.push({ text: `system\n${body.instructions}` });
    const input = typeof body.input === 'string' ? [{ role: 'user', content: body.input }] : (body.input ?? []);
    for (const item of input) out.push({ text: `${item.role ?? item.type}\n${text(item.content ?? item)}` });
    return out;
  }
  for (const m of body.messages ?? []) out.push({ text: `${m.role}\n${text(m.content)}` });
  return out;
}

/** One account's cache: prefix hash -> expiry. */
class Cache {
  entries = new Map();
  has(h, now) {
    const e = this.entries.get(h);
    if (e === undefined || e < now) return false;
    this.entries.set(h, now + TTL_MS);
    return true;
  }
  put(h, now) {
    this.entries.set(h, now + TTL_MS);
  }
}

/** Cumulative tokens and prefix hashes of `blocks`. */
function prefixes(blocks) {
  let h = '';
  let n = 0;
  return blocks.map((b) => {
    h = createHash('sha1').update(h).update(b.text).digest('hex');
    n += tokens(b.text);
    return { hash: h, total: n, mark: !!b.mark };
  });
}

/** {input, cached, written} for one call on `cache`, by the rules of `api`; the cache is updated. */
export function cacheCall(cache, api, blocks, now = Date.now()) {
  const p = prefixes(blocks);
  const input = p.length ? p[p.length - 1].total : 0;
  if (api !== 'messages') {
    let cached = 0;
    for (let i = p.length - 1; i >= 0; i--) {
      if (p[i].total >= MIN_CACHED && cache.has(p[i].hash, now)) {
        cached = p[i].total;
        break;
      }
    }
    if (input >= MIN_CACHED) for (const x of p) if (x.total >= MIN_CACHED) cache.put(x.hash, now);
    return { input, cached, written: 0 };
  }
  const marks = p
    .map((x, i) => (x.mark ? i : -1))
    .filter((i) => i >= 0)
    .slice(-4);
  if (marks.length === 0) return { input, cached: 0, written: 0 };
  let cached = 0;
  for (const m of marks) {
    for (let i = m; i >= Math.max(0, m - LOOKBACK); i--) {
      if (p[i].total > cached && p[i].total >= MIN_CACHED && cache.has(p[i].hash, now)) {
        cached = p[i].total;
        break;
      }
    }
  }
  const last = p[marks[marks.length - 1]];
  let written = 0;
  if (last.total >= MIN_CACHED && last.total > cached) {
    written = last.total - cached;
    for (const m of marks) if (p[m].total >= MIN_CACHED) cache.put(p[m].hash, now);
  }
  return { input, cached, written };
}

function answerBody(api, body, usage, reply) {
  const model = String(body.model ?? 'm');
  const id = createHash('sha1').update(reply).digest('hex').slice(0, 16);
  const uncached = usage.input - usage.cached - usage.written;
  const out = tokens(reply);
  if (api === 'messages') {
    return {
      id: `msg_${id}`,
      type: 'message',
      role: 'assistant',
      model,
      content: [{ type: 'text', text: reply }],
      stop_reason: 'end_turn',
      stop_sequence: null,
      usage: { input_tokens: uncached, cache_creation_input_tokens: usage.written, cache_read_input_tokens: usage.cached, output_tokens: out },
    };
  }
  if (api === 'responses') {
    return {
      id: `resp_${id}`,
      object: 'response',
      created_at: Math.floor(Date.now() / 1000),
      status: 'completed',
      model,
      output: [{ type: 'message', id: `msg_${id}`, status: 'completed', role: 'assistant', content: [{ type: 'output_text', text: reply, annotations: [] }] }],
      usage: responsesUsage(usage, out),
    };
  }
  return {
    id: `chatcmpl-${id}`,
    object: 'chat.completion',
    created: Math.floor(Date.now() / 1000),
    model,
    choices: [{ index: 0, message: { role: 'assistant', content: reply }, finish_reason: 'stop' }],
    usage: { prompt_tokens: usage.input, completion_tokens: out, total_tokens: usage.input + out, prompt_tokens_details: { cached_tokens: usage.cached } },
  };
}

const throttled = (api) =>
  api === 'messages'
    ? { type: 'error', error: { type: 'rate_limit_error', message: 'Number of concurrent connections has exceeded your rate limit.' } }
    : { error: { message: 'Rate limit reached for requests', type: 'requests', param: null, code: 'rate_limit_exceeded' } };

/**
 * Starts the provider. `caps`: account -> calls it takes at once (an account not listed takes any number).
 * @returns {{ port, log(): object[], reset(): void, close(): Promise<void> }}
 */
export async function startCacheProvider({ caps, replyChars = 1600 }) {
  const caches = new Map();
  const inFlight = new Map();
  let log = [];
  const server = createServer((req, res) => {
    const m = /^\/([\w-]+)\/v1\/(chat\/completions|responses|messages)$/.exec(req.url ?? '');
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', async () => {
      if (!m || req.method !== 'POST') return void res.writeHead(404).end();
      const [, account, path] = m;
      const api = path === 'messages' ? 'messages' : path === 'responses' ? 'responses' : 'chat';
      const cap = caps[account] ?? Infinity;
      const now = inFlight.get(account) ?? 0;
      if (now >= cap) {
        res.writeHead(429, { 'content-type': 'application/json', 'retry-after': '1' });
        return void res.end(JSON.stringify(throttled(api)));
      }
      inFlight.set(account, now + 1);
      try {
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
        if (!caches.has(account)) caches.set(account, new Cache());
        const blocks = blocksOf(api, body);
        const usage = cacheCall(caches.get(account), api, blocks);
        const session = /session (\S+)/.exec(blocks.map((b) => b.text).join('\n'))?.[1] ?? null;
        log.push({ account, api, session, ...usage, at: Date.now() });
        const prefillMs = (usage.input - usage.cached) * 0.02 + usage.cached * 0.002;
        const seed = createHash('sha256')
          .update(blocks.map((b) => b.text).join('\u0000'))
          .digest('hex');
        const reply =
          `reply ${seed.slice(0, 12)} ` + 'the change touches three files and the tests pass; '.repeat(Math.ceil(replyChars / 52)).slice(0, replyChars);
        if (body.stream === true) {
          const began = Date.now();
          await sleep(FIRST_MS + prefillMs);
          const sse = sseAnswer(api, body, usage, reply, tokens(reply));
          res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
          res.write(sse.head);
          const end = began + FIRST_MS + prefillMs + GEN_MS;
          for (let i = 0; i < sse.deltas.length; i++) {
            await sleep((end - Date.now()) / (sse.deltas.length - i));
            res.write(i === sse.deltas.length - 1 ? sse.deltas[i] + sse.tail : sse.deltas[i]);
          }
          if (sse.deltas.length === 0) res.write(sse.tail);
          return void res.end();
        }
        await sleep(FIRST_MS + prefillMs + GEN_MS);
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify(answerBody(api, body, usage, reply)));
      } catch (err) {
        res.writeHead(400, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { message: String(err), type: 'invalid_request_error' } }));
      } finally {
        inFlight.set(account, (inFlight.get(account) ?? 1) - 1);
      }
    });
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  return {
    port: server.address().port,
    log: () => log,
    reset: () => {
      caches.clear();
      log = [];
    },
    close: () => new Promise((r) => server.close(r)),
  };
}
