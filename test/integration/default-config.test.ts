/**
 * The shipped config/switchyard.yaml with no provider keys: everything is served by the
 * built-in simulator, and the official `openai` client works against it with the demo key.
 * With only OPENAI_API_KEY set, no live model falls back or sheds to simulated answers.
 * Also the CLI from the compiled entry point: `hash-key`, `check-config`, and start-up
 * failures (a port in use, options of another command) that exit with a clear message.
 */
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { Writable } from 'node:stream';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import OpenAI from 'openai';
import { buildApp, type Gateway } from '../../src/app.js';
import { parseTestConfig } from '../helpers/config.js';
import { waitFor } from '../helpers/gateway.js';

const here = dirname(fileURLToPath(import.meta.url));
/** The repository root, from the compiled `.test-build/test/integration`. */
const ROOT = join(here, '..', '..', '..');
const CONFIG_PATH = join(ROOT, 'config', 'switchyard.yaml');
const MAIN = join(ROOT, '.test-build', 'src', 'main.js');
const RECORDINGS = join(ROOT, 'src', 'providers', 'simulator', 'recordings');
const DEMO_KEY = 'sk-switchyard-demo';

/** The shipped YAML with the simulator's pacing shortened to keep the test fast. */
function fastYaml(): string {
  const text = readFileSync(CONFIG_PATH, 'utf8');
  const fast = text.replace(/chunk_delay_ms: 20\b/, 'chunk_delay_ms: 1').replace(/first_byte_delay_ms: 150\b/, 'first_byte_delay_ms: 1');
  assert.notEqual(fast, text);
  assert.match(fast, /chunk_delay_ms: 1\b/);
  assert.match(fast, /first_byte_delay_ms: 1\b/);
  return fast;
}

/** reasoning_content and content of a recorded DeepSeek stream, read independently. */
function recordedText(file: string): { reasoning: string; content: string } {
  const out = { reasoning: '', content: '' };
  for (const line of readFileSync(join(RECORDINGS, file), 'utf8').split('\n')) {
    const m = /^data: (\{.*\})$/.exec(line);
    if (!m) continue;
    const c = JSON.parse(m[1]!) as { choices: { delta: { content?: string | null; reasoning_content?: string | null } }[] };
    for (const ch of c.choices) {
      out.reasoning += ch.delta.reasoning_content ?? '';
      out.content += ch.delta.content ?? '';
    }
  }
  return out;
}

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the compiled CLI from the repository root with no provider keys. */
function cli(args: string[], input?: string, env: Record<string, string> = {}): Promise<Run> {
  return new Promise((resolve) => {
    const child = execFile(
      process.execPath,
      [MAIN, ...args],
      { cwd: ROOT, env: { PATH: process.env['PATH'] ?? '', ...env }, timeout: 20_000 },
      (err, stdout, stderr) => {
        const code = err ? ((err as { code?: unknown }).code as number | null) : 0;
        resolve({ code: typeof code === 'number' ? code : null, stdout, stderr });
      },
    );
    if (input !== undefined) child.stdin!.end(input);
    else child.stdin!.end();
  });
}

