/**
 * PostgreSQL for tests: a fresh database per test file on the machine's server
 * (127.0.0.1:5432, trust auth, user postgres; `PGHOST`/`PGPORT` override), dropped after;
 * and a TCP proxy in front of it that a test stops and starts to cut PostgreSQL off from the
 * gateway (every connection reset, new ones refused) without touching the server itself.
 */
import { randomBytes } from 'node:crypto';
import { createServer, connect, type Server, type Socket } from 'node:net';
import pg from 'pg';

const HOST = process.env['PGHOST'] ?? '127.0.0.1';
const PORT = Number(process.env['PGPORT'] ?? 5432);
const ADMIN_URL = `postgres://postgres@${HOST}:${PORT}/postgres`;

export class TestDatabase {
  private constructor(
    readonly name: string,
    readonly pool: pg.Pool,
  ) {}

  /** Creates `sy_test_<random>` and a pool on it. */
  static async create(): Promise<TestDatabase> {
    const name = `sy_test_${randomBytes(6).toString('hex')}`;
    const admin = new pg.Client({ connectionString: ADMIN_URL });
    await admin.connect();
    try {
      await admin.query(`CREATE DATABASE ${name}`);
    } finally {
      await admin.end();
    }
    const pool = new pg.Pool({ connectionString: TestDatabase.urlOf(name, HOST, PORT), max: 2 });
    // pool.end() resolves once its clients are told to end, not once their sockets have closed
    // (pg-pool 3.14 `_pulseQueue`), so drop()'s `WITH (FORCE)` can terminate one still closing:
    // its 57P01 error then reaches the pool, which without a listener throws it uncaught.
    pool.on('error', () => {});
    return new TestDatabase(name, pool);
  }

  static urlOf(name: string, host: string, port: number): string {
    return `postgres://postgres@${host}:${port}/${name}`;
  }

  /** The database's URL, directly or through a proxy's port. */
  url(port = PORT): string {
    return TestDatabase.urlOf(this.name, HOST, port);
  }

  async query<T extends pg.QueryResultRow = Record<string, unknown>>(sql: string, params: unknown[] = []): Promise<T[]> {
    return (await this.pool.query<T>(sql, params)).rows;
  }

  /** Drops the database (closing whatever is still connected to it). */
  async drop(): Promise<void> {
    await this.pool.end();
    const admin = new pg.Client({ connectionString: ADMIN_URL });
    await admin.connect();
    try {
      await admin.query(`DROP DATABASE IF EXISTS ${this.name} WITH (FORCE)`);
    } finally {
      await admin.end();
    }
  }
}

/** A TCP proxy to the PostgreSQL server on a fixed local port: `stop()` cuts it off, `start()` brings it back. */
export class PgProxy {
  private server: Server | null = null;
  private readonly sockets = new Set<Socket>();
  port = 0;

  async start(): Promise<this> {
    const server = createServer((client) => {
      const up = connect(PORT, HOST);
      this.sockets.add(client).add(up);
      const drop = (): void => {
        client.destroy();
        up.destroy();
        this.sockets.delete(client);
        this.sockets.delete(up);
      };
      client.on('error', drop).on('close', drop);
      up.on('error', drop).on('close', drop);
      client.pipe(up).pipe(client);
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.port, '127.0.0.1', () => resolve());
    });
    this.port = (server.address() as { port: number }).port;
    this.server = server;
    return this;
  }

  /** Resets every connection and stops listening (connects are refused until `start()`). */
  async stop(): Promise<void> {
    const server = this.server;
    this.server = null;
    for (const s of this.sockets) s.destroy();
    this.sockets.clear();
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}
