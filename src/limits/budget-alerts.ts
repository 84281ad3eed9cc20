/**
 * Budget alerts: when a budget's spend reaches one of `budget_alerts.thresholds` (shares of
 * its amount), one JSON POST to `budget_alerts.url`:
 *
 *   {"budget":"search","scope":{"tag":{"team":"search"}},"period":"month","period_id":"2026-12",
 *    "resets_at":"2027-01-01T00:00:00.000Z","threshold":0.8,"spent_usd":8.02,"amount_usd":10,
 *    "at":"2026-12-14T09:30:00.000Z"}
 *
 * Once per budget, amount, threshold and period across every replica: after each add, every
 * threshold the new total has reached is claimed in the store (`SET NX` kept until the period
 * ends: store/claims.ts, which also remembers claims it saw taken, so a replica asks Redis at
 * most once per threshold and period) and only the claimant sends. Reached rather than
 * crossed by this add: a threshold passed before alerts were configured is still alerted,
 * once. Sent off the request path, each try with `timeout_ms`,
 * retried `retries` times 1 s, 2 s, 4 s … apart on a network error or a non-2xx answer. A
 * failure is logged with the budget, the threshold and the webhook's host only (its path,
 * query and headers may hold tokens) and counted in
 * `switchyard_budget_webhooks_total{result="failed"}`. An alert not delivered (every try
 * failed, or the replica shut down first) gives its claim back (store/claims.ts): the next
 * add on any replica claims and sends it again, at least once rather than never.
 */
import { fetch } from 'undici';
import type { BudgetAlertSettings } from '../config/types.js';
import { recordBudgetWebhook } from '../metrics/record.js';
import type { Metrics } from '../metrics/registry.js';
import type { SpendStore } from '../store/roles.js';
import type { BudgetLine } from './budget-lines.js';

/** Where failures are logged (the gateway's pino logger). */
export interface AlertLog {
  warn(obj: object, msg: string): void;
}

/** The thresholds a spend of `totalUsd` has reached (at or past their share of `amountUsd`). */
export function reachedThresholds(thresholds: readonly number[], amountUsd: number, totalUsd: number): number[] {
  return thresholds.filter((t) => totalUsd >= t * amountUsd);
}

/** Waits `ms`, or less once `signal` aborts. */
const sleep = (ms: number, signal: AbortSignal): Promise<void> =>
  new Promise((r) => {
    const t = setTimeout(r, ms);
    t.unref();
    signal.addEventListener('abort', () => (clearTimeout(t), r()), { once: true });
  });

/** The webhook's host, the one part of its URL that is logged. */
function hostOf(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return '?';
  }
}

export class BudgetAlerts {
  /** Alerts being sent now (tests and shutdown can wait for them). */
  private readonly sending = new Set<Promise<void>>();
  /** Aborted by {@link close}: tries in progress end, no retry waits. */
  private readonly stop = new AbortController();

  constructor(
    private readonly store: SpendStore,
    private readonly metrics: Metrics,
    private readonly log: AlertLog,
  ) {}

  /**
   * Sends (not awaited) the alert of each threshold the budget's new total has reached,
   * unless some replica already did this period.
   * @param totalUsd the budget's spend after the add.
   * @param cfg the generation's `budget_alerts` (null: none configured, nothing is sent).
   */
  reached(line: BudgetLine, totalUsd: number, cfg: BudgetAlertSettings | null): void {
    if (!cfg) return;
    for (const t of reachedThresholds(cfg.thresholds, line.amountUsd, totalUsd)) {
      const p: Promise<void> = this.fire(line, t, totalUsd, cfg)
        .catch(() => {})
        .finally(() => this.sending.delete(p));
      this.sending.add(p);
    }
  }

  /** Resolves once every alert being sent now is sent or given up. */
  async idle(): Promise<void> {
    while (this.sending.size > 0) await Promise.allSettled([...this.sending]);
  }

  /**
   * At shutdown: gives alerts being sent `graceMs` to finish, then ends their tries. An
   * alert not delivered gives its claim back, so another replica sends it at its next add.
   */
  async close(graceMs = 2_000): Promise<void> {
    const t = setTimeout(() => this.stop.abort(), graceMs);
    t.unref();
    await this.idle();
    clearTimeout(t);
    this.stop.abort();
  }

  private async fire(line: BudgetLine, threshold: number, spentUsd: number, cfg: BudgetAlertSettings): Promise<void> {
    // The amount is part of the claim: a budget raised by a reload alerts again at its new thresholds.
    if (this.stop.signal.aborted) return;
    const claim = await this.store.claimOnce(`alert:${line.name}:${line.periodId}:${line.amountUsd}:${threshold}`, line.endMs);
    if (!claim) return;
    const body = JSON.stringify({
      budget: line.name,
      scope: line.scope,
      period: line.period,
      period_id: line.periodId,
      resets_at: new Date(line.endMs).toISOString(),
      threshold,
      spent_usd: spentUsd,
      amount_usd: line.amountUsd,
      at: new Date().toISOString(),
    });
    let last = '';
    let tries = 0;
    for (let i = 0; i <= cfg.retries && !this.stop.signal.aborted; i++) {
      if (i > 0) await sleep(1000 * 2 ** (i - 1), this.stop.signal);
      if (this.stop.signal.aborted) break;
      tries++;
      try {
        const res = await fetch(cfg.url, {
          method: 'POST',
          headers: { ...cfg.headers, 'content-type': 'application/json' },
          body,
          signal: AbortSignal.any([AbortSignal.timeout(cfg.timeout_ms), this.stop.signal]),
        });
        await res.arrayBuffer().catch(() => undefined);
        if (res.status >= 200 && res.status < 300) {
          recordBudgetWebhook(this.metrics, 'sent');
          return;
        }
        last = `HTTP ${res.status}`;
      } catch (err) {
        const e = err as { name?: string; cause?: { code?: string } };
        last = e.cause?.code ?? e.name ?? 'error';
      }
    }
    // Not delivered: the claim goes back, so the alert is sent later rather than never.
    await claim.release();
    recordBudgetWebhook(this.metrics, 'failed');
    this.log.warn(
      { budget: line.name, threshold, webhook_host: hostOf(cfg.url), tries, error: this.stop.signal.aborted ? 'shutdown' : last },
      'budget alert webhook failed',
    );
  }
}