describe('default config, no provider keys', () => {
  let gw: Gateway;
  let url: string;
  let client: OpenAI;
  const logs: string[] = [];
  const finished = () => logs.map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => l['msg'] === 'request finished');

  before(async () => {
    const config = parseTestConfig(fastYaml(), {}, CONFIG_PATH);
    const logStream = new Writable({
      write(chunk: Buffer, _enc, cb) {
        for (const line of chunk.toString('utf8').split('\n')) if (line.trim()) logs.push(line);
        cb();
      },
    });
    gw = await buildApp(config, { logStream });
    url = await gw.app.listen({ host: '127.0.0.1', port: 0 });
    client = new OpenAI({ apiKey: DEMO_KEY, baseURL: `${url}/v1`, maxRetries: 0 });
  });
  after(async () => {
    await gw.app.close();
  });

  test('/v1/models lists gpt-5.5-codex, claude-sonnet-4.6 and the DeepSeek models', async () => {
    const ids: string[] = [];
    for await (const m of client.models.list()) ids.push(m.id);
    assert.ok(ids.includes('gpt-5.5-codex'), ids.join(','));
    assert.ok(ids.includes('deepseek-v3.2'), ids.join(','));
    assert.deepEqual(ids.sort(), ['claude-sonnet-4.6', 'deepseek-reasoner', 'deepseek-v3.2', 'gpt-5.5-codex']);
    const one = await client.models.retrieve('gpt-5.5-codex');
    assert.equal(one.id, 'gpt-5.5-codex');
  });

  test('a wrong key is refused', async () => {
    const bad = new OpenAI({ apiKey: 'sk-not-the-demo-key', baseURL: `${url}/v1`, maxRetries: 0 });
    await assert.rejects(bad.models.list(), (err: unknown) => err instanceof OpenAI.AuthenticationError && err.status === 401);
  });

  test('/readyz shows openai and deepseek off, the simulator simulated', async () => {
    const res = await fetch(`${url}/readyz`);
    assert.equal(res.status, 200);
    const body = (await res.json()) as { upstreams: { id: string; mode: string }[] };
    assert.deepEqual(
      body.upstreams.map((u) => [u.id, u.mode]),
      [
        ['openai', 'off'],
        ['deepseek', 'off'],
        ['anthropic', 'off'],
        ['simulator', 'simulated'],
      ],
    );
  });

  test('gpt-5.5-codex streams reasoning_content, then content, then usage', async () => {
    const want = recordedText('deepseek-reasoner-stream.sse');
    assert.ok(want.reasoning.length > 0 && want.content.length > 0);
    const { data: stream, response } = await client.chat.completions
      .create({
        model: 'gpt-5.5-codex',
        messages: [{ role: 'user', content: 'hi' }],
        stream: true,
        stream_options: { include_usage: true },
      })
      .withResponse();
    assert.equal(response.headers.get('x-switchyard-upstream'), 'simulator');
    assert.equal(response.headers.get('x-switchyard-model'), 'deepseek-reasoner');
    let reasoning = '';
    let content = '';
    let contentBeforeReasoningEnded = false;
    let finish: string | null = null;
    let usage: OpenAI.CompletionUsage | null | undefined = null;
    for await (const chunk of stream) {
      if (chunk.usage) usage = chunk.usage;
      for (const choice of chunk.choices) {
        const d = choice.delta as { content?: string | null; reasoning_content?: string | null };
        if (d.reasoning_content) {
          if (content) contentBeforeReasoningEnded = true;
          reasoning += d.reasoning_content;
        }
        if (d.content) content += d.content;
        if (choice.finish_reason) finish = choice.finish_reason;
      }
    }
    assert.equal(reasoning, want.reasoning);
    assert.equal(content, want.content);
    assert.ok(content.includes('😊'));
    assert.equal(contentBeforeReasoningEnded, false, 'all reasoning_content comes before content');
    assert.equal(finish, 'stop');
    assert.ok(usage, 'usage is reported');
    assert.equal(usage.prompt_tokens, 6);
    assert.equal(usage.completion_tokens, 212);
    assert.equal(usage.completion_tokens_details?.reasoning_tokens, 198);

    const line = await waitFor(() => finished().find((l) => l['model'] === 'gpt-5.5-codex' && l['stream'] === true), 2000, 'log line');
    assert.equal(line['upstream'], 'simulator');
    assert.equal(line['outcome'], 'ok');
    assert.deepEqual(line['tokens'], { input: 6, cached: 0, output: 212, reasoning: 198 });
    assert.ok(Math.abs((line['cost_usd'] as number) - (6 * 1.25 + 212 * 10) / 1e6) < 1e-12, `cost ${String(line['cost_usd'])}`);
  });

  test('deepseek-v3.2 answers a non-streaming request', async () => {
    const res = await client.chat.completions.create({ model: 'deepseek-v3.2', messages: [{ role: 'user', content: 'Capital of France?' }] });
    assert.equal(res.object, 'chat.completion');
    assert.equal(res.choices[0]!.message.role, 'assistant');
    assert.equal(res.choices[0]!.message.content, 'Paris.');
    assert.equal(res.choices[0]!.finish_reason, 'stop');
    assert.equal(res.usage?.total_tokens, 24);
  });

  test('gpt-5.5-codex streams a tool call (stream helper finalChatCompletion)', async () => {
    const stream = client.chat.completions.stream({
      model: 'gpt-5.5-codex',
      messages: [{ role: 'user', content: "What's the weather in San Francisco?" }],
      tools: [
        {
          type: 'function',
          function: {
            name: 'weather',
            description: 'Current weather for a location',
            parameters: { type: 'object', properties: { location: { type: 'string' } }, required: ['location'] },
          },
        },
      ],
    });
    const final = await stream.finalChatCompletion();
    const choice = final.choices[0]!;
    assert.equal(choice.finish_reason, 'tool_calls');
    const calls = choice.message.tool_calls ?? [];
    assert.equal(calls.length, 1);
    const call = calls[0]!;
    assert.equal(call.type, 'function');
    assert.ok(call.type === 'function');
    assert.equal(call.function.name, 'weather');
    assert.ok(call.id.length > 0);
    assert.deepEqual(JSON.parse(call.function.arguments), { location: 'San Francisco' });
  });

  test('gpt-5.5-codex tool call assembled from raw deltas', async () => {
    const stream = await client.chat.completions.create({
      model: 'gpt-5.5-codex',
      messages: [{ role: 'user', content: 'weather?' }],
      stream: true,
      tools: [{ type: 'function', function: { name: 'weather', parameters: { type: 'object', properties: {} } } }],
    });
    let name = '';
    let args = '';
    let reasoning = '';
    for await (const chunk of stream) {
      for (const choice of chunk.choices) {
        reasoning += (choice.delta as { reasoning_content?: string | null }).reasoning_content ?? '';
        for (const tc of choice.delta.tool_calls ?? []) {
          name += tc.function?.name ?? '';
          args += tc.function?.arguments ?? '';
        }
      }
    }
    assert.equal(name, 'weather');
    assert.deepEqual(JSON.parse(args), { location: 'San Francisco' });
    assert.ok(reasoning.length > 0, 'the reasoner thinks before calling the tool');
  });
});

