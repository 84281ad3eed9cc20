/**
 * Per-key limits and budgets, shared across replicas through the store:
 *
 * - `rpm` / `tpm`: one-minute windows (`rate.ts`). Tokens are reserved up front (prompt
 *   tokens from the counter the app hands in, plus `max_completion_tokens` / `max_tokens`,
 *   else {@link DEFAULT_COMPLETION_TOKENS}) and settled to the real usage afterwards
 *   (reward or penalty of the difference).
 * - `max_concurrency`: an in-flight slot in the store (the same leases as upstream
 *   concurrency, under `key:<name>`), released on every outcome.
 * - `budget_usd`: spend per key per UTC day / month kept in the store (INCRBYFLOAT with
 *   expiry at the period end), checked before the request and added after it, in the same
 *   store calls as the tag and account budgets (budgets.ts).
 */
import type { Caller } from '../auth/keys.js';
import { GatewayError } from '../errors/codes.js';
import type { Metrics } from '../metrics/registry.js';
import type { StateStore } from '../store/index.js';
import type { Lease } from '../store/types.js';
import type { BudgetAlerts } from './budget-alerts.js';
import { keyLine } from './budget-lines.js';
import { Budgets, type BudgetContext, type Served, type SpentAccounts } from './budgets.js';
import { consume, RateLimiters, setRateHeaders } from './rate.js';

/** Completion tokens reserved for a `tpm` check when the request sets no output cap. */
export const DEFAULT_COMPLETION_TOKENS = 1024;

/** Counts the prompt tokens of a request's chat-style `messages`. */
export type PromptTokenCounter = (messages: unknown) => Promise<number>;

/** The token counts a finished request is settled with (the pipeline's `Usage` has them). */
export interface SettledTokens {
  readonly input: number;
  readonly output: number;
}

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

/** The rpm / tpm / concurrency part of an admission. */
interface Held {
  readonly headers: Record<string, string>;
  release(usage: SettledTokens): Promise<void>;
}

const HOLDS_NOTHING: Held = { headers: {}, release: async () => {} };
const NOWHERE: Served = { upstream: null, model: null };

/** Per-key limits and budgets of the client keys, shared across replicas through the store. */
/** A key's concurrency slot is never deep: these bounds are never read. */
const NO_CAPACITY = { start: 1, min: 1, ceiling: 1 } as const;

export class KeyLimits {
  private readonly limiters: RateLimiters;
  /** Key, tag and account budgets (budgets.ts). */
  readonly budgets: Budgets;

  /**
   * @param countPromptTokens prompt tokens of a request's chat-style `messages`, for `tpm`
   *        reservations (the app passes `usage/estimate.ts`'s counter).
   * @param alerts the budget webhook sender (absent: no alerts).
   */
  constructor(
    private readonly store: StateStore,
    private readonly metrics: Metrics,
    private readonly countPromptTokens: PromptTokenCounter,
    alerts?: BudgetAlerts,
  ) {
    this.limiters = new RateLimiters(store);
    this.budgets = new Budgets(store, metrics, alerts ?? null);
  }

  private reject(caller: Caller, reason: 'requests' | 'tokens' | 'concurrency' | 'budget', err: GatewayError): never {
    this.metrics.limitRejections.inc({ key: caller.name, reason });
    throw err;
  }

