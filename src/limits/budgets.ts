/**
 * Budgets, shared across replicas through the store's spend counters (store/spend.ts:
 * `INCRBYFLOAT` expiring at the period end, exactly once across Redis outages):
 *
 * - before a request, ONE read (`MGET`) of every budget it may count against: the key's own
 *   (`keys[].limits.budget_usd`), the tag budgets whose tags it carries, and every account
 *   budget. A spent key or tag budget refuses it (429 `insufficient_quota`, naming the
 *   budget); a spent account budget makes the route pass that account over (router/run.ts).
 * - after it, ONE pipelined write adding its cost to each of them (the account's only when
 *   that account served it) and to the daily spend per key and per model; each new total is
 *   checked against the alert thresholds (budget-alerts.ts: a store call only the first time
 *   a replica sees a threshold reached in a period), the alert sent off the request path.
 *
 * As for key budgets, the request that crosses a budget is served and the next is refused
 * (or routed around); requests already in flight when it is crossed still add their cost.
 */
import type { Caller } from '../auth/keys.js';
import type { BudgetConfig, ClientKeyConfig } from '../config/schema.js';
import type { BudgetAlertSettings } from '../config/types.js';
import type { GatewayError } from '../errors/codes.js';
import { recordBudgetRefusal, recordBudgetRemaining, recordLimitRejection } from '../metrics/record.js';
import type { Metrics } from '../metrics/registry.js';
import type { Tags } from '../record/tags.js';
import type { SpendStore } from '../store/roles.js';
import type { BudgetRead } from '../store/types.js';
import type { SpendAdd } from '../store/spend.js';
import type { BudgetAlerts } from './budget-alerts.js';
import { accountsSpentError, configuredLine, keyLine, spentError, tagsMatch, type BudgetLine, type BudgetScope } from './budget-lines.js';

/** What the request's config generation says about budgets, and the request's tags. */
export interface BudgetContext {
  readonly budgets: readonly BudgetConfig[];
  readonly alerts: BudgetAlertSettings | null;
  readonly tags: Tags;
}

/** Upstream accounts whose budget is spent, for one request: the route passes them over (router/run.ts). */
export interface SpentAccounts {
  /** Whether `upstream`'s budget is spent (an account passed over is remembered for `error`). */
  has(upstream: string): boolean;
  /** 503 naming the budgets of the accounts passed over so far, or null when none was. */
  error(): GatewayError | null;
}

/** What a request's check found, for its charge. */
export interface BudgetCheck {
  /** Key and tag budgets: charged whatever serves the request. */
  readonly lines: readonly BudgetLine[];
  /** Account budgets by upstream id: charged when that account served. */
  readonly accounts: ReadonlyMap<string, readonly BudgetLine[]>;
  /** Null when no account budget is spent. */
  readonly spent: SpentAccounts | null;
  readonly alerts: BudgetAlertSettings | null;
  /** The key's name, for its daily spend counter. */
  readonly keyName: string | null;
}

/** The budget lines a request counts against, before they are read (Budgets.plan). */
export interface BudgetPlan {
  /** Key and tag budgets: a spent one refuses the request. */
  readonly lines: readonly BudgetLine[];
  /** Account budgets: a spent one is passed over. */
  readonly accountLines: readonly BudgetLine[];
  readonly alerts: BudgetAlertSettings | null;
  readonly keyName: string | null;
}

/** The reads of a plan with no budget line (the common case): shared, nothing built per request. */
const NO_READS: readonly BudgetRead[] = Object.freeze([]);

/** The counters of `plan` to read, in the order `Budgets.evaluate` takes their spend. */
export function budgetReads(plan: BudgetPlan): readonly BudgetRead[] {
  if (plan.lines.length === 0 && plan.accountLines.length === 0) return NO_READS;
  const read = (l: BudgetLine, upstream: string | null): BudgetRead => ({ counter: l.counter, amountUsd: l.amountUsd, upstream });
  return [...plan.lines.map((l) => read(l, null)), ...plan.accountLines.map((l) => read(l, (l.scope as { upstream: string }).upstream))];
}

/** Where a finished request went: its account (budgets) and public model (daily spend). */
export interface Served {
  readonly upstream: string | null;
  readonly model: string | null;
}

