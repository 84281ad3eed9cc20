/**
 * Peak-sensitive EWMA of each target's latency (time to first token for streams, total
 * time otherwise), after Finagle's "peak EWMA" load balancer: a sample above the estimate
 * replaces it at once (a target that turns slow loses traffic on its first slow answer);
 * a lower one is blended in with weight exp(-Δt/τ). While a target gets no traffic its
 * estimate decays toward zero with time constant 3τ, so a recovered target is tried again.
 */
export class LatencyBoard {
  private readonly est = new Map<string, { ewma: number; at: number }>();

  constructor(
    private readonly decayMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  /** Adds one latency sample, ms. */
  observe(key: string, ms: number): void {
    const t = this.now();
    const cur = this.est.get(key);
    const base = this.estimate(key);
    if (!cur || ms >= base) {
      this.est.set(key, { ewma: ms, at: t });
      return;
    }
    const w = Math.exp(-Math.max(0, t - cur.at) / this.decayMs);
    this.est.set(key, { ewma: base * w + ms * (1 - w), at: t });
  }

  /** The current estimate, ms; 0 for a target never measured (it gets explored first). */
  estimate(key: string): number {
    const cur = this.est.get(key);
    if (!cur) return 0;
    const idle = Math.max(0, this.now() - cur.at);
    return cur.ewma * Math.exp(-idle / (3 * this.decayMs));
  }
}

/**
 * How long a served call holds its place on an account, send to release (for a stream, its
 * last byte: the provider counts the call until then), as an EWMA per account (weight 0.2 per
 * sample). It is what a request waiting for a full account waits on, which the latency above
 * is not for streams (time to first token). Per replica, like the latency.
 */
export class HoldTimes {
  private readonly est = new Map<string, number>();

  /** One served call on account `upstream` held its place `ms`. */
  observe(upstream: string, ms: number): void {
    const cur = this.est.get(upstream);
    this.est.set(upstream, cur === undefined ? ms : cur + (ms - cur) * 0.2);
  }

  /** The typical hold time, ms; 0 for an account with no served call yet. */
  estimate(upstream: string): number {
    return this.est.get(upstream) ?? 0;
  }
}
