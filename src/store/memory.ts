/**
 * The in-memory store: exact for a single replica, and the fallback every replica uses
 * while Redis is unreachable. Entries carry their own expiry, like the Redis ones, so a
 * lease that is never released (nor renewed) cannot hold a place forever.
 */
import { randomUUID } from 'node:crypto';
import { applyFeedback, initialCapacity, type CapacityBounds, type CapacityFeedback, type CapacityState } from './capacity.js';
import { BlobMap } from './blobs.js';
import { SessionPins } from './pins.js';
import { spreadOrder } from './spread.js';
import { admitProbe, probeAnswered, probeEnded } from './probe-gate.js';
import type {
  AdmitResult,
  Candidate,
  KeyAdmission,
  KeyAdmitted,
  KeyWindows,
  Lease,
  Refusal,
  SharedStore,
  SlotRequest,
  SlotResult,
  TargetRef,
  TargetView,
  WindowRef,
} from './types.js';
import { MemoryWindows } from './windows.js';

/** The most journal text one replica keeps in memory (characters), oldest entries dropped first. */
export const JOURNAL_MAX_BYTES = 64 * 1024 * 1024;

export class MemoryStore implements SharedStore, KeyWindows {
  readonly kind = 'memory' as const;
  /** upstream -> lease id -> expiry (epoch ms), every call. */
  private readonly inflight = new Map<string, Map<string, number>>();
  /** upstream -> lease id -> expiry (epoch ms), deep calls. */
  private readonly deep = new Map<string, Map<string, number>>();
  private readonly capacity = new Map<string, CapacityState>();
  /** upstream -> the learned capacity for calls of every kind. */
  private readonly callCapacity = new Map<string, CapacityState>();
  private readonly cooldowns = new Map<string, number>();
  private readonly pins: SessionPins;
  /** The journal, at most JOURNAL_MAX_BYTES of JSON text. */
  private readonly journal: BlobMap;
  /** The learned call timings (router/fleet-timings.ts): a reload's new router starts from them. */
  private readonly timings = new Map<string, number>();
  /** The client keys' rate windows. */
  private readonly windows: MemoryWindows;

  constructor(
    private readonly leaseMs: number,
    private readonly now: () => number = Date.now,
  ) {
    this.pins = new SessionPins(Number.MAX_SAFE_INTEGER, 100_000, now);
    this.journal = new BlobMap(JOURNAL_MAX_BYTES, now);
    this.windows = new MemoryWindows(now);
  }

  /** The live (unexpired) leases of `upstream` in `map`. */
  private live(map: Map<string, Map<string, number>>, upstream: string): Map<string, number> {
    let m = map.get(upstream);
    if (!m) {
      m = new Map();
      map.set(upstream, m);
    }
    const t = this.now();
    // forEach, not for-of over entries: no [id, expires] pair allocated per lease per call
    // (this runs on every admission and release; bench:alloc counted ~1.6 KB per request).
    m.forEach((expires, id) => {
      if (expires <= t) m!.delete(id);
    });
    return m;
  }

  private state(upstream: string, bounds: CapacityBounds, of = this.capacity): CapacityState {
    let s = of.get(upstream);
    if (!s) {
      s = initialCapacity(bounds);
      of.set(upstream, s);
    }
    return s;
  }

  /**
   * The learned limit, within today's bounds (a reload may have moved them); the starting
   * guess while nothing was learned (as in Redis: reading creates no state).
   */
  private limitOf(upstream: string, bounds: CapacityBounds, of = this.capacity): number {
    return Math.max(bounds.min, Math.min(bounds.ceiling, of.get(upstream)?.limit ?? bounds.start));
  }

  async view(targets: readonly TargetRef[]): Promise<TargetView[]> {
    const t = this.now();
    return targets.map((ref) => {
      const until = this.cooldowns.get(ref.key) ?? 0;
      return {
        inFlight: this.live(this.inflight, ref.upstream).size,
        deep: this.live(this.deep, ref.upstream).size,
        limit: this.limitOf(ref.upstream, ref.capacity),
        callLimit: this.limitOf(ref.upstream, ref.calls, this.callCapacity),
        coolingUntil: until > t ? until : 0,
      };
    });
  }

  async acquire(req: SlotRequest): Promise<SlotResult> {
    return this.take(req);
  }

  /** Tries the candidates in order, all in one step (nothing else runs in between). */
  async admit(candidates: readonly Candidate[], extra: readonly TargetRef[] = []): Promise<AdmitResult> {
    const refused: (Refusal | null)[] = candidates.map(() => null);
    let taken: AdmitResult['taken'] = null;
    const order = spreadOrder(
      candidates.map((c) => c.spread ?? 0),
      (i) => this.live(this.inflight, candidates[i]!.upstream).size,
      (i) => Math.min(candidates[i]!.limit, this.limitOf(candidates[i]!.upstream, candidates[i]!.calls, this.callCapacity)),
    );
    for (const i of order) {
      if (taken) break;
      const c = candidates[i]!;
      const got: SlotResult | { ok: false; reason: 'cooling' } =
        !c.coolingOk && (this.cooldowns.get(c.key) ?? 0) > this.now() ? { ok: false, reason: 'cooling' } : this.take(c);
      if (got.ok) taken = { index: i, lease: got.lease };
      else refused[i] = got.reason;
    }
    return { taken, refused, views: await this.view([...candidates, ...extra]) };
  }

