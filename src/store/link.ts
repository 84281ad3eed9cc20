/**
 * The store's link to Redis: which mode it is in (`redis` while Redis answers, `degraded`
 * after a failed or slow call or a lost connection, `memory` with no Redis configured), the
 * one warning per outage (with the error's code only: no URL, no password), and the way back:
 * ioredis' `ready` after a reconnect, or, when a call timed out over a connection that stayed
 * up (no new `ready` will come), a PING every second.
 */
import type { Cluster, Redis } from 'ioredis';

export type StoreMode = 'memory' | 'redis' | 'degraded';

export interface StoreLog {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
}

export class RedisLink {
  private mode_: StoreMode;
  private closed = false;
  /** Whether the current outage was logged (one warning per outage). */
  private outageLogged = false;
  /** While degraded over a live connection (a timed-out call), a periodic PING brings Redis back. */
  private probe: NodeJS.Timeout | null = null;

  /**
   * @param client null in memory mode.
   * @param replicas how many replicas share the limits (named in the outage warning).
   * @param hooks `changed`: on every mode change; `back`: once on Redis again (or first connected).
   */
  constructor(
    private readonly client: Redis | Cluster | null,
    private readonly log: StoreLog,
    private readonly replicas: number,
    private readonly hooks: { changed(mode: StoreMode): void; back(): void },
  ) {
    this.mode_ = client ? 'degraded' : 'memory';
    if (!client) return;
    client.on('ready', () => this.onReady());
    client.on('error', (err: NodeJS.ErrnoException) => this.degrade(err));
    client.on('close', () => this.degrade(null));
  }

  get mode(): StoreMode {
    return this.mode_;
  }

  private set(mode: StoreMode): void {
    if (this.mode_ === mode) return;
    this.mode_ = mode;
    this.hooks.changed(mode);
  }

  private onReady(): void {
    if (this.closed || this.mode_ === 'redis') return;
    this.set('redis');
    this.log.info({ store: 'redis' }, this.outageLogged ? 'shared store: back on Redis' : 'shared store: connected to Redis');
    this.outageLogged = false;
    if (this.probe) clearInterval(this.probe);
    this.probe = null;
    this.hooks.back();
  }

  /**
   * Switches to the local store; logs once per outage (also a Redis that is down at
   * start-up), with the error's code only: no URL, no password.
   */
  degrade(err: NodeJS.ErrnoException | null): void {
    if (this.closed || !this.client) return;
    this.set('degraded');
    if (!this.outageLogged) {
      this.outageLogged = true;
      this.log.warn(
        { store: 'degraded', reason: err?.code ?? err?.name ?? 'connection closed', replicas: this.replicas },
        'shared store: Redis unreachable, running on the local store with limits divided by replicas',
      );
    }
    // A call that timed out leaves the connection up, so no new `ready` will come: probe.
    this.probe ??= setInterval(() => {
      if (this.client?.status !== 'ready') return;
      this.client.ping().then(
        () => this.onReady(),
        () => {},
      );
    }, 1_000).unref();
  }

  /**
   * Resolves once the store is on Redis, or after `ms` (Redis down at start-up is not a
   * failure: the store runs degraded and keeps reconnecting).
   */
  async ready(ms: number): Promise<void> {
    const end = Date.now() + ms;
    while (this.mode_ === 'degraded' && !this.closed && Date.now() < end) await new Promise((r) => setTimeout(r, 10));
  }

  close(): void {
    this.closed = true;
    if (this.probe) clearInterval(this.probe);
  }
}
