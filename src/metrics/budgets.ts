/**
 * The budget metrics (limits/budgets.ts, limits/budget-alerts.ts), in a file of their own
 * because registry.ts is at its size cap; registry.ts creates them on its registry. The
 * `budget` label is a configured budget name or `key:<key name>`: bounded by the config.
 */
import { Counter, Gauge, type Registry } from 'prom-client';

export interface BudgetMetrics {
  /** Requests a spent budget refused (`refused`: key and tag budgets) or routed around (`routed_around`: account budgets). */
  readonly refusals: Counter<'budget' | 'action'>;
  /** Alert webhooks by result: sent (a 2xx answer), failed (every try failed). */
  readonly webhooks: Counter<'result'>;
  readonly spent: Gauge<'budget'>;
  readonly amount: Gauge<'budget'>;
}

/** One budget's numbers, read at scrape time. */
export interface BudgetReading {
  readonly budget: string;
  readonly spentUsd: number;
  readonly amountUsd: number;
}

/**
 * Creates the budget metrics on `registers`.
 * @param read every budget's spend now (one store read), set by the app; unset: the gauges stay empty.
 */
export function createBudgetMetrics(registers: Registry[], read: () => (() => Promise<BudgetReading[]>) | undefined): BudgetMetrics {
  const readings = (): Promise<BudgetReading[]> => read()?.().catch(() => []) ?? Promise.resolve([]);
  return {
    refusals: new Counter({
      name: 'switchyard_budget_refusals_total',
      help: 'Requests a spent budget refused (action=refused: key and tag budgets, 429 insufficient_quota) or routed around (action=routed_around: an account budget), by budget name.',
      labelNames: ['budget', 'action'],
      registers,
    }),
    webhooks: new Counter({
      name: 'switchyard_budget_webhooks_total',
      help: 'Budget alert webhooks by result: sent (answered 2xx), failed (every try failed; logged without the URL).',
      labelNames: ['result'],
      registers,
    }),
    spent: new Gauge({
      name: 'switchyard_budget_spent_usd',
      help: 'Spend in USD in the current period per budget (configured budgets by name, key budgets as key:<name>), across replicas.',
      labelNames: ['budget'],
      registers,
      // Read from the shared store by every worker: the same number, not a sum.
      aggregator: 'max',
      async collect() {
        const r = await readings();
        this.reset();
        for (const b of r) this.set({ budget: b.budget }, b.spentUsd);
      },
    }),
    amount: new Gauge({
      name: 'switchyard_budget_amount_usd',
      help: 'The amount in USD of each budget for its period (the limit switchyard_budget_spent_usd is held to).',
      labelNames: ['budget'],
      registers,
      // Read from the shared store by every worker: the same number, not a sum.
      aggregator: 'max',
      async collect() {
        const r = await readings();
        this.reset();
        for (const b of r) this.set({ budget: b.budget }, b.amountUsd);
      },
    }),
  };
}
