/** The failed-auth throttle: a client address that keeps sending bad keys gets 429s for a while. */
import { RateLimiterMemory } from 'rate-limiter-flexible';

/** Failures are counted per one-minute window. */
const WINDOW_S = 60;

/** Failed-auth throttle per client address (per replica): after `max` failures in a minute, 429. */
export class AuthThrottle {
  private readonly lim: RateLimiterMemory;

  constructor(private readonly max = 10) {
    this.lim = new RateLimiterMemory({ points: max, duration: WINDOW_S });
  }

  /** Seconds to wait when `ip` is blocked, else 0. */
  async blocked(ip: string): Promise<number> {
    const r = await this.lim.get(ip);
    return r && r.consumedPoints >= this.max ? Math.max(1, Math.ceil(r.msBeforeNext / 1000)) : 0;
  }

  /** Counts one failed authentication from `ip`. */
  async failed(ip: string): Promise<void> {
    await this.lim.consume(ip, 1).catch(() => {});
  }
}
