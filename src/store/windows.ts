/**
 * Fixed rate windows in memory (a client key's `rpm` / `tpm`: limits/key-take.ts), counted
 * as the Redis ones are (store/redis-scripts.ts KEY_ADMIT_BODY and COUNTER_ADD): a window
 * starts at the first point counted in it and ends `windowS` later; an add starts one when
 * none runs and never takes one below 0. MemoryStore checks a take against its limit
 * (`peek`) before counting it (`add`), in one synchronous step.
 */
import type { WindowCount } from './types.js';

/** Past this many windows, adding a new one first drops the ended ones. */
const SWEEP_AT = 10_000;

interface Window {
  points: number;
  /** Epoch ms it ends. */
  readonly endsAt: number;
}

export class MemoryWindows {
  private readonly windows = new Map<string, Window>();

  constructor(private readonly now: () => number = Date.now) {}

  /** The window `id` while it runs (an ended one is dropped). */
  private running(id: string, t: number): Window | undefined {
    const w = this.windows.get(id);
    if (w && w.endsAt <= t) {
      this.windows.delete(id);
      return undefined;
    }
    return w;
  }

  /** What window `id` holds now; a window `windowS` long is reported whole when none runs. */
  peek(id: string, windowS: number): WindowCount {
    const t = this.now();
    const w = this.running(id, t);
    return w ? { consumedPoints: w.points, msBeforeNext: w.endsAt - t } : { consumedPoints: 0, msBeforeNext: windowS * 1000 };
  }

  /**
   * Adds `points` (negative: gives back) to window `id`, starting one `windowS` long when none
   * runs; the count never goes below 0. @returns what it holds after.
   */
  add(id: string, points: number, windowS: number): WindowCount {
    const t = this.now();
    let w = this.running(id, t);
    if (!w) {
      if (this.windows.size >= SWEEP_AT) this.sweep(t);
      w = { points: 0, endsAt: t + windowS * 1000 };
      this.windows.set(id, w);
    }
    w.points = Math.max(0, w.points + points);
    return { consumedPoints: w.points, msBeforeNext: w.endsAt - t };
  }

  private sweep(t: number): void {
    this.windows.forEach((w, id) => {
      if (w.endsAt <= t) this.windows.delete(id);
    });
  }
}
