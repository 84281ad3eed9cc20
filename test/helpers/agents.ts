/**
 * The real coding agents for test/agents/: Codex CLI and Claude Code, pinned and installed
 * from npm into a cache outside the checkout (their binaries ship in per-platform packages;
 * `--ignore-scripts`, no install script runs), and run non-interactively as their users run
 * them, with telemetry off, in a fresh home and work dir:
 * - `codex exec` with the README's `config.toml` lines as written (only `base_url` pointed at
 *   the gateway under test), plus the settings a non-interactive run needs (approvals,
 *   sandbox, no update check, analytics and feedback off); no model line of its own;
 * - `claude -p` with `ANTHROPIC_BASE_URL` and no `--model`.
 * Also the gateway configs the scenarios share: the shipped default config with the test key.
 */
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { hashKey } from '../../src/auth/keys.js';
import { CLIENT_KEY } from './gateway.js';

const run = promisify(execFile);

/** The repository root, from the compiled `.test-build/test/helpers`. */
export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');

/** The pinned agents. */
const CODEX = '@openai/codex@0.171.0';
const CLAUDE = '@anthropic-ai/claude-code@2.1.332';
export const CACHE = join(tmpdir(), 'switchyard-agents-codex-0.171.0-claude-2.1.332');
const TRIPLE: Record<string, string> = { x64: 'x86_64-unknown-linux-musl', arm64: 'aarch64-unknown-linux-musl' };
export const codexBin = (): string => join(CACHE, 'node_modules', '@openai', `codex-linux-${process.arch}`, 'vendor', TRIPLE[process.arch]!, 'bin', 'codex');
export const claudeBin = (): string => join(CACHE, 'node_modules', '@anthropic-ai', `claude-code-linux-${process.arch}`, 'claude');
/** Claude Code's type declarations of its tools' inputs, shipped in the npm package. */
export const claudeSdkTools = (): string => join(CACHE, 'node_modules', '@anthropic-ai', 'claude-code', 'sdk-tools.d.ts');

/** What the simulator's shell call prints (providers/simulator/tools.ts). */
export const SIMULATOR_ECHO = 'hello from the switchyard simulator';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Installs the pinned agents into the cache once. The scenario files run in parallel
 * processes: the first takes a lock dir (mkdir is atomic) and installs, the others wait for
 * the binaries (a lock older than 10 minutes is a crashed run's and is taken over).
 */
export async function installAgents(): Promise<void> {
  // The binaries appear while npm is still writing them (spawning one then fails with
  // ETXTBSY): only the marker written after npm exits says the install is whole.
  const done = join(CACHE, '.installed');
  const ready = () => existsSync(done) && existsSync(codexBin()) && existsSync(claudeBin()) && existsSync(claudeSdkTools());
  const lock = `${CACHE}.lock`;
  for (const end = Date.now() + 600_000; !ready();) {
    try {
      mkdirSync(lock);
    } catch {
      if (Date.now() - (statSync(lock, { throwIfNoEntry: false })?.mtimeMs ?? Date.now()) > 600_000) rmSync(lock, { recursive: true, force: true });
      assert.ok(Date.now() < end, 'waited 10 minutes for another test process to install the agents');
      await sleep(500);
      continue;
    }
    try {
      mkdirSync(CACHE, { recursive: true });
      writeFileSync(join(CACHE, 'package.json'), '{"name":"switchyard-agents","private":true}');
      await run('npm', ['install', '--no-save', '--no-audit', '--no-fund', '--ignore-scripts', '--loglevel=error', CODEX, CLAUDE], {
        cwd: CACHE,
        timeout: 300_000,
        maxBuffer: 16 * 1024 * 1024,
      });
      writeFileSync(done, new Date().toISOString());
    } finally {
      rmSync(lock, { recursive: true, force: true });
    }
  }
  assert.ok(ready(), `agents installed under ${CACHE}`);
}

export interface AgentRun {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
  /** Wall time from spawn to exit, ms. */
  readonly ms: number;
}

/** Runs an agent with stdin closed (`codex exec` reads a piped stdin to its end), killed after `killMs`. */
function execAgent(bin: string, args: string[], env: NodeJS.ProcessEnv, cwd: string, killMs = 150_000): Promise<AgentRun> {
  return new Promise((resolve) => {
    const t0 = Date.now();
    const child = spawn(bin, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString('utf8')));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString('utf8')));
    const timer = setTimeout(() => child.kill('SIGKILL'), killMs);
    child.on('error', (err) => {
      clearTimeout(timer);
      resolve({ code: -1, stdout, stderr: `${stderr}\n${String(err)}`, ms: Date.now() - t0 });
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code: code ?? -1, stdout, stderr, ms: Date.now() - t0 });
    });
  });
}

