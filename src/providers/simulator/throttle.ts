/**
 * One simulated provider account's reaction to reasoning bursts (docs/simulator.md).
 *
 * A call is *deep* when its upstream model id contains `reasoner` and its
 * `reasoning_effort` is one of `deep_efforts`. The account counts the deep calls that are
 * in flight and started less than `window_ms` ago (the same definition as the gateway's
 * window: a finished call stops counting, and so does one older than the window). A deep
 * call that arrives when that count, itself included, exceeds `deep_threshold` finds the
 * account congested: with probability `reject_share` it is refused with a 429, otherwise
 * it is admitted but stalls. Non-deep calls are never throttled.
 *
 * The random draws come from a seeded PRNG, one draw per congested call, so the same seed
 * and the same arrival order give the same outcomes.
 */
import type { SimulatorConfig } from '../../config/schema.js';

export type ThrottleConfig = SimulatorConfig['throttle'];

/** mulberry32: a small, fast, well-mixed 32-bit PRNG; plenty for simulation draws. */
export class Prng {
  private state: number;

  constructor(seed: number) {
    this.state = seed >>> 0;
  }

  /** Uniform in [0, 1). */
  next(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  }
}

export interface ThrottleStats {
  /** Every chat request the account received. */
  requests: number;
  /** Deep requests among them. */
  deep: number;
  /** Deep requests that found the account congested (= rejected_429 + stalled). */
  congested: number;
  /** Congested deep requests answered 429. */
  rejected_429: number;
  /** Congested deep requests admitted with a stall. */
  stalled: number;
  /** Highest number of deep calls in the window right after one was admitted. */
  peak_deep_in_window: number;
  /** Deep calls in the window now. */
  deep_in_window: number;
}

export type Admission =
  | { readonly kind: 'reject' }
  | {
      readonly kind: 'normal' | 'stall';
      /** Takes the call out of the window; idempotent, a no-op for non-deep calls. */
      readonly release: () => void;
    };

const NOOP = (): void => {};

export class AccountThrottle {
  /** call id -> start (epoch ms) of the deep calls in flight. */
  private window = new Map<number, number>();
  private nextId = 0;
  private prng: Prng;
  private counters: Omit<ThrottleStats, 'deep_in_window'> = AccountThrottle.zero();

  constructor(
    private readonly config: ThrottleConfig,
    private readonly seed: number,
    private readonly now: () => number = Date.now,
  ) {
    this.prng = new Prng(seed);
  }

  private static zero(): Omit<ThrottleStats, 'deep_in_window'> {
    return { requests: 0, deep: 0, congested: 0, rejected_429: 0, stalled: 0, peak_deep_in_window: 0 };
  }

  /** Whether a request to `model` with this `reasoning_effort` is deep for the account. */
  isDeep(model: string | undefined, effort: unknown): boolean {
    return /reasoner/i.test(model ?? '') && typeof effort === 'string' && this.config.deep_efforts.includes(effort);
  }

  /** Deep calls in flight that started within the window. */
  inWindow(): number {
    const oldest = this.now() - this.config.window_ms;
    for (const [id, start] of this.window) if (start <= oldest) this.window.delete(id);
    return this.window.size;
  }

  /** Decides one arriving request. Throttling applies only when `enabled`; stats are kept either way. */
  admit(deep: boolean): Admission {
    this.counters.requests++;
    if (!deep) return { kind: 'normal', release: NOOP };
    this.counters.deep++;
    const count = this.inWindow() + 1;
    let kind: 'normal' | 'stall' = 'normal';
    if (this.config.enabled && count > this.config.deep_threshold) {
      this.counters.congested++;
      if (this.prng.next() < this.config.reject_share) {
        this.counters.rejected_429++;
        return { kind: 'reject' };
      }
      this.counters.stalled++;
      kind = 'stall';
    }
    const id = this.nextId++;
    const window = this.window;
    window.set(id, this.now());
    this.counters.peak_deep_in_window = Math.max(this.counters.peak_deep_in_window, window.size);
    // Bound to this generation's map: a call admitted before reset() cannot touch the new one.
    return { kind, release: () => void window.delete(id) };
  }

  stats(): ThrottleStats {
    return { ...this.counters, deep_in_window: this.inWindow() };
  }

  /** Forgets every call in the window, zeroes the stats and re-seeds the PRNG. */
  reset(): void {
    this.window = new Map();
    this.counters = AccountThrottle.zero();
    this.prng = new Prng(this.seed);
  }
}