/** One budget's state in its current period (`/admin/budgets`, metrics). */
export interface BudgetStatus {
  readonly name: string;
  readonly scope: BudgetScope;
  readonly period: 'day' | 'month';
  readonly period_id: string;
  readonly amount_usd: number;
  readonly spent_usd: number;
  readonly remaining_usd: number;
  readonly resets_at: string;
  readonly exhausted: boolean;
}

const NO_LINES: readonly BudgetLine[] = Object.freeze([]);
const NO_ACCOUNTS: ReadonlyMap<string, readonly BudgetLine[]> = new Map();

/** Daily spend counters per key and per model are kept this long after their day starts. */
const DAILY_KEEP_DAYS = 2;

const DAY_MS = 86_400_000;
/** The last UTC day asked for: [from, from + DAY_MS) and its YYYY-MM-DD. */
let day = { from: 0, id: '' };

/**
 * The UTC day of `ms` (epoch ms): its start and YYYY-MM-DD, computed once a day (epoch time
 * has no leap seconds, so every UTC day is DAY_MS long). `toISOString` per request was 0.8 %
 * of the gateway's CPU in an open-loop profile.
 */
function utcDay(ms: number): { readonly from: number; readonly id: string } {
  if (ms < day.from || ms >= day.from + DAY_MS) {
    const from = ms - (ms % DAY_MS);
    day = { from, id: new Date(from).toISOString().slice(0, 10) };
  }
  return day;
}

/** Most names whose daily counters are kept built (keys and models are configured: far fewer). */
const MAX_COUNTERS = 1024;
/** The daily counters built for the day `id`, by kind and name: one string per name a day, not one per request. */
let counters = { id: '', key: new Map<string, string>(), model: new Map<string, string>() };

/** The store counter of a key's or a model's spend on the UTC day of `ms` (epoch ms). */
function dailyCounter(kind: 'key' | 'model', name: string, ms: number): string {
  const { id } = utcDay(ms);
  if (counters.id !== id) counters = { id, key: new Map(), model: new Map() };
  const built = counters[kind];
  let counter = built.get(name);
  if (counter === undefined) {
    counter = `day:${id}:${kind}:${name}`;
    if (built.size < MAX_COUNTERS) built.set(name, counter);
  }
  return counter;
}

export class Budgets {
  /**
   * @param alerts the webhook sender (null: no alerts are ever sent).
   */
  constructor(
    private readonly store: SpendStore,
    private readonly metrics: Metrics,
    private readonly alerts: BudgetAlerts | null,
  ) {}

  /**
   * The budget lines the request counts against (read them with `budgetReads`, judge them with `evaluate`).
   * @param ctx null for a request outside the pipeline (passthrough): the key's own budget only.
   */
  plan(caller: Caller | null, ctx: BudgetContext | null): BudgetPlan {
    const own = caller?.limits?.budget_usd;
    const alerts = ctx?.alerts ?? null;
    const keyName = caller?.name ?? null;
    // No budget anywhere (the common case): nothing to read, no line built (bench:alloc).
    if (!own && (ctx?.budgets.length ?? 0) === 0) return { alerts, keyName, lines: NO_LINES, accountLines: NO_LINES };
    const now = new Date();
    const lines: BudgetLine[] = [];
    if (caller && own) lines.push(keyLine(caller.name, own, now));
    const accountLines: BudgetLine[] = [];
    for (const b of ctx?.budgets ?? []) {
      if (b.upstream !== undefined) accountLines.push(configuredLine(b, now));
      else if (b.tag && tagsMatch(b.tag, ctx!.tags)) lines.push(configuredLine(b, now));
    }
    return { alerts, keyName, lines, accountLines };
  }