/** Runs `fn` with a fresh temp dir holding `home/` and `work/`, removed afterwards. */
async function inTempDirs<T>(prefix: string, fn: (home: string, work: string) => Promise<T>): Promise<T> {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  try {
    mkdirSync(join(dir, 'home'));
    mkdirSync(join(dir, 'work'));
    return await fn(join(dir, 'home'), join(dir, 'work'));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The `config.toml` block of the README's "Coding agents" section, as written. */
export function readmeCodexToml(): string {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const section = readme.slice(readme.indexOf('## Coding agents'));
  const block = /```toml\n([\s\S]*?)```/.exec(section)?.[1];
  assert.ok(block, "the README's Coding agents section has a ```toml block");
  return block;
}

/** What a test adds to the README's Codex lines. */
export interface CodexOptions {
  /**
   * Top-level settings before the README's lines; default: what a non-interactive run with
   * tools needs (no approvals, workspace-write sandbox, no update check). `[]`: none.
   */
  readonly settings?: readonly string[];
  /** More lines of the README's `[model_providers.switchyard]` table (e.g. `supports_websockets = true`). */
  readonly providerLines?: readonly string[];
  /** Killed after this long, ms (default 150 s). */
  readonly killMs?: number;
}

/** The settings a non-interactive Codex run with tools needs beyond the README's lines. */
export const CODEX_TOOL_SETTINGS: readonly string[] = ['approval_policy = "never"', 'sandbox_mode = "workspace-write"', 'check_for_update_on_startup = false'];

/**
 * The README's Codex lines with `base_url` at the gateway `url`, after the top-level settings
 * a test run needs (TOML keys after a table header would belong to that table), the
 * provider table's extra lines at its end, then the tables that turn analytics and feedback off.
 */
function codexConfig(url: string, opts: CodexOptions): string {
  const readme = readmeCodexToml();
  let pointed = readme.replace(/^base_url = "[^"]*"/m, `base_url = "${url}/v1"`);
  assert.notEqual(pointed, readme, 'the README sets base_url');
  if (opts.providerLines?.length) {
    assert.ok(/\[model_providers\.switchyard\][^[]*$/.test(pointed), "the README's provider table comes last");
    pointed = `${pointed.trimEnd()}\n${opts.providerLines.join('\n')}\n`;
  }
  return [...(opts.settings ?? CODEX_TOOL_SETTINGS), '', pointed, '[analytics]', 'enabled = false', '', '[feedback]', 'enabled = false', ''].join('\n');
}

/** The environment of a Codex run: a fresh CODEX_HOME, the key the README's `env_key` names. */
function codexEnv(home: string): NodeJS.ProcessEnv {
  return {
    PATH: process.env['PATH'] ?? '/usr/bin:/bin',
    HOME: home,
    CODEX_HOME: home,
    SWITCHYARD_API_KEY: CLIENT_KEY,
    OTEL_SDK_DISABLED: 'true',
    NO_COLOR: '1',
  };
}

/** `codex exec` against the gateway at `url` with the README's config lines (and `opts`). */
export function codexExec(url: string, prompt: string, opts: CodexOptions = {}): Promise<AgentRun> {
  return inTempDirs('sy-codex-', async (home, work) => {
    writeFileSync(join(home, 'config.toml'), codexConfig(url, opts));
    return execAgent(codexBin(), ['exec', '--skip-git-repo-check', prompt], codexEnv(home), work, opts.killMs);
  });
}

/** Codex's model catalog as its binary ships it (`codex debug models --bundled`: JSON, no network). */
export function codexCatalog(): Promise<{ slug: string; visibility?: string; supported_reasoning_levels?: { effort: string }[] }[]> {
  return inTempDirs('sy-codex-', async (home, work) => {
    const r = await execAgent(codexBin(), ['debug', 'models', '--bundled'], codexEnv(home), work);
    assert.equal(r.code, 0, r.stderr);
    return (JSON.parse(r.stdout) as { models: { slug: string }[] }).models;
  });
}

/** What a test changes of a `claude -p` run. */
export interface ClaudeOptions {
  /** `--model` (default: none, Claude Code's own default model). */
  readonly model?: string;
  /** The client key sent (default CLIENT_KEY). */
  readonly apiKey?: string;
  /** Killed after this long, ms (default 150 s). */
  readonly killMs?: number;
}

/** `claude -p` against the gateway at `url`, no `--model` unless `opts.model`; `Bash(echo:*)` allowed. */
export function claudePrint(url: string, prompt: string, opts: ClaudeOptions = {}): Promise<AgentRun> {
  return inTempDirs('sy-claude-', (home, work) => {
    const env = {
      PATH: process.env['PATH'] ?? '/usr/bin:/bin',
      HOME: home,
      ANTHROPIC_BASE_URL: url,
      ANTHROPIC_API_KEY: opts.apiKey ?? CLIENT_KEY,
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
      DISABLE_TELEMETRY: '1',
      DISABLE_ERROR_REPORTING: '1',
      DISABLE_AUTOUPDATER: '1',
    };
    return execAgent(claudeBin(), ['-p', prompt, ...(opts.model ? ['--model', opts.model] : []), '--allowedTools', 'Bash(echo:*)'], env, work, opts.killMs);
  });
}

/**
 * Claude Code's model shortcuts, read from its shipped `sdk-tools.d.ts` (the Agent tool's
 * `model?: "sonnet" | "opus" | …` override: the names `--model` takes for the latest models).
 */
export function claudeShortcuts(): string[] {
  const dts = readFileSync(claudeSdkTools(), 'utf8');
  const union = /^\s*model\?: ((?:"[a-z]+"(?: \| )?)+);$/m.exec(dts)?.[1];
  assert.ok(union, 'sdk-tools.d.ts declares the model shortcuts');
  return [...union.matchAll(/"([a-z]+)"/g)].map((m) => m[1]!);
}

/** The levels `claude --effort` takes, as its `--help` lists them (`(low, medium, …)`). */
export function claudeEffortLevels(): Promise<string[]> {
  return inTempDirs('sy-claude-', async (home, work) => {
    const r = await execAgent(claudeBin(), ['--help'], { PATH: process.env['PATH'] ?? '/usr/bin:/bin', HOME: home, DISABLE_AUTOUPDATER: '1' }, work);
    const list = /--effort <level>[^(]*\(([a-z, ]+)\)/.exec(r.stdout)?.[1];
    assert.ok(list, `claude --help lists the effort levels:\n${r.stdout.slice(0, 3000)}`);
    return list.split(',').map((l) => l.trim());
  });
}

/**
 * The shipped config/switchyard.yaml with the test key added, the simulator paced at 1 ms
 * (the agents' turns are the same, only faster).
 */
export function defaultConfigYaml(): string {
  const text = readFileSync(join(ROOT, 'config', 'switchyard.yaml'), 'utf8');
  const out = text
    .replace(/chunk_delay_ms: 20\b/, 'chunk_delay_ms: 1')
    .replace(/first_byte_delay_ms: 150\b/, 'first_byte_delay_ms: 1')
    .replace(/^keys:\n/m, `keys:\n  - name: agents-test\n    key_sha256: ${hashKey(CLIENT_KEY)}\n    models: ["*"]\n`);
  assert.match(out, /chunk_delay_ms: 1\b/);
  assert.match(out, /name: agents-test/);
  return out;
}

/**
 * A config with one account at `url` of the given provider kind (and options) serving two
 * models: `codex-side` for every `gpt-*` / `codex-*` id (as upstream model `fake-codex`) and
 * `claude-side` for every `claude-*` id (as `fake-claude`), so each agent reaches it with its
 * own default model and the account can tell them apart.
 */
export function accountConfigYaml(url: string, provider: 'openai-compatible' | 'anthropic', options = '{}'): string {
  return `
upstreams:
  - { id: account, provider: ${provider}, base_url: "${url}/v1", api_key: "\${TEST_UPSTREAM_KEY}", options: ${options} }
models:
  - name: codex-side
    aliases: ["gpt-*", "codex-*"]
    reasoning: true
    price: { input: 1, output: 2 }
    targets: [{ upstream: account, model: fake-codex }]
  - name: claude-side
    aliases: ["claude-*"]
    reasoning: true
    price: { input: 1, output: 2 }
    targets: [{ upstream: account, model: fake-claude }]
keys:
  - { name: agents-test, key_sha256: ${hashKey(CLIENT_KEY)} }
`;
}

/** The last `n` characters of a run's output, for assertion messages. */
export function tail(r: AgentRun, n = 3000): string {
  return `exit ${r.code}\n--- stdout\n${r.stdout.slice(-n)}\n--- stderr\n${r.stderr.slice(-n)}`;
}
