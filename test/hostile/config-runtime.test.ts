/**
 * Config values the schema let through and the running gateway then failed on: each now
 * fails `check-config` (the real CLI, the compiled `src/main.js`) with its JSON path, `serve`
 * refuses to start with the same message (no TypeError stack), and a reload refuses the file
 * and keeps the running config. `PORT` is read in decimal only.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { hashKey } from '../../src/auth/keys.js';
import { CLIENT_KEY, startGateway } from '../helpers/gateway.js';

const MAIN = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'src', 'main.js');
const dir = mkdtempSync(join(tmpdir(), 'switchyard-config-runtime-'));
mkdirSync(join(dir, 'spool-dir'));

/** A valid config with `upstream` as the upstream's extra lines and `extra` appended. */
function yaml(upstream = '', extra = ''): string {
  return `
upstreams:
  - id: acct
    provider: openai-compatible
    base_url: http://127.0.0.1:9/v1
    api_key: sk-x${upstream}
models:
  - name: m
    price: { input: 1, output: 1 }
    targets: [{ upstream: acct, model: m }]
keys:
  - { name: t, key_sha256: ${hashKey(CLIENT_KEY)} }
${extra}`;
}

let n = 0;
function file(text: string): string {
  const path = join(dir, `c${n++}.yaml`);
  writeFileSync(path, text);
  return path;
}

function run(args: string[], env: NodeJS.ProcessEnv = {}, killAfterMs = 10_000): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [MAIN, ...args], { env: { ...process.env, HOST: '127.0.0.1', PORT: '0', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString('utf8')));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString('utf8')));
  const timer = setTimeout(() => child.kill('SIGKILL'), killAfterMs);
  return new Promise((resolve) =>
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    }),
  );
}

const CASES: { what: string; text: string; path: RegExp; secret?: string }[] = [
  { what: 'base_url "https://" (no host)', text: yaml().replace('http://127.0.0.1:9/v1', '"https://"'), path: /\/upstreams\/0\/base_url: (not a URL|no host)/ },
  {
    what: 'base_url with a space in its host',
    text: yaml().replace('http://127.0.0.1:9/v1', '"https://exa mple.com/v1"'),
    path: /\/upstreams\/0\/base_url: not a URL/,
  },
  {
    what: 'a header name with a space',
    text: yaml('\n    headers: { "Bad Name": "v" }'),
    path: /\/upstreams\/0\/headers: "Bad Name" is not a valid HTTP header name/,
  },
  {
    what: 'a header value with CR LF',
    text: yaml('\n    headers: { X-Org: "org-SECRETVALUE\\r\\nX-Evil: 1" }'),
    path: /\/upstreams\/0\/headers\/X-Org: the value holds a CR, LF/,
    secret: 'SECRETVALUE',
  },
  { what: 'spool_path a directory', text: yaml('', `ledger: { spool_path: "${join(dir, 'spool-dir')}" }`), path: /\/ledger\/spool_path: is a directory/ },
  { what: 'spool_path: /', text: yaml('', 'ledger: { spool_path: / }'), path: /\/ledger\/spool_path: is a directory/ },
  {
    what: 'spool_path under a file',
    text: yaml('', `ledger: { spool_path: "${join(dir, 'c0.yaml', 'spool.jsonl')}" }`),
    path: /\/ledger\/spool_path: cannot be created: .* is not a directory/,
  },
  { what: 'admin.port in hex', text: yaml('', 'admin: { port: 0x5A0D }'), path: /\/admin\/port: numbers are written in decimal \(got 0x5A0D\)/ },
  {
    what: 'a timeout in octal',
    text: yaml('\n    timeouts: { connect_ms: 0o17 }'),
    path: /\/upstreams\/0\/timeouts\/connect_ms: numbers are written in decimal/,
  },
  { what: 'budget_alerts.url with no host', text: yaml('', 'budget_alerts: { url: "http://" }'), path: /\/budget_alerts\/url: (not a URL|no host)/ },
];

describe('config values that failed only at runtime', () => {
  after(() => rmSync(dir, { recursive: true, force: true }));

  for (const c of CASES) {
    test(`check-config and serve refuse ${c.what}, naming its path`, async () => {
      const path = file(c.text);
      const checked = await run(['check-config', path]);
      assert.equal(checked.code, 1, `check-config exit code; stdout: ${checked.stdout}`);
      assert.match(checked.stderr, c.path);
      const served = await run(['serve', path]);
      assert.equal(served.code, 1, `serve exit code; stdout: ${served.stdout.slice(-300)}`);
      assert.match(served.stderr, c.path);
      assert.doesNotMatch(served.stderr, /TypeError|\n\s+at /, 'no stack');
      if (c.secret) assert.ok(!checked.stderr.includes(c.secret) && !served.stderr.includes(c.secret), 'the header value is not echoed');
    });
  }

  test('a reload refuses such a file and keeps the running config', async () => {
    const gw = await startGateway(`server: { log_level: silent }\n${yaml()}`);
    try {
      assert.throws(() => gw.reload(file(yaml('\n    headers: { "x\\u0000y": "v" }'))), /\/upstreams\/0\/headers: .* is not a valid HTTP header name/);
      assert.equal(gw.current().config.upstreams.get('acct')?.base_url, 'http://127.0.0.1:9/v1');
    } finally {
      await gw.close();
    }
  });

  test('PORT=0x5A0D is refused, not read as hex', async () => {
    const r = await run(['serve', file(yaml())], { PORT: '0x5A0D' }, 5_000);
    assert.equal(r.code, 1, `exit code (null: still serving, killed); stdout: ${r.stdout.slice(-300)}`);
    assert.match(r.stderr, /PORT must be a port number \(decimal/);
  });
});
