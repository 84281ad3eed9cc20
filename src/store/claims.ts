/**
 * One-time claims in the shared store: of every replica that asks for the claim `name`
 * before `untilMs`, exactly one gets it (budget alerts: one webhook per threshold per
 * period). On Redis it is `SET <prefix>:once:<name> 1 PXAT <untilMs> NX` (PXAT: Redis 6.2+,
 * https://redis.io/docs/latest/commands/set/). In memory mode, and while Redis is away,
 * this replica's own record decides: a claim made during an outage may be made again by
 * another replica once Redis is back (at least once rather than never).
 */
import type { Cluster, Redis } from 'ioredis';
import type { ViaStore } from './spend.js';

/** Local records kept at most (expired ones are dropped first). */
const MAX_LOCAL = 10_000;
/** After giving a claim back, this replica waits this long before it claims it again. */
export const RECLAIM_AFTER_MS = 60_000;

/** A claim this caller holds. */
export interface Claim {
  /**
   * Gives it back (a webhook that could not be told, a shutdown before it was): another
   * replica, or this one after {@link RECLAIM_AFTER_MS}, may claim it again. Never rejects.
   */
  release(): Promise<void>;
}

export class OnceClaims {
  /** Claims this replica made or saw taken: key -> until (epoch ms). */
  private readonly local = new Map<string, number>();

  /**
   * @param via runs a call on Redis or locally (store/index.ts).
   * @param client the ioredis client (null in memory mode).
   * @param prefix the store's key prefix with its hash tag.
   */
  constructor(
    private readonly via: ViaStore,
    private readonly client: Redis | Cluster | null,
    private readonly prefix: string,
  ) {}

  /** The claim for the one caller that gets `name` until `untilMs` (epoch ms); null for every other. */
  async claim(name: string, untilMs: number): Promise<Claim | null> {
    const k = `${this.prefix}:once:${name}`;
    const seen = this.local.get(k);
    if (seen !== undefined && seen > Date.now()) return null;
    const got = await this.via(
      async () => {
        const ok = (await this.client!.set(k, '1', 'PXAT', Math.ceil(untilMs), 'NX')) === 'OK';
        this.remember(k, untilMs);
        return ok;
      },
      async () => {
        this.remember(k, untilMs);
        return true;
      },
    );
    return got ? { release: () => this.release(k, untilMs) } : null;
  }

  private async release(k: string, untilMs: number): Promise<void> {
    this.remember(k, Math.min(untilMs, Date.now() + RECLAIM_AFTER_MS));
    await this.via(
      async () => void (await this.client!.del(k)),
      async () => undefined,
    ).catch(() => undefined);
  }

  private remember(k: string, untilMs: number): void {
    if (this.local.size >= MAX_LOCAL) {
      const now = Date.now();
      for (const [key, until] of this.local) if (until <= now) this.local.delete(key);
      if (this.local.size >= MAX_LOCAL) this.local.delete(this.local.keys().next().value!);
    }
    this.local.set(k, untilMs);
  }
}
