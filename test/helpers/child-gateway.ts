/**
 * The real gateway as a child process (`<build>/src/main.js`, from the same compiled tree as
 * the test: `.test-build` under `npm test`, any `--outDir` in a targeted run), for tests that
 * must kill it (`SIGKILL`) and start it again. PORT 0; the address is read from its
 * "switchyard listening on" log line.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { UPSTREAM_KEY, waitFor } from './gateway.js';

/** `<build>/src/main.js`, from this compiled file at `<build>/test/helpers`. */
const MAIN = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'src', 'main.js');

export class ChildGateway {
  private readonly stdout: string[] = [];
  private readonly stderr: string[] = [];
  private exitCode: number | null | undefined = undefined;
  private readonly exited: Promise<void>;
  url = '';

  private constructor(readonly child: ChildProcess) {
    let partial = '';
    child.stdout!.setEncoding('utf8').on('data', (d: string) => {
      const lines = (partial + d).split('\n');
      partial = lines.pop()!;
      for (const l of lines) if (l.trim()) this.stdout.push(l);
    });
    child.stderr!.setEncoding('utf8').on('data', (d: string) => this.stderr.push(d));
    this.exited = new Promise((resolve) =>
      child.once('exit', (code) => {
        this.exitCode = code;
        resolve();
      }),
    );
  }

  /**
   * Writes `yaml` to `configFile`, spawns the gateway on it and waits (≤ 10 s) until it listens.
   * @throws when it exits first (its stderr in the message) or does not listen in time.
   */
  static async start(yaml: string, configFile: string, env: Record<string, string> = {}): Promise<ChildGateway> {
    writeFileSync(configFile, yaml);
    const child = spawn(process.execPath, [MAIN, '--config', configFile], {
      env: { PATH: process.env['PATH'] ?? '', HOST: '127.0.0.1', PORT: '0', TEST_UPSTREAM_KEY: UPSTREAM_KEY, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const gw = new ChildGateway(child);
    const line = await waitFor(
      () => {
        if (gw.exitCode !== undefined) throw new Error(`gateway exited ${gw.exitCode} before listening: ${gw.stderr.join('')}`);
        return gw.logs().find((l) => typeof l['msg'] === 'string' && l['msg'].startsWith('switchyard listening on'));
      },
      10_000,
      'the gateway to listen',
    );
    gw.url = String(line['address']);
    return gw;
  }

  /** Parsed JSON log lines so far. */
  logs(): Record<string, unknown>[] {
    return this.stdout.flatMap((l) => {
      try {
        return [JSON.parse(l) as Record<string, unknown>];
      } catch {
        return [];
      }
    });
  }

  /** Everything it printed (stdout and stderr), for assertions that a secret never appears. */
  output(): string {
    return this.stdout.join('\n') + this.stderr.join('');
  }

  /** Sends `signal` (default SIGKILL) and waits for the exit. */
  async kill(signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
    if (this.exitCode === undefined) this.child.kill(signal);
    await this.exited;
  }
}
