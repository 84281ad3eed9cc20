/**
 * `switchyard hash-key` with no argument, run as the real CLI (the compiled `src/main.js`):
 * it reads the first line of a pipe and answers at once, while the writer keeps the pipe
 * open (it used to wait for EOF and hang), and it echoes no part of the key.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { dirname, join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

/** The compiled entry, beside the compiled tests (`<out>/test/hostile` -> `<out>/src/main.js`). */
const MAIN = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'src', 'main.js');

test('hash-key answers the first piped line within seconds, the pipe still open, and echoes no key', async () => {
  const child = spawn(process.execPath, [MAIN, 'hash-key'], { stdio: ['pipe', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString('utf8')));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString('utf8')));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  child.stdin.write('sk-test\n'); // and the pipe stays open
  const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
  const code = await exited;
  clearTimeout(timer);
  child.stdin.destroy();
  assert.equal(code, 0, `exited ${code} (killed after 5 s if it waited for EOF); stderr: ${stderr}`);
  assert.equal(stdout, `${createHash('sha256').update('sk-test').digest('hex')}\n`);
  assert.ok(!stdout.includes('sk-test') && !stderr.includes('sk-test'), 'the key is not echoed');
});

test('hash-key --help says an argument stays in the shell history', async () => {
  const child = spawn(process.execPath, [MAIN, '--help'], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString('utf8')));
  await new Promise((resolve) => child.once('exit', resolve));
  assert.match(stdout, /hash-key <key>.*shell history/);
});