  /** Current spend and rate usage of a key (admin view). */
  async status(caller: Caller): Promise<Record<string, unknown>> {
    const limits = caller.limits;
    if (!limits) return {};
    const out: Record<string, unknown> = {};
    if (limits.budget_usd) {
      const { counter, endMs } = keyLine(caller.name, limits.budget_usd);
      const [spent = 0] = await this.store.getSpend([counter]);
      out['budget'] = {
        amount_usd: limits.budget_usd.amount,
        period: limits.budget_usd.period,
        spent_usd: spent,
        remaining_usd: Math.max(0, limits.budget_usd.amount - spent),
        resets_at: new Date(endMs).toISOString(),
      };
      this.metrics.budgetRemaining.set({ key: caller.name }, Math.max(0, limits.budget_usd.amount - spent));
    }
    const l = this.limiters.for(caller, limits);
    for (const [kind, lim, max] of [
      ['requests', l.rpm, limits.rpm],
      ['tokens', l.tpm, limits.tpm],
    ] as const) {
      if (!lim || !max) continue;
      const r = await lim.get(caller.name).catch(() => null);
      out[kind === 'requests' ? 'rpm' : 'tpm'] = { limit: max, used: r?.consumedPoints ?? 0, remaining: Math.max(0, max - (r?.consumedPoints ?? 0)) };
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
  async admit(caller: Caller | null, body: { messages?: unknown; max_tokens?: unknown; max_completion_tokens?: unknown }, ctx?: BudgetContext): Promise<Admission> {
    const check = await this.budgets.check(caller, ctx ?? null);
    const limits = caller?.limits;
    const held = caller && limits ? await this.take(caller, limits, body) : HOLDS_NOTHING;
    let settled = false;
    return {
      headers: held.headers,
      spentAccounts: check.spent,
      settle: async (usage, cost, served = NOWHERE) => {
        if (settled) return;
        settled = true;
        await Promise.allSettled([held.release(usage), this.budgets.charge(check, cost, served)]);
      },
    };
  }

  /** Takes the key's concurrency slot, rpm point and tpm reservation; throws 429 (nothing kept) when one is refused. */
  private async take(caller: Caller, limits: NonNullable<Caller['limits']>, body: { messages?: unknown; max_tokens?: unknown; max_completion_tokens?: unknown }): Promise<Held> {
    const headers: Record<string, string> = {};
    const name = caller.name;
    const undo: (() => Promise<void>)[] = [];
    const rollback = async () => {
      for (const u of undo.reverse()) await u().catch(() => {});
    };
    try {
      let lease: Lease | null = null;
      if (limits.max_concurrency) {
        const slot = await this.store.acquire({ upstream: `key:${name}`, limit: limits.max_concurrency, deep: false, capacity: NO_CAPACITY, calls: { start: limits.max_concurrency, min: 1, ceiling: limits.max_concurrency } });
        if (!slot.ok) {
          this.reject(
            caller,
            'concurrency',
            new GatewayError('GW_ERR_RATE_LIMITED', {
              message: `Too many concurrent requests for key "${name}": limit ${limits.max_concurrency}.`,
              headers: { 'retry-after': '1' },
            }),
          );
        }
        const l = slot.lease;
        lease = l;
        undo.push(() => this.store.release(l));
      }

      const l = this.limiters.for(caller, limits);
      if (l.rpm && limits.rpm) {
        const rpm = l.rpm;
        const r = await consume(rpm, name, 1);
        // A request refused here or by a later check is not counted against the minute.
        if (r.ok) undo.push(() => rpm.settle(name, -1));
        else {
          await rpm.settle(name, -1).catch(() => {});
        }
        if (!r.ok) {
          setRateHeaders(headers, 'requests', limits.rpm, r.res, 1);
          this.reject(
            caller,
            'requests',
            new GatewayError('GW_ERR_RATE_LIMITED', {
              message: `Rate limit reached for key "${name}" on requests per min (RPM): Limit ${limits.rpm}.`,
              headers: { ...headers, 'retry-after': String(Math.max(1, Math.ceil(r.res.msBeforeNext / 1000))) },
            }),
          );
        }
        setRateHeaders(headers, 'requests', limits.rpm, r.res);
      }

      let reserved = 0;
      if (l.tpm && limits.tpm) {
        const tpm = l.tpm;
        const max = typeof body.max_completion_tokens === 'number' ? body.max_completion_tokens : typeof body.max_tokens === 'number' ? body.max_tokens : DEFAULT_COMPLETION_TOKENS;
        const estimate = Math.max(1, (await this.countPromptTokens(body.messages)) + Math.max(0, Math.floor(max)));
        const r = await consume(tpm, name, estimate);
        // A refused reservation is given back at once (the limiter counts refused points too).
        if (!r.ok) {
          await tpm.settle(name, -estimate).catch(() => {});
        }
        if (!r.ok) {
          setRateHeaders(headers, 'tokens', limits.tpm, r.res, estimate);
          this.reject(
            caller,
            'tokens',
            new GatewayError('GW_ERR_RATE_LIMITED', {
              type: 'tokens',
              message: `Rate limit reached for key "${name}" on tokens per min (TPM): Limit ${limits.tpm}, Requested ${estimate}.`,
              headers: { ...headers, 'retry-after': String(Math.max(1, Math.ceil(r.res.msBeforeNext / 1000))) },
            }),
          );
        }
        reserved = estimate;
        setRateHeaders(headers, 'tokens', limits.tpm, r.res);
      }

      return {
        headers,
        release: async (usage) => {
          const jobs: Promise<unknown>[] = [];
          if (lease) jobs.push(this.store.release(lease));
          if (reserved > 0 && l.tpm) jobs.push(l.tpm.settle(name, usage.input + usage.output - reserved));
          await Promise.allSettled(jobs);
        },
      };
    } catch (err) {
      await rollback();
      throw err;
    }
  }

  /** Today's (UTC) spend of a key or a model, USD (the daily counters budgets.ts adds to). */
  spendToday(kind: 'key' | 'model', name: string): Promise<number> {
    return this.budgets.spendToday(kind, name);
  }
}