  /**
   * Judges `plan` on the spend read for it (`spent[i]`, USD, of `budgetReads(plan)[i]`).
   * @throws GatewayError 429 `insufficient_quota` when the key's budget (GW_ERR_INSUFFICIENT_QUOTA)
   *         or a tag budget it carries (GW_ERR_BUDGET_SPENT) is spent, with `Retry-After`.
   */
  evaluate(plan: BudgetPlan, spent: readonly number[]): BudgetCheck {
    const { lines, accountLines } = plan;
    if (lines.length + accountLines.length === 0) {
      return { alerts: plan.alerts, keyName: plan.keyName, lines, accounts: lines === NO_LINES ? NO_ACCOUNTS : new Map(), spent: null };
    }
    const base = { alerts: plan.alerts, keyName: plan.keyName };
    lines.forEach((l, i) => {
      const s = spent[i]!;
      if ('key' in l.scope) recordBudgetRemaining(this.metrics, l.scope.key, Math.max(0, l.amountUsd - s));
      if (s < l.amountUsd) return;
      // A spent budget takes no more adds: an alert of it not delivered yet is retried here.
      this.alerts?.reached(l, s, base.alerts);
      if ('key' in l.scope) recordLimitRejection(this.metrics, l.scope.key, 'budget');
      else recordBudgetRefusal(this.metrics, l.name, 'refused');
      throw spentError(l, s);
    });
    const accounts = new Map<string, BudgetLine[]>();
    const over = new Map<string, { line: BudgetLine; spentUsd: number }[]>();
    accountLines.forEach((l, j) => {
      const id = (l.scope as { upstream: string }).upstream;
      accounts.set(id, [...(accounts.get(id) ?? []), l]);
      const s = spent[lines.length + j]!;
      if (s < l.amountUsd) return;
      over.set(id, [...(over.get(id) ?? []), { line: l, spentUsd: s }]);
      this.alerts?.reached(l, s, base.alerts);
    });
    return { ...base, lines, accounts, spent: over.size === 0 ? null : this.spentAccounts(over) };
  }

  private spentAccounts(over: ReadonlyMap<string, readonly { line: BudgetLine; spentUsd: number }[]>): SpentAccounts {
    const passed = new Set<string>();
    return {
      has: (upstream) => {
        const o = over.get(upstream);
        if (!o) return false;
        // Counted once per request and account, however often the route looks.
        if (!passed.has(upstream)) for (const { line } of o) recordBudgetRefusal(this.metrics, line.name, 'routed_around');
        passed.add(upstream);
        return true;
      },
      error: () => (passed.size === 0 ? null : accountsSpentError([...passed].flatMap((u) => over.get(u) ?? []))),
    };
  }

  /**
   * Adds a finished request's cost (USD) to every budget it counts against and to the daily
   * spend of its key and model, in one store call; sends the alerts the new totals call for
   * (not awaited). Never rejects.
   */
  async charge(check: BudgetCheck, costUsd: number, served: Served): Promise<void> {
    if (!(costUsd > 0)) return;
    const accountLines = served.upstream !== null ? check.accounts.get(served.upstream) : undefined;
    const lines = accountLines ? [...check.lines, ...accountLines] : check.lines;
    const adds: SpendAdd[] = lines.map((l) => ({ key: l.counter, amount: costUsd, expireAtMs: l.endMs }));
    const now = Date.now();
    const expire = utcDay(now).from + DAILY_KEEP_DAYS * DAY_MS;
    if (check.keyName !== null) adds.push({ key: dailyCounter('key', check.keyName, now), amount: costUsd, expireAtMs: expire });
    if (served.model !== null) adds.push({ key: dailyCounter('model', served.model, now), amount: costUsd, expireAtMs: expire });
    const totals = await this.store.addSpend(adds).catch(() => null);
    if (!totals) return;
    lines.forEach((l, i) => {
      const total = totals[i]!;
      if ('key' in l.scope) recordBudgetRemaining(this.metrics, l.scope.key, Math.max(0, l.amountUsd - total));
      this.alerts?.reached(l, total, check.alerts);
    });
  }

  /** Every configured budget and every key budget, in one store read (`/admin/budgets`, metrics). */
  async status(budgets: readonly BudgetConfig[], keys: readonly ClientKeyConfig[]): Promise<BudgetStatus[]> {
    const now = new Date();
    const lines = [
      ...budgets.map((b) => configuredLine(b, now)),
      ...keys.flatMap((k) => (k.limits?.budget_usd ? [keyLine(k.name, k.limits.budget_usd, now)] : [])),
    ];
    const spent = await this.store.getSpend(lines.map((l) => l.counter));
    return lines.map((l, i) => {
      const s = spent[i]!;
      return {
        name: l.name,
        scope: l.scope,
        period: l.period,
        period_id: l.periodId,
        amount_usd: l.amountUsd,
        spent_usd: s,
        remaining_usd: Math.max(0, l.amountUsd - s),
        resets_at: new Date(l.endMs).toISOString(),
        exhausted: s >= l.amountUsd,
      };
    });
  }

  /** Today's (UTC) spend of a key or a model, USD. */
  async spendToday(kind: 'key' | 'model', name: string): Promise<number> {
    return (await this.store.getSpend([dailyCounter(kind, name, Date.now())]))[0]!;
  }
}
