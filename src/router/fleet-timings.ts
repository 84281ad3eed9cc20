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
 *
 * A fleet starting cold learns together, so two more syncs skip SYNC_MS: one as soon as a
 * value of this replica's own first becomes known (it is shared at once), and one every
 * POLL_MS while a call here waits for a typical time (it hears the first replica to know).
 * Measured (`node scripts/bench-clustering.mjs --shapes 429 --loads 32 --arms two`, gateway
 * logs): at a cold start one replica took 11 of the 12 first places, knew the typical time at
 * 1.1 s and shed its waiters then; the other, with one call served, made its waiters wait
 * until its own fifth call answered, 2.2 s in, and they ended at 3.3 s.
 */
import type { RouterSlots } from '../store/roles.js';
import type { DeepTimes } from './deep.js';
import type { StallDetector } from './stalls.js';

/** The shortest time between two syncs, ms. */
export const SYNC_MS = 5_000;
/** How often the fleet is read while a call waits for a typical time, ms. */
export const POLL_MS = 250;
/** A timing outside [1, MAX_MS] ms is not taken from the store (a hostile or broken value: no call is answered within a millisecond). */
const MAX_MS = 30 * 60_000;
const DEEP = 'deep:';
const FIRST = 'first:';

export class FleetTimings {
  private last = Number.NEGATIVE_INFINITY;
  private running = false;
  /** A sync asked for while one ran: started when it ends. */
  private again = false;
  private poll: NodeJS.Timeout | null = null;

  constructor(
    private readonly store: Pick<RouterSlots, 'readTimings' | 'writeTimings'>,
    private readonly deep: DeepTimes,
    private readonly stalls: StallDetector,
    private readonly now: () => number = Date.now,
  ) {
    deep.onLearned = () => this.soon();
    stalls.onLearned = () => this.soon();
    deep.onWanted = () => this.watch();
  }

  /** Starts a sync when none runs and the last began SYNC_MS or more ago; returns at once, never throws. */
  maybeSync(): void {
    if (this.running || this.now() - this.last < SYNC_MS) return;
    this.start();
  }

  /** A sync now, whatever SYNC_MS says (after the running one, if one runs); returns at once, never throws. */
  soon(): void {
    if (this.running) this.again = true;
    else this.start();
  }

  private start(): void {
    this.last = this.now();
    this.running = true;
    void this.sync()
      .catch(() => {})
      .finally(() => {
        this.running = false;
        if (!this.again) return;
        this.again = false;
        this.start();
      });
  }

  /** Reads the fleet every POLL_MS while a call here waits for a typical time. */
  private watch(): void {
    if (this.poll) return;
    this.poll = setInterval(() => {
      if (this.deep.wanted) return this.soon();
      clearInterval(this.poll!);
      this.poll = null;
    }, POLL_MS);
    this.poll.unref();
  }

  /** Writes this replica's own timings, then seeds the ones it has not measured from the fleet's. */
  async sync(): Promise<void> {
    const mine: Record<string, number> = {};
    for (const [model, ms] of this.deep.own()) mine[DEEP + model] = ms;
    for (const [upstream, ms] of this.stalls.own()) mine[FIRST + upstream] = ms;
    await this.store.writeTimings(mine);
    const fleet = await this.store.readTimings();
    for (const [name, ms] of Object.entries(fleet)) {
      if (!(ms >= 1 && ms <= MAX_MS)) continue;
      if (name.startsWith(DEEP)) this.deep.seed(name.slice(DEEP.length), ms);
      else if (name.startsWith(FIRST)) this.stalls.seed(name.slice(FIRST.length), ms);
    }
  }
}
