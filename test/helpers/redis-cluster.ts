/**
 * A real Redis Cluster for a test file: six `redis-server --cluster-enabled yes` processes
 * on free loopback ports, joined by `redis-cli --cluster create … --cluster-replicas 1`
 * (three primaries, each with one replica), no persistence, a short node timeout so a
 * killed primary's replica takes over within a few seconds. Killed when the process exits.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, ping } from './redis-server.js';

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

const running = new Set<ChildProcess>();
process.on('exit', () => {
  for (const p of running) p.kill('SIGKILL');
});

function cli(port: number, ...args: string[]): string {
  const r = spawnSync('redis-cli', ['-p', String(port), ...args], { encoding: 'utf8', timeout: 10_000 });
  return r.stdout ?? '';
}

/** One line of `CLUSTER NODES`: id, port, role and the slot ranges it serves. */
interface NodeLine {
  id: string;
  port: number;
  primary: boolean;
  failed: boolean;
  slots: [number, number][];
}

export class RedisCluster {
  private readonly procs = new Map<number, ChildProcess>();

  private constructor(
    readonly ports: number[],
    private readonly dir: string,
  ) {}

  /** Starts six nodes and creates the cluster; resolves once every node says `cluster_state:ok`. */
  static async start(nodeTimeoutMs = 1000): Promise<RedisCluster> {
    const ports: number[] = [];
    while (ports.length < 6) {
      const p = await freePort();
      if (!ports.includes(p)) ports.push(p);
    }
    const c = new RedisCluster(ports, mkdtempSync(join(tmpdir(), 'switchyard-cluster-')));
    for (const p of ports) c.launch(p, nodeTimeoutMs);
    for (const p of ports) await c.waitPing(p);
    const created = spawnSync('redis-cli', ['--cluster', 'create', ...ports.map((p) => `127.0.0.1:${p}`), '--cluster-replicas', '1', '--cluster-yes'], {
      encoding: 'utf8',
      timeout: 30_000,
    });
    if (created.status !== 0) throw new Error(`redis-cli --cluster create failed: ${created.stdout}${created.stderr}`);
    await c.waitHealthy(15_000);
    return c;
  }

  /** `redis://127.0.0.1:<port>` of every node (for `store.cluster_nodes`). */
  get urls(): string[] {
    return this.ports.map((p) => `redis://127.0.0.1:${p}`);
  }

  private launch(port: number, nodeTimeoutMs: number): void {
    const args = [
      '--port',
      String(port),
      '--bind',
      '127.0.0.1',
      '--save',
      '',
      '--appendonly',
      'no',
      '--dir',
      this.dir,
      '--cluster-enabled',
      'yes',
      '--cluster-config-file',
      `nodes-${port}.conf`,
      '--cluster-node-timeout',
      String(nodeTimeoutMs),
      // Replicas sync at once (the default waits 5 s for more replicas), so they can take over.
      '--repl-diskless-sync-delay',
      '0',
    ];
    const proc = spawn('redis-server', args, { stdio: 'ignore' });
    this.procs.set(port, proc);
    running.add(proc);
    proc.on('exit', () => {
      running.delete(proc);
      if (this.procs.get(port) === proc) this.procs.delete(port);
    });
  }

  private async waitPing(port: number): Promise<void> {
    const end = Date.now() + 5_000;
    while (!(await ping(port))) {
      if (Date.now() > end) throw new Error(`cluster node ${port} did not answer PING`);
      await sleep(20);
    }
  }

  /** The live nodes' view of the cluster (from the first live node). */
  nodes(): NodeLine[] {
    const from = this.ports.find((p) => this.procs.has(p))!;
    return cli(from, 'cluster', 'nodes')
      .trim()
      .split('\n')
      .filter(Boolean)
      .map((l) => {
        const f = l.split(' ');
        const flags = f[2]!.split(',');
        const slots = f
          .slice(8)
          .filter((s) => /^\d+(-\d+)?$/.test(s))
          .map((s) => {
            const [a, b] = s.split('-').map(Number);
            return [a!, b ?? a!] as [number, number];
          });
        return {
          id: f[0]!,
          port: Number(/:(\d+)@/.exec(f[1]!)![1]),
          primary: flags.includes('master'),
          failed: flags.some((x) => x.startsWith('fail')),
          slots,
        };
      });
  }

  /** The port of the primary serving the slot of `key` (e.g. `{switchyard}`). */
  primaryOf(key: string): number {
    const slot = Number(
      cli(
        this.ports.find((p) => this.procs.has(p))!,
        'cluster',
        'keyslot',
        key,
      ).trim(),
    );
    const node = this.nodes().find((n) => n.primary && !n.failed && n.slots.some(([a, b]) => slot >= a && slot <= b));
    if (!node) throw new Error(`no live primary serves slot ${slot}`);
    return node.port;
  }

  /** Waits until every live node says `cluster_state:ok` and every live replica is in sync. */
  async waitHealthy(ms: number): Promise<void> {
    const end = Date.now() + ms;
    for (;;) {
      const live = this.ports.filter((p) => this.procs.has(p));
      // Every node sees the cluster ok, and every replica is in sync with its primary.
      const ok = live.every((p) => {
        if (!cli(p, 'cluster', 'info').includes('cluster_state:ok')) return false;
        const repl = cli(p, 'info', 'replication');
        return !repl.includes('role:slave') || repl.includes('master_link_status:up');
      });
      if (ok) return;
      if (Date.now() > end) throw new Error('the Redis Cluster did not become healthy');
      await sleep(100);
    }
  }

  /** SIGKILL of the node on `port` (its replica takes over after the node timeout). */
  async kill(port: number): Promise<void> {
    const p = this.procs.get(port);
    if (!p) return;
    const exited = new Promise<void>((r) => p.once('exit', () => r()));
    p.kill('SIGKILL');
    await exited;
  }

  /** Runs a command on the primary serving `key`'s slot and returns its output. */
  run(key: string, ...args: string[]): string {
    return cli(this.primaryOf(key), ...args).trim();
  }

  async stop(): Promise<void> {
    for (const port of [...this.procs.keys()]) await this.kill(port);
    rmSync(this.dir, { recursive: true, force: true });
  }
}
