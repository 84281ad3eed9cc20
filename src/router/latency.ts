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
