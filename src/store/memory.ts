/**
 * The in-memory store: exact for a single replica, and the fallback every replica uses
 * while Redis is unreachable. Entries carry their own expiry, like the Redis ones, so a
 * lease that is never released cannot hold a slot forever.
 */
import { randomUUID } from 'node:crypto';
import { SessionPins } from './pins.js';
import type { Lease, SharedStore, SlotRequest, SlotResult, TargetRef, TargetView } from './types.js';

export class MemoryStore implements SharedStore {
  readonly kind = 'memory' as const;
  /** upstream -> lease id -> expiry (epoch ms). */
  private readonly inflight = new Map<string, Map<string, number>>();
  /** upstream -> lease id -> start (epoch ms). */
  private readonly windows = new Map<string, Map<string, number>>();
  private readonly cooldowns = new Map<string, number>();
  private readonly pins: SessionPins;

  constructor(
    private readonly leaseMs: number,
    private readonly now: () => number = Date.now,
  ) {
    this.pins = new SessionPins(Number.MAX_SAFE_INTEGER, 100_000, now);
  }

  private live(map: Map<string, Map<string, number>>, upstream: string, keepIf: (v: number) => boolean): Map<string, number> {
    let m = map.get(upstream);
    if (!m) {
      m = new Map();
      map.set(upstream, m);
    }
    for (const [id, v] of m) if (!keepIf(v)) m.delete(id);
    return m;
  }

  private counts(upstream: string, windowMs: number): { inFlight: Map<string, number>; window: Map<string, number> } {
    const t = this.now();
    return {
      inFlight: this.live(this.inflight, upstream, (expires) => expires > t),
      window: this.live(this.windows, upstream, (start) => start > t - windowMs),
    };
  }

  async view(targets: readonly TargetRef[]): Promise<TargetView[]> {
    const t = this.now();
    return targets.map((ref) => {
      const c = this.counts(ref.upstream, ref.windowMs);
      const until = this.cooldowns.get(ref.key) ?? 0;
      return { inFlight: c.inFlight.size, window: c.window.size, coolingUntil: until > t ? until : 0 };
    });
  }

  async acquire(req: SlotRequest): Promise<SlotResult> {
    const c = this.counts(req.upstream, req.windowMs);
    if (c.inFlight.size >= req.limit) return { ok: false, reason: 'full' };
    if (req.deep && c.window.size >= req.threshold) return { ok: false, reason: 'hot' };
    const id = randomUUID();
    const t = this.now();
    c.inFlight.set(id, t + this.leaseMs);
    if (req.deep) c.window.set(id, t);
    return { ok: true, lease: { id, upstream: req.upstream, deep: req.deep, from: 'memory' } };
  }

  async release(lease: Lease): Promise<void> {
    this.inflight.get(lease.upstream)?.delete(lease.id);
    this.windows.get(lease.upstream)?.delete(lease.id);
  }

  async setCooldown(targetKey: string, untilMs: number): Promise<void> {
    if (untilMs > (this.cooldowns.get(targetKey) ?? 0)) this.cooldowns.set(targetKey, untilMs);
  }

  async getPin(session: string): Promise<string | undefined> {
    return this.pins.get(session);
  }

  async setPin(session: string, target: string, ttlMs: number): Promise<void> {
    this.pins.set(session, target, ttlMs);
  }

  async close(): Promise<void> {}
}
