/**
 * The views a route decides on (router/run.ts): how busy each target's account is, its learned
 * capacity and its cooldown. A request's first attempt orders its targets on the store's
 * cached views while they are fresh (store/view-cache.ts: no round trip of its own; the
 * admission re-checks every limit on Redis); every other decision is made on views read for
 * it: a pass that would skip, shed or queue on cached views reads them again first, an
 * admission that refused every target on cached views hands back the views it read
 * (router/take.ts), and retries always read (their decisions draw on the retry budget).
 */
import type { Target } from '../config/types.js';
import type { RouterSlots } from '../store/roles.js';
import type { TargetView } from '../store/types.js';
import { VIEW_FRESH_MS } from '../store/view-cache.js';
import { targetRef } from './attempt.js';

export type Views = ReadonlyMap<Target, TargetView>;

export class RouteViews {
  /** Views an admission just read (the next pass decides on them). */
  private given: Views | null = null;
  /** The next pass reads from the store, whatever the cache holds. */
  private read = false;

  constructor(private readonly store: RouterSlots) {}

  /**
   * The views of `targets`, and whether they were read for this decision (`fresh`) or come
   * from the store's cache (only when `cacheOk`).
   */
  async of(targets: readonly Target[], cacheOk: boolean): Promise<{ views: Views; fresh: boolean }> {
    const given = this.given;
    this.given = null;
    if (given && targets.every((t) => given.has(t))) return { views: given, fresh: true };
    const refs = targets.map(targetRef);
    const cached = cacheOk && !this.read ? this.store.cachedView(refs, VIEW_FRESH_MS) : null;
    this.read = false;
    const views = cached ?? (await this.store.view(refs));
    return { views: new Map(targets.map((t, i) => [t, views[i]!])), fresh: cached === null };
  }

  /**
   * A pass is about to skip, shed or queue on `seen`: true when they were cached (the pass
   * must start again: the next `of` reads the views from the store), false when fresh.
   */
  reread(seen: { fresh: boolean }): boolean {
    if (!seen.fresh) this.read = true;
    return !seen.fresh;
  }

  /** The next pass decides on `views` (an admission's answer, read just now). */
  use(views: Views): void {
    this.given = views;
  }
}