describe('default config with only OPENAI_API_KEY set', () => {
  test('gpt-5.5-codex never falls back or sheds to simulated answers', () => {
    const config = parseTestConfig(readFileSync(CONFIG_PATH, 'utf8'), { OPENAI_API_KEY: 'sk-live-test' }, 'default');
    const codex = config.models.get('gpt-5.5-codex')!;
    assert.deepEqual(
      codex.targets.map((t) => t.upstream.id),
      ['openai'],
    );
    assert.deepEqual(codex.fallbacks, [], 'deepseek-v3.2 is only simulated without DEEPSEEK_API_KEY');
    // Its hot deep calls wait for a place, then take the rungs left (no simulated shed fallback).
    assert.equal(codex.shed.policy, 'ladder');
    assert.equal(codex.shed.fallback, undefined);
    assert.ok(config.warnings.some((w) => /gpt-5\.5-codex.*only simulated/.test(w)));
    // With both keys, the real fallback is kept.
    const both = parseTestConfig(readFileSync(CONFIG_PATH, 'utf8'), { OPENAI_API_KEY: 'sk-a', DEEPSEEK_API_KEY: 'sk-b' }, 'default');
    assert.deepEqual(both.models.get('gpt-5.5-codex')!.fallbacks, ['deepseek-v3.2']);
    assert.equal(both.models.get('gpt-5.5-codex')!.shed.fallback, 'deepseek-v3.2');
  });
});

