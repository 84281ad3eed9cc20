/**
 * The budgets one request counts against, as store counters of the current period: the
 * key's own (`keys[].limits.budget_usd`, named `key:<key name>`), the tag budgets whose
 * tags the request carries, and the account budgets (`budgets[].upstream`), and the errors
 * a spent one answers with.
 */
import type { BudgetConfig } from '../config/schema.js';
import { GatewayError } from '../errors/codes.js';
import type { Tags } from '../record/tags.js';
import { periodOf } from './periods.js';

/** What a budget counts: one key, the requests carrying some tags, or one upstream account. */
export type BudgetScope = { readonly key: string } | { readonly tag: Readonly<Record<string, string>> } | { readonly upstream: string };

/** One budget in its current period. */
export interface BudgetLine {
  /** The configured name; a key's own budget is `key:<key name>`. */
  readonly name: string;
  readonly amountUsd: number;
  readonly period: 'day' | 'month';
  readonly scope: BudgetScope;
  /** The period's id (`2026-12-02`, `2026-12`) and end (epoch ms, UTC). */
  readonly periodId: string;
  readonly endMs: number;
  /** Its spend counter in the store (store/spend.ts), expiring at `endMs`. */
  readonly counter: string;
}

/** A key's own budget; its counter `<key name>:<period id>` is the one key budgets always used. */
export function keyLine(keyName: string, b: { amount: number; period: 'day' | 'month' }, now = new Date()): BudgetLine {
  const p = periodOf(b.period, now);
  return {
    name: `key:${keyName}`,
    amountUsd: b.amount,
    period: b.period,
    scope: { key: keyName },
    periodId: p.id,
    endMs: p.endMs,
    counter: `${keyName}:${p.id}`,
  };
}

/**
 * A configured budget (`budgets:`); its counter `#budget:<name>:<period id>` cannot meet a
 * key's (key names start with a letter or digit).
 */
export function configuredLine(b: BudgetConfig, now = new Date()): BudgetLine {
  const p = periodOf(b.period, now);
  const scope: BudgetScope = b.upstream !== undefined ? { upstream: b.upstream } : { tag: b.tag ?? {} };
  return { name: b.name, amountUsd: b.amount_usd, period: b.period, scope, periodId: p.id, endMs: p.endMs, counter: `#budget:${b.name}:${p.id}` };
}

/** Whether the request's tags include every tag the budget lists (same name, same value). */
export function tagsMatch(want: Readonly<Record<string, string>>, tags: Tags): boolean {
  for (const name in want) if (tags[name] !== want[name]) return false;
  return true;
}

/** `team=search,repo=api`: a tag scope as the `x-switchyard-tags` header writes it. */
export const tagText = (tag: Readonly<Record<string, string>>): string =>
  Object.entries(tag)
    .map(([k, v]) => `${k}=${v}`)
    .join(',');

const periodWord = (l: BudgetLine): string => (l.period === 'day' ? 'daily' : 'monthly');

/** Seconds until the period ends, at least 1 (`Retry-After`). */
export const retryAfter = (endMs: number): string => String(Math.max(1, Math.ceil((endMs - Date.now()) / 1000)));

/**
 * 429 `insufficient_quota` for a spent key or tag budget: the budget's name and numbers,
 * when it resets, `Retry-After` until then and `x-should-retry: false` (the OpenAI and
 * Anthropic SDKs otherwise retry a 429 at once, twice by default, when Retry-After is over a
 * minute: nothing changes before the period ends).
 */
export function spentError(l: BudgetLine, spentUsd: number): GatewayError {
  const headers = { 'retry-after': retryAfter(l.endMs), 'x-should-retry': 'false' };
  if ('key' in l.scope) {
    return new GatewayError('GW_ERR_INSUFFICIENT_QUOTA', {
      message: `You exceeded your current quota: key "${l.scope.key}" spent $${spentUsd.toFixed(6)} of its $${l.amountUsd} ${periodWord(l)} budget; it resets at ${new Date(l.endMs).toISOString()}.`,
      headers,
    });
  }
  const what = 'tag' in l.scope ? ` (requests tagged ${tagText(l.scope.tag)})` : '';
  return new GatewayError('GW_ERR_BUDGET_SPENT', {
    message: `You exceeded your current quota: budget "${l.name}"${what} spent $${spentUsd.toFixed(6)} of its $${l.amountUsd} ${periodWord(l)} budget; it resets at ${new Date(l.endMs).toISOString()}.`,
    headers,
  });
}

/**
 * 503 `no_upstream_available` when every account left for a request has spent its budget
 * (as for an account the provider reports out of credit: router/stops.ts), naming the
 * budgets and when the first of them resets; final (`x-should-retry: false`).
 */
export function accountsSpentError(spent: readonly { line: BudgetLine; spentUsd: number }[]): GatewayError {
  const parts = spent.map(
    ({ line: l, spentUsd }) =>
      `budget "${l.name}" of upstream "${(l.scope as { upstream: string }).upstream}" spent $${spentUsd.toFixed(6)} of its $${l.amountUsd} ${periodWord(l)} budget`,
  );
  const endMs = Math.min(...spent.map((s) => s.line.endMs));
  return new GatewayError('GW_ERR_ACCOUNTS_SPENT', {
    message: `No upstream account can serve this request: ${parts.join('; ')}; the first resets at ${new Date(endMs).toISOString()}.`,
    // Nothing changes before the period ends: an SDK's quick retries would only repeat this
    // (a final 5xx names no wait: errors/reply.ts).
    heals: 'never',
  });
}
