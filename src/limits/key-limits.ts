/**
 * Per-key limits and budgets, shared across replicas through the store:
 *
 * - `rpm` / `tpm`: fixed one-minute windows in the store (`rate.ts`; store/types.ts
 *   KeyWindows). Tokens are reserved up front (prompt tokens from the counter the app hands
 *   in, plus `max_completion_tokens` / `max_tokens`, else {@link DEFAULT_COMPLETION_TOKENS})
 *   and settled to the real usage afterwards (the difference charged or given back).
 * - `max_concurrency`: an in-flight slot in the store (the same leases as upstream
 *   concurrency, under `key:<name>`), released on every outcome.
 *   The slot and both windows are taken all or nothing, in one store call (key-take.ts).
 * - `budget_usd`: spend per key per UTC day / month kept in the store (INCRBYFLOAT with
 *   expiry at the period end), checked before the request and added after it, in the same
 *   store calls as the tag and account budgets (budgets.ts).
 */
import type { Caller } from '../auth/keys.js';
import { GatewayError } from '../errors/codes.js';
import { recordBudgetRemaining, recordLimitRejection } from '../metrics/record.js';
import type { Metrics } from '../metrics/registry.js';
import type { KeyWindows, SpendStore } from '../store/roles.js';
import type { Prompt } from '../usage/prompt-parts.js';
import type { BudgetAlerts } from './budget-alerts.js';
import { keyLine } from './budget-lines.js';
import { Budgets, type BudgetContext, type Served, type SpentAccounts } from './budgets.js';
import { DEFAULT_COMPLETION_TOKENS, type LimitReason, type SettledTokens, type TakeInput } from './key-take.js';
import { AdmissionGate } from './gate.js';
import { keyWindow, type Limits } from './rate.js';

export { DEFAULT_COMPLETION_TOKENS, tpmTokens, type SettledTokens } from './key-take.js';

/** Counts the input tokens of a request's prompt (usage/estimate.ts `countPromptTokens`). */
export type PromptTokenCounter = (prompt: Prompt) => Promise<number>;

/** What a request holds while it runs; `settle` exactly once at the end. */
export interface Admission {
  readonly headers: Record<string, string>;
  /** Upstream accounts whose budget is spent (the route passes them over), or null. */
  readonly spentAccounts: SpentAccounts | null;
  /**
   * Returns what the request holds and adds its cost (USD) to its budgets and daily spend.
   * @param served where it went (its account's budget is charged only when given).
   */
  settle(usage: SettledTokens, costUsd: number, served?: Served): Promise<void>;
}

/** What the `tpm` reservation reads of a request: its prompt (absent: none, e.g. passthrough) and its output cap. */
type AdmitBody = { prompt?: Prompt; max_tokens?: unknown; max_completion_tokens?: unknown };

/** The stores the key limits use (StateStore's `keyWindows`, and StateStore as the spend store). */
export interface KeyLimitStores {
  /** The keys' slots and rate windows. */
  readonly windows: KeyWindows;
  /** Budget and daily spend counters (and the alerts' claims). */
  readonly spend: SpendStore;
}

/** Per-key limits and budgets of the client keys, shared across replicas through the store. */
export class KeyLimits {
  private readonly windows: KeyWindows;
  private readonly spend: SpendStore;
  /** Key, tag and account budgets (budgets.ts). */
  readonly budgets: Budgets;

  /**
   * @param countPromptTokens input tokens of a request's prompt, for `tpm` reservations (the
   *        app passes `usage/estimate.ts`'s counter: text, tool calls and results, tool
   *        definitions, images and files).
   * @param alerts the budget webhook sender (absent: no alerts).
   */
  constructor(
    stores: KeyLimitStores,
    private readonly metrics: Metrics,
    private readonly countPromptTokens: PromptTokenCounter,
    alerts?: BudgetAlerts,
  ) {
    this.windows = stores.windows;
    this.spend = stores.spend;
    this.budgets = new Budgets(stores.spend, metrics, alerts ?? null);
  }

  private reject(caller: Caller, reason: LimitReason | 'budget', err: GatewayError): never {
    recordLimitRejection(this.metrics, caller.name, reason);
    throw err;
  }

  /** Current spend and rate usage of a key (admin view). */
  async status(caller: Caller): Promise<Record<string, unknown>> {
    const limits = caller.limits;
    if (!limits) return {};
    const out: Record<string, unknown> = {};
    if (limits.budget_usd) {
      const { counter, endMs } = keyLine(caller.name, limits.budget_usd);
      const [spent = 0] = await this.spend.getSpend([counter]);
      out['budget'] = {
        amount_usd: limits.budget_usd.amount,
        period: limits.budget_usd.period,
        spent_usd: spent,
        remaining_usd: Math.max(0, limits.budget_usd.amount - spent),
        resets_at: new Date(endMs).toISOString(),
      };
      recordBudgetRemaining(this.metrics, caller.name, Math.max(0, limits.budget_usd.amount - spent));
    }
    for (const [kind, max] of [
      ['rpm', limits.rpm],
      ['tpm', limits.tpm],
    ] as const) {
      if (!max) continue;
      const used = await this.windows.readWindow(keyWindow(kind, caller.name));
      out[kind] = { limit: max, used, remaining: Math.max(0, max - used) };
    }
    if (limits.max_concurrency) out['max_concurrency'] = limits.max_concurrency;
    return out;
  }

  /**
   * Checks every budget the request counts against (one store read: budgets.ts), then takes
   * what the key's rpm, tpm and concurrency limits ask for, or throws a 429 GatewayError
   * (nothing stays taken then).
   * @param ctx the generation's budgets and alerts and the request's tags; absent (passthrough):
   *        the key's own budget only.
   */
  async admit(caller: Caller | null, body: AdmitBody, ctx?: BudgetContext): Promise<Admission> {
    const gate = await this.prepare(caller, body, ctx);
    await gate.run();
    return gate;
  }

  /**
   * The request's admission, not made yet (limits/gate.ts): its `request` rides the route's
   * first store call, or `run` makes it on its own.
   */
  async prepare(caller: Caller | null, body: AdmitBody, ctx?: BudgetContext): Promise<AdmissionGate> {
    const plan = this.budgets.plan(caller, ctx ?? null);
    const limits = caller?.limits;
    const take = caller && limits ? await this.takeInput(caller, limits, body) : null;
    return new AdmissionGate(this.budgets, plan, take, this.spend);
  }

  /** What the key's take needs: its concurrency slot, rpm point and tpm reservation (key-take.ts). */
  private async takeInput(caller: Caller, limits: Limits, body: AdmitBody): Promise<TakeInput> {
    let tokens = 0;
    if (limits.tpm) {
      const max =
        typeof body.max_completion_tokens === 'number'
          ? body.max_completion_tokens
          : typeof body.max_tokens === 'number'
            ? body.max_tokens
            : DEFAULT_COMPLETION_TOKENS;
      const prompt = body.prompt ? await this.countPromptTokens(body.prompt) : 0;
      tokens = Math.max(1, prompt + Math.max(0, Math.floor(max)));
    }
    return { windows: this.windows, caller, limits, tokens, reject: (reason, err) => this.reject(caller, reason, err) };
  }

  /** Today's (UTC) spend of a key or a model, USD (the daily counters budgets.ts adds to). */
  spendToday(kind: 'key' | 'model', name: string): Promise<number> {
    return this.budgets.spendToday(kind, name);
  }
}
