/**
 * Behaviours found by a new-user review, each end to end: the real gateway on port 0,
 * scripted fake upstreams on loopback, fetch / raw sockets / the official `openai` client.
 */
import assert from 'node:assert/strict';
import { spawnSync, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { connect, createServer } from 'node:net';
import { dirname, join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { hashKey } from '../../src/auth/keys.js';
import { parseTestConfig } from '../helpers/config.js';
import { FakeUpstream, type ScriptedReply } from '../helpers/fake-upstream.js';
import { CLIENT_KEY, postChat, startGateway, type RawReply, type TestGateway } from '../helpers/gateway.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');

function chunk(content: string, finish: string | null = null): string {
  const c = { id: 'c1', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta: content ? { content } : {}, finish_reason: finish }] };
  return `data: ${JSON.stringify(c)}\n\n`;
}
const okStream = (text: string): ScriptedReply => ({
  status: 200,
  headers: { 'content-type': 'text/event-stream' },
  steps: [chunk(text), chunk('', 'stop'), 'data: [DONE]\n\n'],
});
const okJson = (text: string): ScriptedReply => ({
  status: 200,
  body: { id: 'c', object: 'chat.completion', created: 1, model: 'm', choices: [{ index: 0, message: { role: 'assistant', content: text }, finish_reason: 'stop' }], usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 } },
});

/** Two upstreams a (cheaper) and b serving model `m`; `deep` (reasoning, on a) sheds to `lite` (on b). */
function yaml(a: string, b: string, extra: { routing?: string; server?: string; aMax?: number; threshold?: number; shed?: string } = {}): string {
  return `
server:
  log_level: info
${extra.server ?? ''}
routing:
  strategy: cheap
  max_attempts: 4
  backoff_base_ms: 1
  backoff_cap_ms: 1
  retry_budget: { min_retries: 1000 }
  cooldown: { failures: 1000 }
${extra.routing ?? ''}
upstreams:
  - id: a
    provider: openai-compatible
    base_url: ${a}/v1
    api_key: \${TEST_UPSTREAM_KEY}
    max_concurrency: ${extra.aMax ?? 32}
    window: { seconds: 10, threshold: ${extra.threshold ?? 6} }
  - id: b
    provider: openai-compatible
    base_url: ${b}/v1
    api_key: \${TEST_UPSTREAM_KEY}
models:
  - name: m
    price: { input: 1, output: 1 }
    targets:
      - { upstream: a, model: m-a, price: { input: 1, output: 1 } }
      - { upstream: b, model: m-b, price: { input: 2, output: 2 } }
  - name: deep
    reasoning: true
    price: { input: 1, output: 1 }
    ${extra.shed ?? 'shed: { policy: downgrade, fallback: lite }'}
    fallbacks: [lite]
    targets:
      - { upstream: a, model: deep-a }
  - name: lite
    price: { input: 1, output: 1 }
    targets:
      - { upstream: b, model: lite-b }
keys:
  - name: team-a
    key_sha256: ${hashKey(CLIENT_KEY)}
    models: ["*"]
`;
}

function post(gw: TestGateway, body: Record<string, unknown>): Promise<RawReply> {
  return postChat(gw, { messages: [{ role: 'user', content: 'hi' }], ...body });
}