  private take(req: SlotRequest & { readonly only?: Candidate['only'] }): SlotResult {
    const all = this.live(this.inflight, req.upstream);
    const deep = this.live(this.deep, req.upstream);
    const limit = req.deep ? this.limitOf(req.upstream, req.capacity) : 0;
    if (req.deep && deep.size >= limit) return { ok: false, reason: 'hot' };
    if (all.size >= req.limit) return { ok: false, reason: 'full' };
    if (all.size >= this.limitOf(req.upstream, req.calls, this.callCapacity)) return { ok: false, reason: req.deep ? 'hot' : 'full' };
    const id = randomUUID();
    if (!req.deep && req.only === 'probe') return { ok: false, reason: 'full' };
    const gate = req.deep ? admitProbe(this.state(req.upstream, req.capacity), id, deep.size + 1, limit, this.now(), (l) => deep.has(l), req.only) : 'ok';
    if (gate === 'hot') return { ok: false, reason: 'hot' };
    const expires = this.now() + this.leaseMs;
    all.set(id, expires);
    if (req.deep) deep.set(id, expires);
    return {
      ok: true,
      lease: {
        id,
        upstream: req.upstream,
        deep: req.deep,
        from: 'memory',
        inFlight: all.size,
        deepInFlight: req.deep ? deep.size : 0,
        probe: gate === 'probe',
      },
    };
  }

  /**
   * A client key's slot and windows, all or nothing, in one synchronous step (see
   * KeyWindows.admitKey; the checks and their order are KEY_ADMIT_BODY's, store/redis-scripts.ts):
   * the slot first, then each window; only when every one admits is anything counted.
   */
  async admitKey(req: KeyAdmission): Promise<KeyAdmitted> {
    const slot = req.slot.limit > 0 ? this.live(this.inflight, req.slot.upstream) : null;
    const now = req.windows.map((w) => this.windows.peek(w.key, w.windowS));
    const full = req.windows.findIndex((w, i) => now[i]!.consumedPoints + w.points > w.limit);
    const refused = slot && slot.size >= req.slot.limit ? 'concurrency' : full >= 0 ? full : null;
    if (refused !== null) return { refused, lease: null, windows: now, from: 'memory' };
    let lease: Lease | null = null;
    if (slot) {
      const id = randomUUID();
      slot.set(id, this.now() + this.leaseMs);
      lease = { id, upstream: req.slot.upstream, deep: false, from: 'memory', inFlight: slot.size, deepInFlight: 0, probe: false };
    }
    return { refused: null, lease, windows: req.windows.map((w) => this.windows.add(w.key, w.points, w.windowS)), from: 'memory' };
  }

  async settleWindow(_from: Lease['from'], w: WindowRef, points: number): Promise<void> {
    if (points !== 0) this.windows.add(w.key, points, w.windowS);
  }

  async readWindow(w: WindowRef): Promise<number> {
    return this.windows.peek(w.key, w.windowS).consumedPoints;
  }

  async renew(leases: readonly Lease[]): Promise<void> {
    const expires = this.now() + this.leaseMs;
    for (const l of leases) {
      const all = this.inflight.get(l.upstream);
      if (all?.has(l.id)) all.set(l.id, expires);
      const deep = this.deep.get(l.upstream);
      if (deep?.has(l.id)) deep.set(l.id, expires);
    }
  }

  async answered(lease: Lease): Promise<boolean> {
    const s = this.capacity.get(lease.upstream);
    return s ? probeAnswered(s, lease.id) : false;
  }

  async release(lease: Lease, feedback?: CapacityFeedback, bounds?: CapacityBounds, endedMs = 0): Promise<void> {
    const all = this.live(this.inflight, lease.upstream);
    const liveAll = all.size;
    const heldAll = all.delete(lease.id);
    if (!lease.deep) {
      if (heldAll && feedback && bounds) applyFeedback(this.state(lease.upstream, bounds, this.callCapacity), feedback, bounds, this.now(), liveAll);
      return;
    }
    const deep = this.live(this.deep, lease.upstream);
    const liveNow = deep.size;
    const held = deep.delete(lease.id);
    const s = this.capacity.get(lease.upstream);
    if (s) probeEnded(s, lease.id, this.now() - endedMs, held);
    if (held && feedback && bounds) applyFeedback(this.state(lease.upstream, bounds), feedback, bounds, this.now(), liveNow);
  }

  async feedback(upstream: string, feedback: CapacityFeedback, bounds: CapacityBounds): Promise<void> {
    applyFeedback(this.state(upstream, bounds), feedback, bounds, this.now());
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

  async getJournal(id: string): Promise<string | undefined> {
    return this.journal.get(id);
  }

  async putJournal(id: string, value: string, ttlMs: number): Promise<void> {
    this.journal.set(id, value, ttlMs);
  }

  async readTimings(): Promise<Record<string, number>> {
    return Object.fromEntries(this.timings);
  }

  async writeTimings(timings: Readonly<Record<string, number>>): Promise<void> {
    for (const [name, ms] of Object.entries(timings)) this.timings.set(name, ms);
  }

  async close(): Promise<void> {}
}
