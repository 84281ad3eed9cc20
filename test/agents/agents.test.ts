/**
 * The real coding agents through Switchyard, run non-interactively as their users run them:
 * Codex CLI (`codex exec`, Responses API, a custom `model_providers` entry) and Claude Code
 * (`claude -p`, Messages API, `ANTHROPIC_BASE_URL`), both pinned and installed from npm into
 * a cache outside the checkout (their binaries ship in per-platform packages; no install
 * script is run). Each runs a task in a temp dir with its telemetry off, twice: against the
 * gateway on the default config (the simulator, no provider keys), and against a fake
 * provider that speaks only chat completions. Each run needs a tool call (the model asks
 * for the agent's shell tool, the agent runs `echo` and sends its output back) and a
 * follow-up turn whose text the agent prints.
 */
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { hashKey } from '../../src/auth/keys.js';
import { FakeUpstream, type ReceivedRequest, type ScriptedReply } from '../helpers/fake-upstream.js';
import { CLIENT_KEY, startGateway, type TestGateway } from '../helpers/gateway.js';
import { sseEvents } from '../helpers/recordings.js';

const run = promisify(execFile);
const here = dirname(fileURLToPath(import.meta.url));
const ROOT = join(here, '..', '..', '..');

/** The pinned agents. */
const CODEX = '@openai/codex@0.171.0';
const CLAUDE = '@anthropic-ai/claude-code@2.1.332';
const CACHE = join(tmpdir(), 'switchyard-agents-codex-0.171.0-claude-2.1.332');
const TRIPLE: Record<string, string> = { x64: 'x86_64-unknown-linux-musl', arm64: 'aarch64-unknown-linux-musl' };
const codexBin = (): string => join(CACHE, 'node_modules', '@openai', `codex-linux-${process.arch}`, 'vendor', TRIPLE[process.arch]!, 'bin', 'codex');
const claudeBin = (): string => join(CACHE, 'node_modules', '@anthropic-ai', `claude-code-linux-${process.arch}`, 'claude');

/** What the shell tool call runs, and what the agent gets back from it. */
const ECHOED = 'hello from the switchyard simulator';

/** Installs the pinned agents into the cache once (both test runs of CI reuse it). */
async function installAgents(): Promise<void> {
  if (existsSync(codexBin()) && existsSync(claudeBin())) return;
  mkdirSync(CACHE, { recursive: true });
  writeFileSync(join(CACHE, 'package.json'), '{"name":"switchyard-agents","private":true}');
  await run('npm', ['install', '--no-save', '--no-audit', '--no-fund', '--ignore-scripts', '--loglevel=error', CODEX, CLAUDE], { cwd: CACHE, timeout: 300_000, maxBuffer: 16 * 1024 * 1024 });
  assert.ok(existsSync(codexBin()), `codex binary at ${codexBin()}`);
  assert.ok(existsSync(claudeBin()), `claude binary at ${claudeBin()}`);
}

/** The text of a recorded chat stream's content deltas. */
function recordedText(name: string): string {
  let out = '';
  for (const e of sseEvents(name)) {
    const data = /^data: (.*)$/m.exec(e)?.[1];
    if (!data || data === '[DONE]') continue;
    for (const c of ((JSON.parse(data) as { choices?: { delta?: { content?: string } }[] }).choices ?? [])) out += c.delta?.content ?? '';
  }
  return out;
}

interface AgentRun {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs an agent with stdin closed (`codex exec` reads a piped stdin to its end), killed after 150 s. */
function execAgent(bin: string, args: string[], env: NodeJS.ProcessEnv, cwd: string): Promise<AgentRun> {
  return new Promise((resolve) => {
    const child = spawn(bin, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString('utf8')));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString('utf8')));
    const timer = setTimeout(() => child.kill('SIGKILL'), 150_000);
    child.on('error', (err) => {
      clearTimeout(timer);
      resolve({ code: -1, stdout, stderr: `${stderr}\n${String(err)}` });
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code: code ?? -1, stdout, stderr });
    });
  });
}