describe('failures before the first token', () => {
  let a: FakeUpstream;
  let b: FakeUpstream;
  let gw: TestGateway;
  before(async () => {
    a = await new FakeUpstream().start();
    b = await new FakeUpstream().start();
    gw = await startGateway(yaml(a.url, b.url));
  });
  after(async () => {
    await gw.close();
    await a.close();
    await b.close();
  });

  test('an error event as the very first event fails over invisibly', async () => {
    a.on(() => ({ status: 200, headers: { 'content-type': 'text/event-stream' }, steps: ['data: {"error":{"message":"overloaded before start","type":"server_error","code":"overloaded"}}\n\n'] }));
    b.on(() => okStream('from b'));
    for (let i = 0; i < 3; i++) {
      const r = await post(gw, { model: 'm', stream: true });
      assert.equal(r.status, 200);
      assert.equal(r.headers.get('x-switchyard-upstream'), 'b');
      assert.equal(r.headers.get('x-switchyard-attempts'), '2');
      assert.match(r.text, /from b/);
      assert.doesNotMatch(r.text, /overloaded/);
    }
  });

  test('a caller fault reported as the first event comes back as a 400, not retried', async () => {
    a.on(() => ({ status: 200, headers: { 'content-type': 'text/event-stream' }, steps: ['data: {"error":{"code":400,"message":"Token limit reached"}}\n\n'] }));
    b.on(() => okStream('from b'));
    const before = b.requests.length;
    const r = await post(gw, { model: 'm', stream: true });
    assert.equal(r.status, 400);
    assert.equal((JSON.parse(r.text) as { error: { message: string } }).error.message, 'Token limit reached');
    assert.equal(b.requests.length, before);
  });

  test('a streaming request answered with plain JSON fails over to a real stream', async () => {
    a.on(() => okJson('json from a'));
    b.on(() => okStream('stream from b'));
    const r = await post(gw, { model: 'm', stream: true });
    assert.equal(r.status, 200);
    assert.match(r.headers.get('content-type') ?? '', /text\/event-stream/);
    assert.match(r.text, /stream from b/);
    assert.match(r.text, /data: \[DONE\]/);
  });
});

describe('shedding and full queues', () => {
  let a: FakeUpstream;
  let b: FakeUpstream;
  let gw: TestGateway;
  before(async () => {
    a = await new FakeUpstream().start();
    b = await new FakeUpstream().start();
    gw = await startGateway(yaml(a.url, b.url, { threshold: 1, aMax: 1, routing: '  queue: { max: 0, timeout_ms: 100 }' }));
  });
  after(async () => {
    await gw.close();
    await a.close();
    await b.close();
  });

  test('a deep call downgraded to a non-reasoning model does not carry reasoning_effort', async () => {
    a.on(() => ({ ...okJson('deep answer'), delayMs: 400 }));
    b.on(() => okJson('lite answer'));
    const slow = post(gw, { model: 'deep', reasoning_effort: 'high' });
    await new Promise((r) => setTimeout(r, 100));
    const shed = await post(gw, { model: 'deep', reasoning_effort: 'high' });
    assert.equal(shed.status, 200);
    assert.equal(shed.headers.get('x-switchyard-shed'), 'deep->lite');
    const sent = b.requests.at(-1)!.json!;
    assert.equal(sent['model'], 'lite-b');
    assert.equal('reasoning_effort' in sent, false, 'stripped for the non-reasoning fallback');
    assert.equal(a.requests.at(-1)!.json!['reasoning_effort'], 'high', 'kept for the reasoning model');
    assert.equal((await slow).status, 200);
  });

  test('when the primary is at its concurrency cap with no queue room, the fallback model serves', async () => {
    a.on(() => ({ ...okJson('slow a'), delayMs: 400 }));
    b.on(() => okJson('lite answer'));
    const slow = post(gw, { model: 'deep', reasoning_effort: 'low' });
    await new Promise((r) => setTimeout(r, 100));
    const r = await post(gw, { model: 'deep', reasoning_effort: 'low' });
    assert.equal(r.status, 200);
    assert.equal(r.headers.get('x-switchyard-fallback'), 'deep->lite');
    assert.match(r.text, /lite answer/);
    assert.equal((await slow).status, 200);
  });
});

