/**
 * Keeps this replica's leases alive while their calls run: every third of the lease time,
 * one renewal per store for every lease not yet released. A replica that dies stops
 * renewing, so its places lapse within one lease time (store.lease_ms) instead of staying
 * taken until a long fixed expiry.
 */
import type { Lease } from './types.js';

export class LeaseHeartbeat {
  private readonly held = new Map<string, Lease>();
  private timer: NodeJS.Timeout | null = null;

  /**
   * @param renew renews the given leases (all issued by the same store, `from`); errors are
   *        the caller's to swallow (a lease that cannot be renewed lapses, as designed).
   */
  constructor(
    private readonly leaseMs: number,
    private readonly renew: (from: Lease['from'], leases: Lease[]) => Promise<void>,
  ) {}

  /** Leases held now (for tests and the admin view). */
  get size(): number {
    return this.held.size;
  }

  add(lease: Lease): void {
    this.held.set(lease.id, lease);
    this.timer ??= setInterval(() => this.beat(), Math.max(250, Math.floor(this.leaseMs / 3))).unref();
  }

  /**
   * Stops renewing `lease`. The timer stays until a beat finds nothing held: stopping it when
   * the last lease went and starting it again with the next call made a timer per request
   * whenever calls ran one at a time (issue 33).
   */
  delete(lease: Lease): void {
    this.held.delete(lease.id);
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    this.held.clear();
  }

  private beat(): void {
    if (this.held.size === 0) {
      if (this.timer) clearInterval(this.timer);
      this.timer = null;
      return;
    }
    const byStore = new Map<Lease['from'], Lease[]>();
    for (const l of this.held.values()) {
      let list = byStore.get(l.from);
      if (!list) byStore.set(l.from, (list = []));
      list.push(l);
    }
    for (const [from, leases] of byStore) void this.renew(from, leases).catch(() => {});
  }
}
