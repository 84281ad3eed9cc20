/**
 * Large prompts never freeze the event loop (issue 14: a 27 MB prompt on a key with a `tpm`
 * limit stalled every other request on the replica for 1.5 s, and a client abandoning a
 * stream with one for 2 s, while the tokenizer counted it on the main thread).
 */
import assert from 'node:assert/strict';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { after, before, describe, test } from 'node:test';
import { gzipSync } from 'node:zlib';
import { hashKey } from '../../src/auth/keys.js';
import { CLIENT_KEY, closeAll, startWithUpstream, testConfigYaml, waitFor, type GatewayWithUpstream } from '../helpers/gateway.js';

const TPM_KEY = 'sk-test-tpm-large-0123456789abcdef';
const MB = 1024 * 1024;

/** About `chars` characters of varied words (the tokenizer's slow case is varied text). */
function prompt(chars: number): string {
  const words = ['alpha', 'beta', 'gamma', 'delta', 'epsilon', 'zeta', 'eta', 'theta', 'iota', 'kappa', 'lambda', 'mu'];
  const out: string[] = [];
  let n = 0;
  for (let i = 0; n < chars; i++) {
    const w = `${words[(i * 7 + (i >> 3)) % words.length]}${i % 97}`;
    out.push(w);
    n += w.length + 1;
  }
  return out.join(' ');
}

function chunk(content: string, finish: string | null = null): string {
  return `data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta: content ? { content } : {}, finish_reason: finish }] })}\n\n`;
}

/** The longest the event loop was blocked (ms) while `run` ran. */
async function worstLoopDelay(run: () => Promise<void>): Promise<number> {
  const h = monitorEventLoopDelay({ resolution: 10 });
  h.enable();
  try {
    await run();
  } finally {
    h.disable();
  }
  return h.max / 1e6;
}

describe('large prompts on a key with a token limit', () => {
  let g: GatewayWithUpstream;
  const big = prompt(27 * MB);

  before(async () => {
    const yaml = (url: string) =>
      `${testConfigYaml(url)}  - name: team-tpm\n    key_sha256: ${hashKey(TPM_KEY)}\n    models: ["*"]\n    limits: { tpm: 100000000 }\n`;
    g = await startWithUpstream(yaml);
    g.upstream.on((req) =>
      req.json?.['stream'] === true
        ? { status: 200, steps: [chunk('one'), { delayMs: 3000 }, chunk('two', 'stop'), 'data: [DONE]\n\n'] }
        : {
            status: 200,
            body: {
              id: 'c',
              object: 'chat.completion',
              created: 1,
              model: 'm',
              choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }],
            },
          },
    );
  });
  after(() => closeAll(g?.gw, g?.upstream));

  const send = (stream: boolean, signal?: AbortSignal, key = TPM_KEY) =>
    fetch(`${g.gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'gpt-test', stream, messages: [{ role: 'user', content: big }] }),
      signal,
    });

  test('a 27 MB prompt is reserved against tpm without blocking the loop for long', async () => {
    // The same call on a key without tpm (nothing counts its tokens): what parsing and
    // relaying 27 MB costs this Node on this machine (~200 ms on Node 20, ~850 ms on 24.21).
    const base = await worstLoopDelay(async () => {
      const res = await send(false, undefined, CLIENT_KEY);
      assert.equal(res.status, 200);
      await res.arrayBuffer();
    });
    let tokens = 0;
    const worst = await worstLoopDelay(async () => {
      const res = await send(false);
      assert.equal(res.status, 200);
      await res.arrayBuffer();
      tokens = Number(res.headers.get('x-ratelimit-limit-tokens')) - Number(res.headers.get('x-ratelimit-remaining-tokens'));
    });
    // Counting all of it with the tokenizer added over a second; the bounded count adds little.
    assert.ok(worst < base + 400, `the event loop was blocked for ${worst.toFixed(0)} ms (${base.toFixed(0)} ms without a tpm limit)`);
    assert.ok(tokens > 27 * MB * 0.2, `the reservation was settled to the prompt's size (${tokens} tokens)`);
  });

  test('a client abandoning a stream with a 27 MB prompt does not block the loop either', async () => {
    const abandon = (key?: string) => async () => {
      const n = g.gw.finished().length;
      const ac = new AbortController();
      const res = await send(true, ac.signal, key);
      const reader = res.body!.getReader();
      await reader.read();
      ac.abort();
      await reader.cancel().catch(() => {});
      await waitFor(() => g.gw.finished().length > n, 5000);
    };
    // Beside the same on a key without tpm: what this machine, however loaded, takes for it.
    const base = await worstLoopDelay(abandon(CLIENT_KEY));
    const worst = await worstLoopDelay(abandon());
    assert.ok(worst < base + 400, `the event loop was blocked for ${worst.toFixed(0)} ms (${base.toFixed(0)} ms without a tpm limit)`);
    const line = g.gw.finished().at(-1)!;
    assert.equal(line['outcome'], 'client_aborted');
    const input = (line['tokens'] as { input: number }).input;
    assert.ok(input > 27 * MB * 0.2, `the abandoned stream's prompt was estimated (${input} tokens)`);
    assert.equal(line['tokens_estimated'], true);
  });
});

