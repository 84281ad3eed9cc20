/**
 * The last view of each target this replica read from Redis (a `view` call, or the answer of
 * an admission, which reads the view of every target it was given), so the router can order
 * the next request's targets without a round trip of its own.
 *
 * A cached view is only ever used to order and pick targets, never to take a slot: the
 * admission script checks every limit again, atomically, on Redis (store/redis-scripts.ts
 * ADMIT). A stale view can only send a request to a target that then refuses it; the router
 * decides again on the fresh views that refusal returns (router/take.ts), and never sheds,
 * queues or skips a model on cached views alone (router/views.ts).
 *
 * What this replica changes itself is applied at once: a release takes its call out of its
 * account's counts, a cooldown it sets is seen by its next request.
 */
import type { TargetRef, TargetView } from './types.js';

/**
 * How long a cached view is used for ordering, ms. Under load every admission refreshes it,
 * so it is rarely older than the time between two requests; a replica that sees fewer than
 * four requests a second pays one `view` round trip before each admission, which then costs
 * little (Redis is not busy because of it). Long enough for bursts, short enough that the
 * balance between replicas follows within a quarter second.
 */
export const VIEW_FRESH_MS = 250;

interface Account {
  inFlight: number;
  deep: number;
  limit: number;
  callLimit: number;
  at: number;
}

export class ViewCache {
  /** upstream -> what its account's last view said, and when (epoch ms). */
  private readonly accounts = new Map<string, Account>();
  /** target key -> its cooldown's end (epoch ms), and when it was read. */
  private readonly cooling = new Map<string, { until: number; at: number }>();

  constructor(private readonly now: () => number = Date.now) {}

  /** The cached view of every target, in order, or null when one has none younger than `maxAgeMs`. */
  get(targets: readonly TargetRef[], maxAgeMs: number): TargetView[] | null {
    const oldest = this.now() - maxAgeMs;
    const out: TargetView[] = [];
    for (const t of targets) {
      const a = this.accounts.get(t.upstream);
      const c = this.cooling.get(t.key);
      if (!a || !c || a.at < oldest || c.at < oldest) return null;
      out.push({ inFlight: a.inFlight, deep: a.deep, limit: a.limit, callLimit: a.callLimit, coolingUntil: c.until > this.now() ? c.until : 0 });
    }
    return out;
  }

  /** Keeps the views just read from Redis (`views[i]` of `targets[i]`). */
  put(targets: readonly TargetRef[], views: readonly TargetView[]): void {
    const at = this.now();
    targets.forEach((t, i) => {
      const v = views[i]!;
      this.accounts.set(t.upstream, { inFlight: v.inFlight, deep: v.deep, limit: v.limit, callLimit: v.callLimit, at });
      this.cooling.set(t.key, { until: v.coolingUntil, at });
    });
  }

  /** This replica released a call on `upstream` (a deep one: `deep`). */
  released(upstream: string, deep: boolean): void {
    const a = this.accounts.get(upstream);
    if (!a) return;
    a.inFlight = Math.max(0, a.inFlight - 1);
    if (deep) a.deep = Math.max(0, a.deep - 1);
  }

  /** This replica put `targetKey` in cooldown until `untilMs` (epoch ms). */
  cooled(targetKey: string, untilMs: number): void {
    const c = this.cooling.get(targetKey);
    if (c && untilMs > c.until) c.until = untilMs;
  }

  /** Forgets everything (the store left or came back to Redis). */
  clear(): void {
    this.accounts.clear();
    this.cooling.clear();
  }
}
