/**
 * A request's first store call on Redis (RouterSlots.first, store/types.ts FirstCall): its
 * budget lines, its key's admission, its session pin and the admission of its first attempt,
 * as one op (`first`, store/redis-first-scripts.ts) of the turn's script call (store/batch.ts):
 * one command, one round trip before the upstream for every kind of request. Every key is
 * under the store's one hash tag, so on Redis Cluster the op runs on one slot.
 */
import { randomUUID } from 'node:crypto';
import type { TurnBatch } from './batch.js';
import { decodeAdmit, type RedisStore } from './redis.js';
import { decodeKeyAdmit, type RedisKeyWindows } from './redis-windows.js';
import type { SpendCounters } from './spend.js';
import type { AdmitResult, FirstCall, FirstResult, KeyAdmitted, TargetView } from './types.js';

const PIN_MODE = { sticky: 1, affinity: 2 } as const;

/** The `first` op's deadline on Redis's clock (`now`: its estimate, null: unknown, no deadline). */
const deadline = (now: number | null, timeoutMs: number): number => (now === null ? 0 : Math.ceil(now + timeoutMs / 2));

export class RedisFirst {
  /**
   * @param timeoutMs the store's command timeout: an op that runs later than half of it after
   *   it was sent (on Redis's clock, as the batch estimates it) takes nothing.
   */
  constructor(
    private readonly batch: TurnBatch,
    private readonly leaseMs: number,
    private readonly timeoutMs: number,
    private readonly slots: RedisStore,
    private readonly windows: RedisKeyWindows,
    private readonly spend: SpendCounters,
  ) {}

  /**
   * Runs `call` as one op of this turn's script call.
   * @returns what it did, its admission's candidates and views in `call`'s order; null when
   *   it ran past its deadline (nothing taken).
   * @throws when Redis does not answer (nothing is known to be taken then).
   */
  async first(call: FirstCall): Promise<FirstResult | null> {
    const budgets = call.gate?.budgets ?? [];
    const pending = budgets.map((b) => this.spend.pendingOf(b.counter));
    const key = call.gate?.key ? this.windows.admitPlan(call.gate.key) : null;
    const plan = this.slots.admitPlan(call.candidates, call.extra);
    const targets = [...call.candidates.map((c) => [c.key, c.upstream]), ...call.extra.map((t) => [t.key, t.upstream])];
    const id = randomUUID();
    const keys = [
      ...budgets.map((b) => this.spend.spendKey(b.counter)),
      ...(key?.keys ?? []),
      ...(call.pin ? [this.slots.key('pin', call.pin.session)] : []),
      ...plan.keys,
    ];
    const args = [
      budgets.length,
      key?.keys.length ?? 0,
      key?.args.length ?? 0,
      call.pin ? PIN_MODE[call.pin.mode] : 0,
      targets.length,
      call.candidates.length,
      deadline(this.batch.redisNow(), this.timeoutMs),
      ...budgets.flatMap((b, i) => [String(b.amountUsd), String(pending[i]!), b.upstream ?? '']),
      ...(key?.args ?? []),
      ...targets.flat(),
      ...plan.args,
      this.leaseMs,
      id,
    ];
    const out = await this.batch.send<unknown[] | 'late'>('first', keys, args);
    if (out === 'late') return null;
    const values = out[0] as string[];
    const spent = budgets.map((_b, i) => Number(values[i] ?? 0) + pending[i]!);
    const keyAdmitted: KeyAdmitted | null = key && Array.isArray(out[1]) ? decodeKeyAdmit(out[1] as (number | string)[], call.gate!.key!, key.id) : null;
    const pin = typeof out[2] === 'string' && out[2] !== '' ? out[2] : undefined;
    const admit = Array.isArray(out[3])
      ? this.reorder(
          out[3] as (number | string)[],
          (out[4] as number[]).map((i) => Number(i) - 1),
          call,
          id,
        )
      : null;
    return { gate: { spent, key: keyAdmitted }, pin, admit, redo: Number(out[5]) === 1 };
  }

  /** The admission's reply, made in `order` (0-based indexes into candidates then extra), back in `call`'s order. */
  private reorder(out: readonly (number | string)[], order: readonly number[], call: FirstCall, id: string): AdmitResult {
    const n = call.candidates.length;
    const tried = order.filter((i) => i < n).map((i) => call.candidates[i]!);
    const got = decodeAdmit(out, tried, order.length, id);
    const views: TargetView[] = new Array<TargetView>(order.length);
    order.forEach((i, j) => (views[i] = got.views[j]!));
    const refused: AdmitResult['refused'][number][] = new Array(n).fill(null);
    order.forEach((i, j) => {
      if (i < n) refused[i] = got.refused[j] ?? null;
    });
    const taken = got.taken ? { index: order[got.taken.index]!, lease: got.taken.lease } : null;
    return { taken, refused, views };
  }
}