describe('large bodies at once are bounded by server.max_body_bytes_in_flight', () => {
  let g: GatewayWithUpstream;
  const big = JSON.stringify({ model: 'gpt-test', messages: [{ role: 'user', content: prompt(27 * MB) }] });
  const waiting: (() => void)[] = [];
  const release = () => waiting.shift()?.();

  before(async () => {
    g = await startWithUpstream((url) => testConfigYaml(url, { server: `  max_body_bytes_in_flight: ${40 * MB}` }));
    g.upstream.on(async () => {
      await new Promise<void>((r) => waiting.push(r));
      return {
        status: 200,
        body: {
          id: 'c',
          object: 'chat.completion',
          created: 1,
          model: 'm',
          choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }],
        },
      };
    });
  });
  after(() => closeAll(g?.gw, g?.upstream));

  const post = (body: string) =>
    fetch(`${g.gw.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${CLIENT_KEY}`, 'content-type': 'application/json' }, body });

  test('a second 27 MB body while one is in flight gets 503 server_overloaded before it is read; small bodies and later large ones are served', async () => {
    const first = post(big);
    await waitFor(() => g.upstream.requests.length === 1, 10_000, 'the first body reached the upstream');
    const second = await post(big).catch((e: unknown) => e);
    assert.ok(second instanceof Response, `the client reads the refusal: ${String(second)}`);
    assert.equal(second.status, 503);
    assert.equal(second.headers.get('retry-after'), '1');
    const body = (await second.json()) as { error: { code: string; message: string } };
    assert.equal(body.error.code, 'server_overloaded');
    assert.match(body.error.message, /max_body_bytes_in_flight/);
    assert.equal(g.upstream.requests.length, 1, 'the refused body never went upstream');
    // A small request is not held back by the large one.
    const small = post(JSON.stringify({ model: 'gpt-test', messages: [{ role: 'user', content: 'hi' }] }));
    await waitFor(() => g.upstream.requests.length === 2, 5000, 'the small request reached the upstream');
    release();
    assert.equal((await first).status, 200);
    release();
    assert.equal((await small).status, 200);
    // Once the first is done, another large body fits again.
    const again = post(big);
    await waitFor(() => g.upstream.requests.length === 3, 10_000, 'the next large body reached the upstream');
    release();
    assert.equal((await again).status, 200);
    assert.match(await g.gw.metricsText(), /switchyard_body_guard_refused_total 1\n/);
  });

  test('a gzip body (1 MB on the wire, 27 MB decoded) and a chunked one with no Content-Length are metered as they are read: 503 past the cap too', async () => {
    const first = post(big);
    const before = g.upstream.requests.length;
    await waitFor(() => g.upstream.requests.length === before + 1, 10_000, 'the first body reached the upstream');
    const headers = { authorization: `Bearer ${CLIENT_KEY}`, 'content-type': 'application/json' };
    const packed = gzipSync(big);
    assert.ok(packed.length < 2 * MB, `${packed.length} bytes gzipped`);
    const gz = await fetch(`${g.gw.url}/v1/chat/completions`, { method: 'POST', headers: { ...headers, 'content-encoding': 'gzip' }, body: packed }).catch(
      (e: unknown) => e,
    );
    const bytes = Buffer.from(big);
    const chunks = new ReadableStream<Uint8Array>({
      start(c) {
        for (let i = 0; i < bytes.length; i += MB) c.enqueue(bytes.subarray(i, i + MB));
        c.close();
      },
    });
    const chunked = await fetch(`${g.gw.url}/v1/chat/completions`, { method: 'POST', headers, body: chunks, duplex: 'half' } as RequestInit).catch(
      (e: unknown) => e,
    );
    for (const [name, r] of [
      ['gzip', gz],
      ['chunked', chunked],
    ] as const) {
      assert.ok(r instanceof Response, `${name}: the client reads the refusal: ${String(r)}`);
      assert.equal(r.status, 503, `${name}: ${await r.clone().text()}`);
      assert.equal(r.headers.get('retry-after'), '1');
      assert.match(((await r.json()) as { error: { message: string } }).error.message, /max_body_bytes_in_flight/);
    }
    assert.equal(g.upstream.requests.length, before + 1, 'neither refused body went upstream');
    release();
    assert.equal((await first).status, 200);
    // With nothing else in flight, the same gzip body is decoded and served whole.
    const alone = fetch(`${g.gw.url}/v1/chat/completions`, { method: 'POST', headers: { ...headers, 'content-encoding': 'gzip' }, body: packed });
    await waitFor(() => g.upstream.requests.length === before + 2, 10_000, 'the gzip body reached the upstream');
    const sent = (JSON.parse(big) as { messages: { content: string }[] }).messages[0]!.content;
    assert.equal((g.upstream.requests.at(-1)!.json!['messages'] as { content: string }[])[0]!.content, sent, 'the prompt arrived whole');
    release();
    assert.equal((await alone).status, 200);
  });
});
