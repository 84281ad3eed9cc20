/**
 * Session pins for the `sticky` strategy: session key -> target key, expiring `ttl_ms`
 * after the session's last request. Bounded: the oldest pins go first past `maxPins`.
 */
export class SessionPins {
  private readonly pins = new Map<string, { target: string; expiresAt: number }>();

  constructor(
    private readonly ttlMs: number,
    private readonly maxPins = 100_000,
    private readonly now: () => number = Date.now,
  ) {}

  get(session: string): string | undefined {
    const p = this.pins.get(session);
    if (!p) return undefined;
    if (p.expiresAt <= this.now()) {
      this.pins.delete(session);
      return undefined;
    }
    return p.target;
  }

  /** Pins (or re-pins) a session and refreshes its TTL. */
  set(session: string, target: string, ttlMs: number = this.ttlMs): void {
    this.pins.delete(session);
    this.pins.set(session, { target, expiresAt: this.now() + ttlMs });
    if (this.pins.size > this.maxPins) {
      const oldest = this.pins.keys().next().value;
      if (oldest !== undefined) this.pins.delete(oldest);
    }
  }
}
