/**
 * Retry budget (after Finagle's RetryBudget and Envoy's retry budgets): over a sliding
 * window, retries may be at most `ratio` of requests, or `min_retries` if that is larger
 * (so a quiet gateway can still retry).
 * In a total outage every first attempt still goes out, but retries stop multiplying load.
 */
import type { RoutingConfig } from '../config/schema.js';

const BUCKETS = 10;

export class RetryBudget {
  private readonly bucketMs: number;
  private readonly requests = new Array<number>(BUCKETS).fill(0);
  private readonly retries = new Array<number>(BUCKETS).fill(0);
  private bucketAt = 0;

  constructor(
    private readonly cfg: RoutingConfig['retry_budget'],
    private readonly now: () => number = Date.now,
  ) {
    this.bucketMs = Math.max(1, Math.floor(cfg.window_ms / BUCKETS));
  }

  private rotate(): number {
    const slot = Math.floor(this.now() / this.bucketMs);
    const gap = Math.min(BUCKETS, slot - this.bucketAt);
    for (let i = 1; i <= gap; i++) {
      const idx = (this.bucketAt + i) % BUCKETS;
      this.requests[idx] = 0;
      this.retries[idx] = 0;
    }
    if (gap > 0) this.bucketAt = slot;
    return slot % BUCKETS;
  }

  /** Counts one client request. */
  onRequest(): void {
    this.requests[this.rotate()]!++;
  }

  /** Whether a retry is left in the budget now (takes none). */
  hasRoom(): boolean {
    this.rotate();
    const reqs = this.requests.reduce((a, b) => a + b, 0);
    const used = this.retries.reduce((a, b) => a + b, 0);
    return used < Math.max(this.cfg.min_retries, Math.floor(reqs * this.cfg.ratio));
  }

  /** Takes one retry from the budget; false when it is spent. */
  tryRetry(): boolean {
    if (!this.hasRoom()) return false;
    this.retries[this.rotate()]!++;
    return true;
  }
}
