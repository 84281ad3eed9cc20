/**
 * The failed-auth throttle. It answers two questions before a key is accepted or refused:
 * has this very key failed too often (then 429, whoever sends it), and has this address sent
 * too many keys that were never valid here (then 429 for such keys from it).
 *
 * A valid key is never refused because another key failed: the address count only ever
 * blocks keys that are unknown, and it only counts keys that never authenticated. A key
 * that once worked (rotated out of the config, or left in one agent's environment) is a
 * stale key: it is throttled on its own and does not count against the address, so one
 * misconfigured agent on a shared CI host or behind an ingress cannot lock out its
 * neighbours. Counts are per replica, in memory (`rate-limiter-flexible`).
 */
import { RateLimiterMemory } from 'rate-limiter-flexible';

/** Failures are counted per one-minute window. */
const WINDOW_S = 60;
/** How many digests of keys that once worked are remembered (oldest forgotten first). */
const KNOWN_MAX = 10_000;

/** Why a presented key is refused before it is checked: the key itself, or its address. */
export interface ThrottleVerdict {
  readonly by: 'key' | 'address';
  /** Seconds until the window ends (at least 1). */
  readonly retryAfterS: number;
}

/** Per presented key and per address (for never-valid keys), `max` failures a minute each. */
export class AuthThrottle {
  private readonly perKey: RateLimiterMemory;
  private readonly perAddress: RateLimiterMemory;
  /** Hex digests of keys that authenticated at least once (insertion order = age). */
  private readonly known = new Map<string, true>();

  constructor(private readonly max = 10) {
    this.perKey = new RateLimiterMemory({ points: max, duration: WINDOW_S, keyPrefix: 'k' });
    this.perAddress = new RateLimiterMemory({ points: max, duration: WINDOW_S, keyPrefix: 'a' });
  }

  /**
   * Whether the key with hex SHA-256 `digest` is blocked on its own, checked before the key
   * is compared with the config. The digest, never the key, is what is counted.
   */
  async keyBlocked(digest: string): Promise<ThrottleVerdict | null> {
    return this.verdict(this.perKey, digest, 'key');
  }

  /** Whether `ip` may not present keys that never worked here; checked only for such keys. */
  async addressBlocked(ip: string): Promise<ThrottleVerdict | null> {
    return this.verdict(this.perAddress, ip, 'address');
  }

  /** Marks `digest` as a key that worked, so later failures of it never count against an address. */
  remember(digest: string): void {
    if (this.known.has(digest)) return;
    this.known.set(digest, true);
    if (this.known.size > KNOWN_MAX) this.known.delete(this.known.keys().next().value!);
  }

  /** Whether `digest` authenticated at least once on this replica (or was in an earlier config). */
  wasValid(digest: string): boolean {
    return this.known.has(digest);
  }

  /** Counts one failed authentication of `digest` from `ip` (the address only for never-valid keys). */
  async failed(ip: string, digest: string): Promise<void> {
    await this.perKey.consume(digest, 1).catch(() => {});
    if (!this.wasValid(digest)) await this.perAddress.consume(ip, 1).catch(() => {});
  }

  private async verdict(lim: RateLimiterMemory, id: string, by: ThrottleVerdict['by']): Promise<ThrottleVerdict | null> {
    const r = await lim.get(id);
    return r && r.consumedPoints >= this.max ? { by, retryAfterS: Math.max(1, Math.ceil(r.msBeforeNext / 1000)) } : null;
  }
}
