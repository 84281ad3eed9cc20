/**
 * A request's admission under its key's limits and its budgets, made in two steps so that on
 * Redis it rides the request's first store call (store/types.ts FirstCall: one round trip
 * before the upstream): `request` is what to read and take (budget lines, the key's slot and
 * windows), `accept` judges the store's answer. `run` does both on its own, for a request that
 * never reaches the route (passthrough, a warmup, a prompt refused for its size).
 */
import type { SpendStore } from '../store/roles.js';
import { settled } from '../util/settled.js';
import type { FirstGate, GateAnswer } from '../store/types.js';
import { budgetReads, type BudgetCheck, type BudgetPlan, type Budgets, type Served, type SpentAccounts } from './budgets.js';
import { HOLDS_NOTHING, keyAdmission, keyHeld, type Held, type SettledTokens, type TakeInput } from './key-take.js';

const NOWHERE: Served = { upstream: null, model: null };

export class AdmissionGate {
  /** Key-limit headers (`x-ratelimit-*`), once accepted. */
  headers: Record<string, string> = {};
  /** Upstream accounts whose budget is spent (the route passes them over), or null; known once accepted. */
  spentAccounts: SpentAccounts | null = null;
  /** What the store must read and take, or null when nothing (no budget, no key limit). */
  readonly request: FirstGate | null;
  private held: Held = HOLDS_NOTHING;
  private check: BudgetCheck | null = null;
  private decided = false;
  private settled = false;

  /** @param take the key's take (null: a request without key limits). */
  constructor(
    private readonly budgets: Budgets,
    private readonly plan: BudgetPlan,
    private readonly take: TakeInput | null,
    private readonly spend: SpendStore,
  ) {
    const reads = budgetReads(plan);
    const key = take ? keyAdmission(take) : null;
    this.request = reads.length === 0 && !key ? null : { budgets: reads, key };
  }

  /** Whether the gate still waits for its answer (`accept` or `run`). */
  get pending(): boolean {
    return !this.decided;
  }

  /**
   * Judges the store's answer to `request`.
   * @returns the spent accounts (null: none).
   * @throws the 429 of a spent key or tag budget, or of the key's refused slot or window (nothing is held then).
   */
  accept(answer: GateAnswer): SpentAccounts | null {
    this.decided = true;
    try {
      this.check = this.budgets.evaluate(this.plan, answer.spent);
    } catch (err) {
      // The store's op takes nothing past a spent budget; a slot taken all the same goes back.
      if (answer.key?.lease) void this.take?.windows.release(answer.key.lease);
      throw err;
    }
    if (this.take && this.request?.key) this.held = keyHeld(this.take, answer.key!);
    this.headers = this.held.headers;
    this.spentAccounts = this.check.spent;
    return this.spentAccounts;
  }

  /** Reads and takes `request` on its own (budgets first, the key only when they pass), and judges it; @throws as `accept`. */
  async run(): Promise<void> {
    if (this.decided) return;
    const reads = this.request?.budgets ?? [];
    const spent = reads.length > 0 ? await this.spend.getSpend(reads.map((r) => r.counter)) : [];
    this.decided = true;
    this.check = this.budgets.evaluate(this.plan, spent);
    const key = this.request?.key;
    if (this.take && key) this.held = keyHeld(this.take, await this.take.windows.admitKey(key));
    this.headers = this.held.headers;
    this.spentAccounts = this.check.spent;
  }

  /**
   * Returns what the request holds and adds its cost (USD) to its budgets and daily spend.
   * @param served where it went (its account's budget is charged only when given).
   */
  async settle(usage: SettledTokens, costUsd: number, served: Served = NOWHERE): Promise<void> {
    if (this.settled) return;
    this.settled = true;
    await settled(this.held.release(usage), this.check ? this.budgets.charge(this.check, costUsd, served) : null);
  }
}
