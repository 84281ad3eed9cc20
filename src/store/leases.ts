/**
 * The leases of this replica's running calls (store/index.ts): renewed by the heartbeat until
 * released (short leases: a dead replica frees its places fast), and each returned to the
 * store that issued it. A Redis release that fails is kept and re-sent (without its capacity
 * feedback) once the store is back on Redis, so no slot leaks.
 */
import type { CapacityBounds, CapacityFeedback } from './capacity.js';
import { LeaseHeartbeat } from './heartbeat.js';
import type { MemoryStore } from './memory.js';
import type { RedisStore } from './redis.js';
import type { Lease } from './types.js';
import type { ViewCache } from './view-cache.js';

const MAX_PENDING_RELEASES = 10_000;

/** What the leases use of the store: its Redis store while it is the store now, and how to degrade it. */
export interface LeaseLink {
  /** The Redis store when the store is on Redis now, else null. */
  online(): RedisStore | null;
  failed(err: NodeJS.ErrnoException): void;
}

export class Leases {
  /** Releases Redis did not take, with when their calls ended (epoch ms): re-sent on reconnect. */
  private readonly pending: { lease: Lease; endedAt: number }[] = [];
  /** Renews the leases of calls still running. */
  private readonly heartbeat: LeaseHeartbeat;

  constructor(
    leaseMs: number,
    private readonly local: MemoryStore,
    private readonly views: ViewCache,
    private readonly link: LeaseLink,
  ) {
    this.heartbeat = new LeaseHeartbeat(leaseMs, (from, leases) => this.renewFrom(from, leases));
  }

  /** Renews `lease` with the heartbeat until it is released. */
  hold(lease: Lease): void {
    this.heartbeat.add(lease);
  }

  /**
   * Returns a slot to the store that issued it, with its capacity feedback; a Redis release
   * that fails is re-sent (without the feedback) on reconnect.
   */
  async release(lease: Lease, feedback?: CapacityFeedback, bounds?: CapacityBounds, endedMs = 0): Promise<void> {
    this.heartbeat.delete(lease);
    if (lease.from === 'memory') return this.local.release(lease, feedback, bounds, endedMs);
    this.views.released(lease.upstream, lease.deep);
    const redis = this.link.online();
    if (redis) {
      try {
        return await redis.release(lease, feedback, bounds, endedMs);
      } catch (err) {
        this.link.failed(err as NodeJS.ErrnoException);
      }
    }
    if (this.pending.length < MAX_PENDING_RELEASES) this.pending.push({ lease, endedAt: Date.now() - endedMs });
  }

  /** Back on Redis: re-sends the releases that failed meanwhile. */
  resend(): void {
    const again = this.pending.splice(0);
    for (const p of again) void this.release(p.lease, undefined, undefined, Math.max(0, Date.now() - p.endedAt));
  }

  /** Renews leases now (the heartbeat does it on its own; see SharedStore.renew). */
  async renew(leases: readonly Lease[]): Promise<void> {
    await this.renewFrom(
      'memory',
      leases.filter((l) => l.from === 'memory'),
    );
    await this.renewFrom(
      'redis',
      leases.filter((l) => l.from === 'redis'),
    );
  }

  stop(): void {
    this.heartbeat.stop();
  }

  private async renewFrom(from: Lease['from'], leases: Lease[]): Promise<void> {
    if (leases.length === 0) return;
    if (from === 'memory') return this.local.renew(leases);
    const redis = this.link.online();
    if (redis) {
      try {
        await redis.renew(leases);
      } catch (err) {
        this.link.failed(err as NodeJS.ErrnoException);
      }
    }
  }
}
