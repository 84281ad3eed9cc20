/**
 * A long model name cannot stall the gateway: a 384 KB name that almost matches a glob gets
 * its 400 (over 256 characters: refused before any glob is tried, pipeline/select.ts) while
 * a stream to another client goes on at its own pace. (A glob compiled to a regex once
 * backtracked on such a name for seconds, holding every request; globs now match in time
 * linear in the name, config/aliases.ts, util/glob.ts.)
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { hashKey } from '../../src/auth/keys.js';
import { FakeUpstream } from '../helpers/fake-upstream.js';
import { CLIENT_KEY, closeAll, startGateway, type TestGateway } from '../helpers/gateway.js';

/** Chunks of the fake stream and the pause before each (ms): a stream of about a second. */
const CHUNKS = 40;
const PACE_MS = 25;

function chunk(delta: Record<string, unknown>, finish: string | null = null): string {
  return `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
}

/** Streams a chat completion through the gateway; resolves with its duration (ms) once the last byte is in. */
async function streamMs(gw: TestGateway, onFirstByte: () => void = () => {}): Promise<number> {
  const t0 = performance.now();
  const res = await fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${CLIENT_KEY}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'served', stream: true, messages: [{ role: 'user', content: 'hi' }] }),
  });
  assert.equal(res.status, 200);
  let first = true;
  let text = '';
  for await (const piece of res.body!) {
    text += Buffer.from(piece).toString('utf8');
    if (first) onFirstByte();
    first = false;
  }
  assert.ok(text.includes('[DONE]'), `the stream ended normally: ${text.slice(-300)}`);
  return performance.now() - t0;
}

describe('a 384 KB model name that almost matches an alias glob', () => {
  const upstream = new FakeUpstream();
  let gw: TestGateway;
  before(async () => {
    await upstream.start();
    upstream.on(() => ({
      status: 200,
      headers: { 'content-type': 'text/event-stream' },
      steps: [...Array.from({ length: CHUNKS }, (_, i) => [{ delayMs: PACE_MS }, chunk({ content: `${i} ` })]).flat(), chunk({}, 'stop'), 'data: [DONE]\n\n'],
    }));
    gw = await startGateway(`
server: { log_level: warn }
upstreams:
  - { id: fake, provider: openai-compatible, base_url: "${upstream.url}/v1", api_key: "\${TEST_UPSTREAM_KEY}" }
models:
  - name: served
    price: { input: 1, output: 1 }
    targets: [{ upstream: fake, model: m }]
  - name: codex-preview
    aliases: ["gpt-5*-codex*-preview", "claude-*-4-6-*-preview"]
    price: { input: 1, output: 1 }
    targets: [{ upstream: fake, model: m }]
keys:
  - { name: t, key_sha256: ${hashKey(CLIENT_KEY)} }
`);
  });
  after(() => closeAll(gw, upstream));

  test('gets its 400 while a stream to another client keeps its pace', async () => {
    await streamMs(gw); // warm-up: the first stream pays for connections and compilation
    const alone = await streamMs(gw);
    const name = `gpt-5${'-codex'.repeat(Math.ceil((384 * 1024) / 6))}-previeX`;
    let notFound: Promise<{ status: number; code: unknown; at: number }> | undefined;
    let streamEnd = 0;
    const shared = await streamMs(gw, () => {
      notFound = fetch(`${gw.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${CLIENT_KEY}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: name, messages: [{ role: 'user', content: 'hi' }] }),
      }).then(async (r) => ({ status: r.status, code: ((await r.json()) as { error: { code: unknown } }).error.code, at: performance.now() }));
    });
    streamEnd = performance.now();
    const r = await notFound!;
    // Refused for its length now (pipeline/select.ts) before any glob is tried.
    assert.equal(r.status, 400);
    assert.equal(r.code, 'string_above_max_length');
    assert.ok(r.at < streamEnd, 'the 400 came while the stream was still being served');
    // Twice the stream's own time: room for a loaded machine, far below a held event loop.
    assert.ok(shared < 2 * alone, `the stream took ${shared.toFixed(0)} ms beside the long name, ${alone.toFixed(0)} ms alone`);
  });
});
