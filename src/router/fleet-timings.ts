/**
 * What a replica learned about its calls' timing, shared with the fleet through the store:
 * each model's typical deep-call time (router/deep.ts DeepTimes, the shed ladder's wait rung)
 * and each account's first-event baseline (router/stalls.ts StallDetector, the stall
 * threshold). A replica that starts, restarts or reloads its config in a running fleet
 * uses the fleet's values at once, until it has measured its own, as it already uses the
 * fleet's learned capacity (store/capacity.ts): its first burst waits for a place as long as
 * a typical call allows and sees a stalled first token as a stall, instead of learning both
 * from its own first calls while they stall.
 *
 * Kept off the request path: a sync (this replica's own values written, the fleet's read:
 * two store calls, one hash in Redis, `timings:fleet`) starts with the router's first deep
 * call and then at most every SYNC_MS, from a deep call's start, never awaited by it (the first
 * burst's calls are watched and waited for long after it answers: a stall threshold is read
 * again every 250 ms while unknown, and the wait rung hears when a typical time becomes
 * known). Values are estimates: the last writer wins.
 */
import type { RouterSlots } from '../store/roles.js';
import type { DeepTimes } from './deep.js';
import type { StallDetector } from './stalls.js';

/** The shortest time between two syncs, ms. */
export const SYNC_MS = 5_000;
/** A timing outside (0, MAX_MS] is not taken from the store (a hostile or broken value). */
const MAX_MS = 30 * 60_000;
const DEEP = 'deep:';
const FIRST = 'first:';

export class FleetTimings {
  private last = Number.NEGATIVE_INFINITY;
  private running = false;

  constructor(
    private readonly store: Pick<RouterSlots, 'readTimings' | 'writeTimings'>,
    private readonly deep: DeepTimes,
    private readonly stalls: StallDetector,
    private readonly now: () => number = Date.now,
  ) {}

  /** Starts a sync when none runs and the last began SYNC_MS or more ago; returns at once, never throws. */
  maybeSync(): void {
    const t = this.now();
    if (this.running || t - this.last < SYNC_MS) return;
    this.last = t;
    this.running = true;
    void this.sync()
      .catch(() => {})
      .finally(() => (this.running = false));
  }

  /** Writes this replica's own timings, then seeds the ones it has not measured from the fleet's. */
  async sync(): Promise<void> {
    const mine: Record<string, number> = {};
    for (const [model, ms] of this.deep.own()) mine[DEEP + model] = ms;
    for (const [upstream, ms] of this.stalls.own()) mine[FIRST + upstream] = ms;
    await this.store.writeTimings(mine);
    const fleet = await this.store.readTimings();
    for (const [name, ms] of Object.entries(fleet)) {
      if (!(ms > 0 && ms <= MAX_MS)) continue;
      if (name.startsWith(DEEP)) this.deep.seed(name.slice(DEEP.length), ms);
      else if (name.startsWith(FIRST)) this.stalls.seed(name.slice(FIRST.length), ms);
    }
  }
}