describe('CLI', () => {
  test('hash-key prints the sha256 in config/switchyard.yaml', async () => {
    const hash = /key_sha256:\s*([0-9a-f]{64})/.exec(readFileSync(CONFIG_PATH, 'utf8'))?.[1];
    assert.ok(hash, 'the shipped config has a key hash');
    const run = await cli(['hash-key', DEMO_KEY]);
    assert.equal(run.code, 0, run.stderr);
    assert.equal(run.stdout, `${hash}\n`);
    const other = await cli(['hash-key', 'sk-something-else']);
    assert.equal(other.code, 0);
    assert.match(other.stdout, /^[0-9a-f]{64}\n$/);
    assert.notEqual(other.stdout, run.stdout);
  });

  test('hash-key reads the key from stdin', async () => {
    const hash = /key_sha256:\s*([0-9a-f]{64})/.exec(readFileSync(CONFIG_PATH, 'utf8'))![1];
    const run = await cli(['hash-key'], `${DEMO_KEY}\n`);
    assert.equal(run.code, 0, run.stderr);
    assert.equal(run.stdout.trim(), hash);
  });

  test('check-config on the default config exits 0', async () => {
    const run = await cli(['check-config']);
    assert.equal(run.code, 0, run.stderr);
    assert.ok(run.stdout.includes(CONFIG_PATH), run.stdout);
    assert.match(run.stdout, /ok \(4 models; upstreams: 0 live, 1 simulated, 3 off\)/);
    assert.equal(run.stderr, '');
    const explicit = await cli(['check-config', '--config', CONFIG_PATH]);
    assert.equal(explicit.code, 0, explicit.stderr);
  });

  test('check-config on a broken config exits 1 naming the bad path', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'switchyard-cli-'));
    try {
      const broken = join(dir, 'broken.yaml');
      writeFileSync(broken, readFileSync(CONFIG_PATH, 'utf8').replace('max_concurrency: 1000', 'max_concurrency: plenty'));
      const run = await cli(['check-config', '--config', broken]);
      assert.equal(run.code, 1, `exit code; stdout ${run.stdout}`);
      assert.ok(run.stderr.includes('/upstreams/3/max_concurrency'), run.stderr);
      assert.ok(run.stderr.includes('plenty'), run.stderr);
      assert.ok(run.stderr.includes(broken), run.stderr);
      assert.ok(!run.stdout.includes('ok'), run.stdout);

      const missing = await cli(['check-config', '--config', join(dir, 'nope.yaml')]);
      assert.equal(missing.code, 1);
      assert.ok(missing.stderr.includes('nope.yaml'), missing.stderr);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('CLI start-up failures exit with a clear message', () => {
  test('a port in use exits 1 with a clear message', async () => {
    const blocker = createServer();
    await new Promise<void>((r) => blocker.listen(0, '127.0.0.1', r));
    const port = (blocker.address() as { port: number }).port;
    try {
      const run = spawn(process.execPath, [MAIN, '--config', CONFIG_PATH], {
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

  test('--version, -v and help exit 0; an unknown flag or command exits 2 with the usage and no stack', async () => {
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string };
    for (const args of [['--version'], ['-v'], ['version']]) {
      const run = await cli(args);
      assert.equal(run.code, 0, run.stderr);
      assert.equal(run.stdout.trim(), `switchyard ${pkg.version}`);
    }
    for (const args of [['help'], ['--help'], ['-h']]) {
      const run = await cli(args);
      assert.equal(run.code, 0, `${args.join(' ')}: ${run.stderr}`);
      assert.match(run.stdout, /^usage:/);
    }
    for (const args of [['--bogus'], ['serve', '--frobnicate'], ['frob'], ['check-config', 'a.yaml', 'b.yaml']]) {
      const run = await cli(args);
      assert.equal(run.code, 2, args.join(' '));
      assert.match(run.stderr, /usage:/);
      assert.doesNotMatch(run.stderr, /\n\s+at /, 'no stack trace');
    }
    assert.match((await cli(['--bogus'])).stderr, /Unknown option '--bogus'/);
    assert.match((await cli(['frob'])).stderr, /unknown command "frob"/);
  });

  test('check-config takes the file as an argument, lists the allowed values of an enum, and warns of a literal api_key', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'switchyard-cli-'));
    try {
      const file = join(dir, 'c.yaml');
      const text = readFileSync(CONFIG_PATH, 'utf8');
      writeFileSync(file, text.replace('${OPENAI_API_KEY}', 'sk-proj-literal-0123456789'));
      const warned = await cli(['check-config', file]);
      assert.equal(warned.code, 0, warned.stderr);
      assert.ok(warned.stdout.includes(file), 'the named file is the one checked');
      assert.match(warned.stdout, /warning: \/upstreams\/0\/api_key is written into the config file; reference an environment variable/);
      assert.ok(!warned.stdout.includes('sk-proj-literal'), 'the secret is not echoed');

      writeFileSync(file, text.replace('strategy: balanced ', 'strategy: fastest '));
      const bad = await cli(['check-config', file]);
      assert.equal(bad.code, 1);
      assert.match(bad.stderr, /\/routing\/strategy: must be one of: fast, balanced, cheap, sticky \(got "fastest"\)/);
      assert.doesNotMatch(bad.stderr, /must be equal to constant|anyOf/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('REDIS_URL that is not a Redis URL is a config error, not a degraded start', async () => {
    for (const url of ['notaurl', 'http://redis:6379']) {
      const run = await cli(['check-config'], undefined, { REDIS_URL: url });
      assert.equal(run.code, 1, run.stdout);
      assert.match(run.stderr, /\/store\/redis_url \(\$\{REDIS_URL:-\}\): (not a URL|scheme "http" is not redis or rediss)/);
    }
    const withPassword = await cli(['check-config'], undefined, { REDIS_URL: 'redis://:hunter2-secret@' });
    assert.equal(withPassword.code, 1);
    assert.ok(!withPassword.stderr.includes('hunter2'), 'the password is never shown');
    const served = await cli(['--config', CONFIG_PATH], undefined, { REDIS_URL: 'notaurl', PORT: '0' });
    assert.equal(served.code, 1, 'serve refuses to start');
    assert.match(served.stderr, /not a URL/);
  });

  test('serve rejects options that belong to simulate', async () => {
    const run = await cli(['serve', '--port', '1234']);
    assert.equal(run.code, 2);
    assert.match(run.stderr, /--port is an option of "simulate" only/);
  });
});
