/**
 * A real `redis-server` for a test file: started on a free loopback port with no
 * persistence, killed (or frozen, or restarted on the same port) on demand, and killed
 * when the test process exits. Plus a TCP proxy in front of it that can cut the network
 * path while Redis itself (and its data) stays up.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createConnection, createServer, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { Redis, type Cluster } from 'ioredis';
import { createRedisClient } from '../../src/store/redis.js';

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

const running = new Set<ChildProcess>();
process.on('exit', () => {
  for (const p of running) p.kill('SIGKILL');
});

/** A loopback port nothing listens on (at the moment of the call). */
export async function freePort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
  const port = (srv.address() as AddressInfo).port;
  await new Promise<void>((resolve) => srv.close(() => resolve()));
  return port;
}

/** Sends `PING` over raw RESP; true on `+PONG` (or `-NOAUTH`, which also means it is up). */
export function ping(port: number, timeoutMs = 300): Promise<boolean> {
  return new Promise((resolve) => {
    const s = createConnection({ host: '127.0.0.1', port });
    let buf = '';
    const done = (v: boolean) => {
      clearTimeout(timer);
      s.destroy();
      resolve(v);
    };
    const timer = setTimeout(() => done(false), timeoutMs);
    s.on('connect', () => s.write('PING\r\n'));
    s.on('data', (d) => {
      buf += d.toString();
      if (buf.includes('\r\n')) done(buf.startsWith('+PONG') || buf.startsWith('-NOAUTH'));
    });
    s.on('error', () => done(false));
  });
}

export class RedisServer {
  private proc: ChildProcess | null = null;
  /** The clients `client()` handed out: `stop()` disconnects any a test left open. */
  private readonly clients = new Set<Redis | Cluster>();

  private constructor(
    readonly port: number,
    readonly password?: string,
  ) {}

  /** Starts a server on a free port (or `port`), waiting until it answers PING. */
  static async start(opts: { port?: number; password?: string } = {}): Promise<RedisServer> {
    const s = new RedisServer(opts.port ?? (await freePort()), opts.password);
    await s.launch();
    return s;
  }

  get url(): string {
    return this.password ? `redis://:${this.password}@127.0.0.1:${this.port}` : `redis://127.0.0.1:${this.port}`;
  }

  get running(): boolean {
    return this.proc !== null;
  }

  private async launch(): Promise<void> {
    const args = ['--port', String(this.port), '--save', '', '--appendonly', 'no', '--bind', '127.0.0.1', '--dir', tmpdir()];
    if (this.password) args.push('--requirepass', this.password);
    const proc = spawn('redis-server', args, { stdio: 'ignore' });
    this.proc = proc;
    running.add(proc);
    proc.on('exit', () => {
      running.delete(proc);
      if (this.proc === proc) this.proc = null;
    });
    const end = Date.now() + 5_000;
    while (!(await ping(this.port))) {
      if (this.proc !== proc) throw new Error(`redis-server on port ${this.port} exited at start`);
      if (Date.now() > end) throw new Error(`redis-server on port ${this.port} did not answer PING within 5 s`);
      await sleep(20);
    }
  }

  /** SIGKILL: the process dies at once, its connections drop, its data is gone. */
  async kill(): Promise<void> {
    const p = this.proc;
    if (!p) return;
    const exited = new Promise<void>((resolve) => p.once('exit', () => resolve()));
    p.kill('SIGCONT');
    p.kill('SIGKILL');
    await exited;
  }

  /** Starts the server again on the same port (empty: nothing was persisted). */
  async restart(): Promise<void> {
    await this.kill();
    await this.launch();
  }

  /** SIGSTOP: connections stay open but nothing is answered. */
  freeze(): void {
    this.proc?.kill('SIGSTOP');
  }

  /** SIGCONT after `freeze`. */
  thaw(): void {
    this.proc?.kill('SIGCONT');
  }

  /**
   * A fresh ioredis client to this server (for reading keys); disconnect it when done.
   * Its connection errors are expected in outage tests and are not reported; `stop()`
   * disconnects it if the test did not (a test that failed half way), so a client left
   * reconnecting to a dead port never keeps the test process alive.
   */
  client(): Redis {
    return this.adopt(new Redis({ host: '127.0.0.1', port: this.port, ...(this.password ? { password: this.password } : {}), maxRetriesPerRequest: 1 }));
  }

  /**
   * The gateway's own store client (store/redis.ts createRedisClient: no offline queue,
   * `commandTimeoutMs` per command) on this server, under `client()`'s rules, once it is ready.
   * @throws when it is not ready within 3 s.
   */
  async storeClient(prefix: string, commandTimeoutMs: number, leaseMs: number): Promise<Redis | Cluster> {
    const c = this.adopt(createRedisClient({ url: this.url, clusterNodes: [], options: {}, prefix, commandTimeoutMs, leaseMs }));
    await new Promise<void>((resolve, reject) => {
      const late = setTimeout(() => reject(new Error('ioredis client not ready within 3 s')), 3_000);
      c.once('ready', () => (clearTimeout(late), resolve()));
    });
    return c;
  }

  private adopt<C extends Redis | Cluster>(c: C): C {
    c.on('error', () => {});
    c.once('end', () => this.clients.delete(c));
    this.clients.add(c);
    return c;
  }

  async stop(): Promise<void> {
    for (const c of this.clients) c.disconnect();
    this.clients.clear();
    await this.kill();
  }
}

/**
 * A TCP proxy to a Redis port. `cut()` drops every connection and refuses new ones
 * (connections are accepted and closed at once), as if the network path or the replica's
 * host went away; `restore()` lets connections through again. Redis keeps its data.
 * `writes` counts the chunks clients sent through it (a pipeline is one write).
 */
export class TcpProxy {
  private readonly server: Server;
  private readonly sockets = new Set<Socket>();
  private blocked = false;
  port = 0;
  writes = 0;

  constructor(private readonly targetPort: number) {
    this.server = createServer((client) => {
      this.sockets.add(client);
      client.on('close', () => this.sockets.delete(client));
      client.on('error', () => {});
      if (this.blocked) {
        client.destroy();
        return;
      }
      const upstream = createConnection({ host: '127.0.0.1', port: this.targetPort });
      this.sockets.add(upstream);
      upstream.on('close', () => {
        this.sockets.delete(upstream);
        client.destroy();
      });
      upstream.on('error', () => client.destroy());
      client.on('close', () => upstream.destroy());
      client.on('data', () => this.writes++);
      client.pipe(upstream);
      upstream.pipe(client);
    });
  }

  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.port = (this.server.address() as AddressInfo).port;
    return this;
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  cut(): void {
    this.blocked = true;
    for (const s of this.sockets) s.destroy();
  }

  restore(): void {
    this.blocked = false;
  }

  async close(): Promise<void> {
    this.cut();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
