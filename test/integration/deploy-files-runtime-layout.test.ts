/**
 * The Docker image's runtime stage, without Docker: its file layout is rebuilt in a temp
 * dir from the compiled sources and started with the image's ENTRYPOINT, cwd and env, and
 * the image's HEALTHCHECK command is run against it.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { waitFor } from '../helpers/gateway.js';
import { ROOT, copyArgs, dockerInstructions, dockerStages, read } from '../helpers/deploy-files.js';

// ---------------------------------------------------------------------------------------
// The runtime image's layout, without Docker: package.json + package-lock.json, the
// compiled JS as dist/, config/, the recordings and the console's files, started like the
// ENTRYPOINT does.

async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as { port: number }).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

describe('runtime layout (the runtime stage rebuilt in a temp dir)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'switchyard-image-'));
  let child: ChildProcess | undefined;
  let port = 0;
  let stderr = '';
  let stdout = '';
  const { stages } = dockerStages(dockerInstructions(read('Dockerfile')));
  const runtime = stages.find((s) => s.name === 'runtime')!;
  const healthcheck = JSON.parse(/CMD\s+(\[.*\])$/.exec(runtime.body.find((i) => i.op === 'HEALTHCHECK')!.args)![1]!) as string[];
  const runHealthcheck = (p: number) => spawnSync(process.execPath, healthcheck.slice(1), { env: { ...process.env, PORT: String(p) }, timeout: 10_000 }).status;

  before(async () => {
    // Same files as the runtime stage's COPY lines; the compiled JS comes from the test build
    // of src/ (tsc with the same options; rootDir differs only), dependencies from the repo.
    for (const i of runtime.body.filter((x) => x.op === 'COPY')) {
      const c = copyArgs(i);
      for (const src of c.sources) {
        if (c.from) cpSync(join(ROOT, '.test-build', 'src'), join(dir, 'dist'), { recursive: true });
        else cpSync(join(ROOT, src), join(dir, c.dest.endsWith('/') || c.dest === './' ? src : c.dest.replace(/^\.\//, '')), { recursive: true });
      }
    }
    symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'), 'dir');
    port = await freePort();
    const env: NodeJS.ProcessEnv = { PATH: process.env['PATH'], HOME: dir, HOST: '127.0.0.1', PORT: String(port) };
    const entry = JSON.parse(runtime.body.find((i) => i.op === 'ENTRYPOINT')!.args) as string[];
    child = spawn(process.execPath, entry.slice(1), { cwd: dir, env, stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    await waitFor(() => /switchyard listening on/.test(stdout) || child!.exitCode !== null, 15_000, 'gateway start');
    assert.match(stdout, /switchyard listening on/, `started (stderr: ${stderr})`);
  });
  after(async () => {
    if (child && child.exitCode === null) {
      child.kill('SIGKILL');
      await new Promise((r) => child!.once('exit', r));
    }
    rmSync(dir, { recursive: true, force: true });
  });

  test('the layout has the files the Dockerfile copies', () => {
    for (const f of [
      'package.json',
      'package-lock.json',
      'dist/main.js',
      'config/switchyard.yaml',
      'src/providers/simulator/recordings',
      'src/server/console/assets/page.html',
    ]) {
      assert.ok(existsSync(join(dir, f)), f);
    }
  });

  test('the console pages build from its files (the admin listener reads them at start)', () => {
    const script =
      "const { consolePages } = await import('./dist/server/console/page.js'); const p = consolePages(); console.log(p.live.html.length > 0 && p.spend.html.length > 0);";
    const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], { cwd: dir, encoding: 'utf8', timeout: 10_000 });
    assert.equal(r.stdout.trim(), 'true', r.stderr);
  });

  test('the HEALTHCHECK command passes against it and fails on a closed port', async () => {
    assert.equal(runHealthcheck(port), 0);
    assert.equal(runHealthcheck(await freePort()), 1);
  });

  test('serves a chat completion from the simulator recordings with the default config and no keys', async () => {
    const res = await fetch(`http://127.0.0.1:${port}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: 'Bearer sk-switchyard-demo', 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'deepseek-v3.2', messages: [{ role: 'user', content: 'hi' }] }),
    });
    assert.equal(res.status, 200, await res.clone().text());
    const body = (await res.json()) as { choices: { message: { content: string } }[] };
    assert.ok(body.choices[0]!.message.content.length > 0);
    assert.match(
      stdout,
      new RegExp(`"config":"${join(dir, 'config', 'switchyard.yaml').replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}"`),
      'the default config is read from WORKDIR/config',
    );
  });

  test('exits 0 on SIGTERM (the STOPSIGNAL)', async () => {
    const exited = new Promise<number | null>((r) => child!.once('exit', (code) => r(code)));
    child!.kill('SIGTERM');
    assert.equal(await exited, 0, stderr);
  });
});