/** `codex exec` against the gateway at `url`, model `model`, in a fresh CODEX_HOME and work dir. */
async function codexExec(url: string, model: string, prompt: string): Promise<AgentRun> {
  const dir = mkdtempSync(join(tmpdir(), 'sy-codex-'));
  try {
    const home = join(dir, 'home');
    const work = join(dir, 'work');
    mkdirSync(home);
    mkdirSync(work);
    writeFileSync(
      join(home, 'config.toml'),
      [
        `model = "${model}"`,
        'model_provider = "switchyard"',
        'approval_policy = "never"',
        'sandbox_mode = "workspace-write"',
        'check_for_update_on_startup = false',
        '',
        '[model_providers.switchyard]',
        'name = "Switchyard"',
        `base_url = "${url}/v1"`,
        'env_key = "SWITCHYARD_API_KEY"',
        'wire_api = "responses"',
        '',
        '[analytics]',
        'enabled = false',
        '',
        '[feedback]',
        'enabled = false',
        '',
      ].join('\n'),
    );
    const env = { PATH: process.env['PATH'] ?? '/usr/bin:/bin', HOME: home, CODEX_HOME: home, SWITCHYARD_API_KEY: CLIENT_KEY, OTEL_SDK_DISABLED: 'true', NO_COLOR: '1' };
    return await execAgent(codexBin(), ['exec', '--skip-git-repo-check', prompt], env, work);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** `claude -p` against the gateway at `url`, in a fresh HOME and work dir. */
async function claudePrint(url: string, model: string, prompt: string): Promise<AgentRun> {
  const dir = mkdtempSync(join(tmpdir(), 'sy-claude-'));
  try {
    const home = join(dir, 'home');
    const work = join(dir, 'work');
    mkdirSync(home);
    mkdirSync(work);
    const env = {
      PATH: process.env['PATH'] ?? '/usr/bin:/bin',
      HOME: home,
      ANTHROPIC_BASE_URL: url,
      ANTHROPIC_API_KEY: CLIENT_KEY,
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
      DISABLE_TELEMETRY: '1',
      DISABLE_ERROR_REPORTING: '1',
      DISABLE_AUTOUPDATER: '1',
    };
    return await execAgent(claudeBin(), ['-p', prompt, '--model', model, '--allowedTools', 'Bash(echo:*)'], env, work);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The default config with the test key added (the demo key works too; the tests use their own). */
function defaultConfig(): string {
  const text = readFileSync(join(ROOT, 'config', 'switchyard.yaml'), 'utf8');
  return text.replace(/^keys:\n/m, `keys:\n  - name: agents-test\n    key_sha256: ${hashKey(CLIENT_KEY)}\n    models: ["*"]\n`);
}

/** Finished requests the gateway logged for one client API. */
function finishedOn(gw: TestGateway, api: 'responses' | 'messages'): Record<string, unknown>[] {
  return gw.finished().filter((l) => l['api'] === api);
}

describe('Codex and Claude Code on the default config (simulator, no provider keys)', { timeout: 600_000 }, () => {
  let gw: TestGateway;
  before(async () => {
    await installAgents();
    gw = await startGateway(defaultConfig(), {});
  });
  after(async () => {
    await gw?.close();
  });

  test('codex exec: the shell tool runs, the follow-up turn answers, the exit code is 0', async () => {
    const r = await codexExec(gw.url, 'gpt-5.5-codex', 'Say hello, then run a command that prints a greeting.');
    assert.equal(r.code, 0, `codex exited ${r.code}\n${r.stderr.slice(-3000)}`);
    const all = r.stdout + r.stderr;
    assert.ok(all.includes(ECHOED), `the echo ran:\n${all.slice(-3000)}`);
    const answer = recordedText('deepseek-reasoner-stream.sse').trim().slice(0, 40);
    assert.ok(r.stdout.includes(answer), `the final text is the simulator's:\n${r.stdout.slice(-2000)}`);
    const lines = finishedOn(gw, 'responses').filter((l) => l['model'] === 'gpt-5.5-codex' && l['status'] === 200);
    assert.ok(lines.length >= 2, `two turns or more through /v1/responses: ${lines.length}`);
  });

  test('claude -p: the Bash tool runs, the follow-up turn answers, the exit code is 0', async () => {
    const r = await claudePrint(gw.url, 'claude-sonnet-4-6', 'Say hello, then run a command that prints a greeting.');
    assert.equal(r.code, 0, `claude exited ${r.code}\n${r.stderr.slice(-3000)}`);
    const answer = recordedText('openai-chat-stream-text-no-usage-2023.sse').trim().slice(0, 40);
    assert.ok(r.stdout.includes(answer), `the final text is the simulator's:\n${r.stdout.slice(-2000)}`);
    const lines = finishedOn(gw, 'messages').filter((l) => l['model'] === 'claude-sonnet-4.6' && l['status'] === 200);
    assert.ok(lines.length >= 2, `two turns or more through /v1/messages: ${lines.length}`);
  });
});

/** A chat-only provider: a call to the request's shell tool, then text once the tool's output is back. */
function chatProvider(req: ReceivedRequest): ScriptedReply {
  const body = req.json ?? {};
  const messages = (body['messages'] as { role: string; content: unknown }[] | undefined) ?? [];
  const tools = ((body['tools'] as { function: { name: string; parameters?: { properties?: Record<string, { type?: string }>; required?: string[] } } }[] | undefined) ?? []).map((t) => t.function);
  const shell = tools.find((t) => /^(bash|shell|exec_command)$/i.test(t.name));
  const chunk = (delta: Record<string, unknown>, finish: string | null = null): string =>
    `data: ${JSON.stringify({ id: 'chatcmpl-agent', object: 'chat.completion.chunk', created: 1, model: 'fake-chat', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
  const usage = `data: ${JSON.stringify({ id: 'chatcmpl-agent', object: 'chat.completion.chunk', created: 1, model: 'fake-chat', choices: [], usage: { prompt_tokens: 100, completion_tokens: 10, total_tokens: 110 } })}\n\n`;
  const steps: string[] = [];
  if (messages.at(-1)?.role === 'tool' || !shell) {
    steps.push(chunk({ role: 'assistant', content: '' }), chunk({ content: 'The chat-only provider saw the tool output. Done.' }), chunk({}, 'stop'));
  } else {
    // The tool's own command parameter (Codex's exec_command takes `cmd`, Claude Code's Bash `command`), as its schema types it.
    const param = Object.keys(shell.parameters?.properties ?? {}).find((k) => /^(cmd|command)$/.test(k)) ?? 'command';
    const command = shell.parameters?.properties?.[param]?.type === 'array' ? ['echo', ECHOED] : `echo ${ECHOED}`;
    steps.push(chunk({ role: 'assistant', content: null, tool_calls: [{ index: 0, id: 'call_agent_1', type: 'function', function: { name: shell.name, arguments: '' } }] }));
    steps.push(chunk({ tool_calls: [{ index: 0, function: { arguments: JSON.stringify({ [param]: command }) } }] }), chunk({}, 'tool_calls'));
  }
  steps.push(usage, 'data: [DONE]\n\n');
  return { status: 200, headers: { 'content-type': 'text/event-stream' }, steps };
}

describe('Codex and Claude Code against a provider that speaks only chat completions', { timeout: 600_000 }, () => {
  const upstream = new FakeUpstream();
  let gw: TestGateway;
  before(async () => {
    await installAgents();
    await upstream.start();
    upstream.on(chatProvider);
    gw = await startGateway(`
upstreams:
  - { id: chat-only, provider: openai-compatible, base_url: "${upstream.url}/v1", api_key: "\${TEST_UPSTREAM_KEY}" }
models:
  - name: house-model
    aliases: ["claude-*", "gpt-5*"]
    reasoning: true
    price: { input: 1, output: 2 }
    targets: [{ upstream: chat-only, model: fake-chat }]
keys:
  - { name: agents-test, key_sha256: ${hashKey(CLIENT_KEY)} }
`);
  });
  after(async () => {
    await gw?.close();
    await upstream.close();
  });

  for (const agent of ['codex', 'claude'] as const) {
    test(`${agent}: the tool call and its follow-up go through the bridge to /v1/chat/completions`, async () => {
      upstream.requests.length = 0;
      const r = agent === 'codex' ? await codexExec(gw.url, 'gpt-5.5-codex', 'Run a command that prints a greeting.') : await claudePrint(gw.url, 'claude-sonnet-4-6', 'Run a command that prints a greeting.');
      assert.equal(r.code, 0, `${agent} exited ${r.code}\n${r.stderr.slice(-3000)}`);
      assert.ok(r.stdout.includes('The chat-only provider saw the tool output. Done.'), r.stdout.slice(-2000));
      const turns = upstream.requests.filter((q) => q.url === '/v1/chat/completions' && Array.isArray(q.json?.['tools']));
      const followUp = turns.find((q) => ((q.json?.['messages'] as { role: string; content: unknown; tool_call_id?: string }[]) ?? []).some((m) => m.role === 'tool' && m.tool_call_id === 'call_agent_1' && String(m.content).includes(ECHOED)));
      assert.ok(followUp, `a follow-up carried the echo's output as a tool message (${turns.length} requests): ${JSON.stringify(turns.map((q) => (q.json?.['messages'] as unknown[]).slice(-2))).slice(0, 3000)}`);
    });
  }
});
