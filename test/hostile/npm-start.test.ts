/**
 * The README's first command ends in `npm start`; a SIGTERM to what the user started (npm)
 * drains the gateway and closes its port. npm forwards SIGTERM only to the shell it runs the
 * script in, which (dash) did not pass it on: the gateway kept serving, orphaned. The start
 * script now execs node. Run here as the README does, `npm start`, from a package whose
 * start script is this package.json's with `dist/main.js` pointed at the compiled test build
 * (the test does not build dist/).
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, createConnection } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { waitFor } from '../helpers/gateway.js';

const BUILD = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const MAIN = join(BUILD, 'src', 'main.js');
const ROOT = join(BUILD, '..');

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

function portOpen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

test('SIGTERM to `npm start` drains the gateway and closes its port', { timeout: 30_000 }, async () => {
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
  const start = pkg.scripts['start']!;
  assert.match(start, /dist\/main\.js/);
  const dir = mkdtempSync(join(tmpdir(), 'switchyard-npm-start-'));
  writeFileSync(
    join(dir, 'package.json'),
    JSON.stringify({ name: 'npm-start-probe', private: true, scripts: { start: start.replace('dist/main.js', JSON.stringify(MAIN)) } }),
  );
  const port = await freePort();
  const npm = spawn('npm', ['start', '--silent'], {
    cwd: dir,
    env: {
      ...process.env,
      PORT: String(port),
      HOST: '127.0.0.1',
      SWITCHYARD_CONFIG: join(ROOT, 'config', 'switchyard.yaml'),
      npm_config_update_notifier: 'false',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  npm.stdout.on('data', (d: Buffer) => (out += d.toString('utf8')));
  npm.stderr.on('data', (d: Buffer) => (out += d.toString('utf8')));
  let gatewayPid = 0;
  try {
    const listening = await waitFor(
      () => /"pid":(\d+),[^\n]*"msg":"switchyard listening on/.exec(out),
      15_000,
      `the gateway listening; output so far: ${out.slice(-500)}`,
    );
    gatewayPid = Number(listening[1]);
    assert.ok(await portOpen(port));
    npm.kill('SIGTERM');
    await waitFor(() => out.includes('shutting down: draining requests in flight'), 5_000, `the drain logged; output: ${out.slice(-500)}`);
    const deadline = Date.now() + 5_000;
    while (Date.now() < deadline && (alive(gatewayPid) || (await portOpen(port)))) await new Promise((r) => setTimeout(r, 100));
    assert.equal(alive(gatewayPid), false, 'the gateway process exited');
    assert.equal(await portOpen(port), false, 'its port is closed');
  } finally {
    if (gatewayPid && alive(gatewayPid)) process.kill(gatewayPid, 'SIGKILL');
    if (npm.exitCode === null && npm.signalCode === null) npm.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  }
});
