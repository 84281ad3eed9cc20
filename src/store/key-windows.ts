/**
 * The client keys' slots and rate windows as the gateway uses them (StateStore's
 * `keyWindows`, the KeyWindows contract of store/types.ts), over the two stores:
 *
 * - On Redis (store/redis-windows.ts) while it answers; a call that fails degrades the store
 *   and is answered locally.
 * - Locally (memory mode; or degraded: Redis configured but away) on the MemoryStore, with
 *   each limit cut to `limit / replicas` while degraded; what a degraded take or settlement
 *   counts is also kept for the shared window and added to it once Redis is back (store/spend.ts).
 *
 * A settlement goes where its take was counted: to the shared window while on Redis (a local
 * take too: its points were kept for the shared window), else to the local window only when
 * the take was local (a take made on Redis is never given back to a local window that never
 * held it), and kept for the shared window when Redis is configured.
 */
import { shareOf } from './capacity.js';
import type { MemoryStore } from './memory.js';
import type { RedisKeyWindows } from './redis-windows.js';
import type { ViaStore } from './spend.js';
import type { KeyAdmission, KeyAdmitted, KeyWindows, Lease, WindowRef } from './types.js';

/** What the windows need of StateStore (store/index.ts). */
export interface KeyWindowsHost {
  /** Runs a call on Redis while the store is on it, else (or when it fails, degrading the store) locally. */
  readonly via: ViaStore;
  /** Replicas sharing the limits (each takes limit / replicas while degraded). */
  readonly replicas: number;
  /** A slot was taken: the heartbeat renews it until it is released. */
  held(lease: Lease): void;
  /** Returns a slot to the store that issued it (StateStore.release). */
  release(lease: Lease): Promise<void>;
}

export class StoreKeyWindows implements KeyWindows {
  /** @param redis null in memory mode. */
  constructor(
    private readonly local: MemoryStore,
    private readonly redis: RedisKeyWindows | null,
    private readonly host: KeyWindowsHost,
  ) {}

  /** Never rejects: Redis while it answers, else the local store. */
  async admitKey(req: KeyAdmission): Promise<KeyAdmitted> {
    const redis = this.redis;
    const got = redis
      ? await this.host.via(
          () => redis.admitKey(req),
          () => this.admitDegraded(redis, req),
        )
      : await this.local.admitKey(req);
    if (got.lease) this.host.held(got.lease);
    return got;
  }

  /** Locally with limit / replicas each, what it takes kept for the shared windows. */
  private async admitDegraded(redis: RedisKeyWindows, req: KeyAdmission): Promise<KeyAdmitted> {
    const n = this.host.replicas;
    const slot = req.slot.limit > 0 ? { ...req.slot, limit: shareOf(req.slot.limit, n) } : req.slot;
    const got = await this.local.admitKey({ slot, windows: req.windows.map((w) => ({ ...w, limit: shareOf(w.limit, n) })) });
    if (got.refused === null) for (const w of req.windows) redis.outage(w, w.points);
    return got;
  }

  release(lease: Lease): Promise<void> {
    return this.host.release(lease);
  }

  /** Never rejects. */
  async settleWindow(from: Lease['from'], w: WindowRef, points: number): Promise<void> {
    if (points === 0) return;
    if (this.redis && (await this.redis.trySettle(w, points))) return;
    if (from === 'memory') await this.local.settleWindow(from, w, points);
    this.redis?.outage(w, points);
  }

  /** Never rejects: the shared window while on Redis, else the local one. */
  readWindow(w: WindowRef): Promise<number> {
    const redis = this.redis;
    return redis
      ? this.host.via(
          () => redis.readWindow(w),
          () => this.local.readWindow(w),
        )
      : this.local.readWindow(w);
  }
}