describe('HTTP-level client errors', () => {
  let a: FakeUpstream;
  let gw: TestGateway;
  before(async () => {
    a = await new FakeUpstream().start();
    gw = await startGateway(yaml(a.url, a.url, { server: '  request_timeout_ms: 400' }));
  });
  after(async () => {
    await gw.close();
    await a.close();
  });

  function raw(payload: string, waitMs = 3000): Promise<string> {
    const { port } = new URL(gw.url);
    return new Promise((resolve) => {
      const s = connect(Number(port), '127.0.0.1', () => s.write(payload));
      let out = '';
      s.on('data', (d) => (out += d.toString()));
      s.on('close', () => resolve(out));
      setTimeout(() => {
        s.destroy();
        resolve(out);
      }, waitMs);
    });
  }

  test('malformed HTTP gets an OpenAI-style 400', async () => {
    const out = await raw('GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n');
    assert.match(out, /^HTTP\/1.1 400/);
    const body = JSON.parse(out.slice(out.indexOf('\r\n\r\n') + 4)) as { error: { type: string } };
    assert.equal(body.error.type, 'invalid_request_error');
  });

  test('a body trickled slower than request_timeout_ms is cut with an OpenAI-style 408', async () => {
    const t0 = Date.now();
    const out = await raw(`POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${CLIENT_KEY}\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{`);
    assert.match(out, /^HTTP\/1.1 408/);
    assert.match(out, /"type":"invalid_request_error"/);
    assert.ok(Date.now() - t0 < 2900, 'closed well before the test gave up');
  });
});

describe('CLI start-up failures', () => {
  test('a port in use exits 1 with a clear message', async () => {
    const blocker = createServer();
    await new Promise<void>((r) => blocker.listen(0, '127.0.0.1', r));
    const port = (blocker.address() as { port: number }).port;
    try {
      const run = spawn(process.execPath, [join(ROOT, '.test-build', 'src', 'main.js'), '--config', join(ROOT, 'config', 'switchyard.yaml')], {
        env: { ...process.env, PORT: String(port), HOST: '127.0.0.1', OPENAI_API_KEY: '', DEEPSEEK_API_KEY: '' },
      });
      let stderr = '';
      run.stderr.on('data', (d) => (stderr += d.toString()));
      const code = await new Promise<number | null>((r) => run.on('exit', r));
      assert.equal(code, 1);
      assert.match(stderr, /cannot listen on 127\.0\.0\.1:\d+: EADDRINUSE/);
    } finally {
      blocker.close();
    }
  });

  test('serve rejects options that belong to simulate', () => {
    const run = spawnSync(process.execPath, [join(ROOT, '.test-build', 'src', 'main.js'), 'serve', '--port', '1234'], { encoding: 'utf8' });
    assert.equal(run.status, 2);
    assert.match(run.stderr, /--port is an option of "simulate" only/);
  });
});

describe('default config with only OPENAI_API_KEY set', () => {
  test('gpt-5.5-codex never falls back or sheds to simulated answers', () => {
    const config = parseTestConfig(readFileSync(join(ROOT, 'config', 'switchyard.yaml'), 'utf8'), { OPENAI_API_KEY: 'sk-live-test' }, 'default');
    const codex = config.models.get('gpt-5.5-codex')!;
    assert.deepEqual(
      codex.targets.map((t) => t.upstream.id),
      ['openai'],
    );
    assert.deepEqual(codex.fallbacks, [], 'deepseek-v3.2 is only simulated without DEEPSEEK_API_KEY');
    assert.equal(codex.shed.policy, 'reject');
    assert.ok(config.warnings.some((w) => /gpt-5\.5-codex.*only simulated/.test(w)));
    // With both keys, the real fallback is kept.
    const both = parseTestConfig(readFileSync(join(ROOT, 'config', 'switchyard.yaml'), 'utf8'), { OPENAI_API_KEY: 'sk-a', DEEPSEEK_API_KEY: 'sk-b' }, 'default');
    assert.deepEqual(both.models.get('gpt-5.5-codex')!.fallbacks, ['deepseek-v3.2']);
    assert.equal(both.models.get('gpt-5.5-codex')!.shed.fallback, 'deepseek-v3.2');
  });
});
