/**
 * Reasoning effort across vendors: the one table every translator reads when a call's effort
 * crosses from one API to another (a deep call shed or failed over to another vendor's model),
 * and the one place a thinking budget is fitted to Anthropic's limits. docs/translation.md
 * ("Reasoning effort across vendors") shows the same table; test/unit/effort-table.test.ts
 * checks the two agree.
 *
 * It sits in `apis/` (not `translate/`) because the Messages API's own reader needs it
 * (`messages.ts`: a `thinking.budget_tokens` read as a level for deep-call detection, and the
 * shed ladder's lowered budget), and `apis/` is below `translate/` (docs/architecture.md).
 *
 * Sources:
 * - Levels: OpenAI API reference, `reasoning_effort` (`none`, `minimal`, `low`, `medium`,
 *   `high`; `xhigh` for the Codex models), then the deeper words clients send (`max`: Anthropic
 *   "Effort" and Claude Code's `--effort`; `ultra`: Codex's model catalog), as
 *   config/schema-model.ts `EFFORT_LEVELS` / `DEEPER_EFFORTS` order them.
 * - Anthropic (docs.anthropic.com, "Extended thinking"): `thinking.budget_tokens` must be at
 *   least 1,024 and less than `max_tokens`; (API reference, "Effort") `output_config.effort`
 *   takes `low`, `medium`, `high` and `max` (`xhigh` only from Opus 4.7 on).
 * - Gemini: no translator speaks Gemini's own API; Gemini is reached over its OpenAI-compatible
 *   endpoint (ai.google.dev/gemini-api/docs/openai, "Thinking"), which takes `reasoning_effort`
 *   and maps it itself: on 2.5 models to a thinking budget (`low` 1,024, `medium` 8,192,
 *   `high` 24,576 tokens; `none` turns thinking off where the model allows), on Gemini 3 to its
 *   thinking level of the same name. The Gemini column is that mapping, for the docs only.
 */
import { DEEPER_EFFORTS, EFFORT_LEVELS } from '../config/schema-model.js';

/** The levels whose thinking budget an `anthropic` upstream's `options.thinking_budgets` sets. */
export type BudgetLevel = 'minimal' | 'low' | 'medium' | 'high' | 'xhigh';

/** One effort level and what it is on each vendor's side. */
export interface EffortRow {
  /** The level word (`none`, then OpenAI's levels, then the deeper ones), lowest first. */
  readonly level: string;
  /** Whose Anthropic thinking budget the level gets (null: no thinking is sent). */
  readonly budgetLevel: BudgetLevel | null;
  /** Default `thinking.budget_tokens` of the level's own budget (tokens; null when not its own). */
  readonly budget: number | null;
  /** Anthropic `output_config.effort` the level is sent as (null: none is sent). */
  readonly anthropicEffort: string | null;
  /** Chat `reasoning_effort` a Messages client's level is sent as (null: left out, the model's default). */
  readonly chat: string | null;
  /** Responses `reasoning.effort` a Messages client's level is sent as. */
  readonly responses: string;
  /** What Gemini's OpenAI-compatible endpoint does with the chat value (docs only). */
  readonly gemini: string;
}

/** Smallest `thinking.budget_tokens` Anthropic accepts (tokens; docs.anthropic.com, "Extended thinking"). */
export const MIN_THINKING_BUDGET = 1024;

/**
 * The table, lowest level first. Budgets (tokens) are the defaults of `thinking_budgets`
 * (each >= MIN_THINKING_BUDGET, doubling-or-more per level so a budget reads back as its level);
 * the deeper levels get `xhigh`'s, the largest. Chat servers other than OpenAI's take
 * `minimal` … `high` only, so anything above is sent as `high`; the Responses API takes
 * `none` … `xhigh`, so a deeper level is sent as `xhigh`.
 */
export const EFFORT_TABLE: readonly EffortRow[] = [
  { level: 'none', budgetLevel: null, budget: null, anthropicEffort: null, chat: null, responses: 'none', gemini: 'not sent: the model default' },
  { level: 'minimal', budgetLevel: 'minimal', budget: 1024, anthropicEffort: 'low', chat: 'minimal', responses: 'minimal', gemini: '3: `minimal` (Flash)' },
  { level: 'low', budgetLevel: 'low', budget: 2048, anthropicEffort: 'low', chat: 'low', responses: 'low', gemini: '2.5: 1,024 tokens; 3: `low`' },
  {
    level: 'medium',
    budgetLevel: 'medium',
    budget: 8192,
    anthropicEffort: 'medium',
    chat: 'medium',
    responses: 'medium',
    gemini: '2.5: 8,192 tokens; 3: `medium`',
  },
  { level: 'high', budgetLevel: 'high', budget: 16384, anthropicEffort: 'high', chat: 'high', responses: 'high', gemini: '2.5: 24,576 tokens; 3: `high`' },
  { level: 'xhigh', budgetLevel: 'xhigh', budget: 32000, anthropicEffort: 'high', chat: 'high', responses: 'xhigh', gemini: 'as `high`' },
  { level: 'max', budgetLevel: 'xhigh', budget: null, anthropicEffort: 'max', chat: 'high', responses: 'xhigh', gemini: 'as `high`' },
  { level: 'ultra', budgetLevel: 'xhigh', budget: null, anthropicEffort: 'max', chat: 'high', responses: 'xhigh', gemini: 'as `high`' },
];

/** Every level the gateway knows, lowest first (`none`, EFFORT_LEVELS, DEEPER_EFFORTS). */
export const EFFORT_ORDER: readonly string[] = ['none', ...EFFORT_LEVELS, ...DEEPER_EFFORTS];

const ROWS = new Map(EFFORT_TABLE.map((r) => [r.level, r]));

/** The row of a level word (case-insensitive); undefined for a word the gateway does not know. */
export function effortRow(level: string): EffortRow | undefined {
  return ROWS.get(level.toLowerCase());
}

/** The default thinking budget of each BudgetLevel (tokens): `thinking_budgets`' defaults. */
export const DEFAULT_THINKING_BUDGETS: Readonly<Record<BudgetLevel, number>> = Object.fromEntries(
  EFFORT_TABLE.filter((r) => r.budget !== null).map((r) => [r.level, r.budget]),
) as Record<BudgetLevel, number>;

/**
 * The thinking budget of a level (tokens): its BudgetLevel's in `budgets` (an upstream's
 * `thinking_budgets`, defaults applied); undefined for `none` and for a level the gateway does
 * not know (no thinking is sent, as for a request without an effort).
 */
export function thinkingBudgetOf(level: unknown, budgets: Readonly<Record<BudgetLevel, number>> = DEFAULT_THINKING_BUDGETS): number | undefined {
  if (typeof level !== 'string') return undefined;
  const key = effortRow(level)?.budgetLevel;
  return key ? budgets[key] : undefined;
}

/**
 * The level a `thinking.budget_tokens` reads as: the level whose own default budget is nearest
 * on a log scale (each level is a multiple of the one below; a tie goes to the lower level).
 * Every level's own budget reads back as that level. @param budget tokens (below 1 counts as 1).
 */
export function levelOfBudget(budget: number): string {
  const b = Math.log(Math.max(1, budget));
  let best = EFFORT_TABLE.find((r) => r.budget !== null)!;
  for (const r of EFFORT_TABLE) {
    if (r.budget !== null && Math.abs(Math.log(r.budget) - b) < Math.abs(Math.log(best.budget!) - b)) best = r;
  }
  return best.level;
}

/** Which field a level is being written to. */
export type EffortWire = 'chat' | 'responses' | 'anthropic';

/**
 * The value a level is sent as in another vendor's effort field (chat `reasoning_effort`,
 * Responses `reasoning.effort`, Anthropic `output_config.effort`); undefined when it is left
 * out: a level the gateway does not know, or one the field has no word for.
 */
export function effortFor(level: string, wire: EffortWire): string | undefined {
  const row = effortRow(level);
  if (!row) return undefined;
  return (wire === 'anthropic' ? row.anthropicEffort : row[wire]) ?? undefined;
}

/**
 * A thinking budget and `max_tokens` Anthropic takes: the budget raised to MIN_THINKING_BUDGET
 * when below it, and `max_tokens` raised to budget + 1 when it would not exceed the budget
 * (docs.anthropic.com, "Extended thinking": `budget_tokens` >= 1,024 and < `max_tokens`).
 * The one place a budget is fitted; both values in tokens.
 */
export function fitThinking(budget: number, maxTokens: number): { readonly budget: number; readonly maxTokens: number } {
  const b = Math.max(Math.floor(budget), MIN_THINKING_BUDGET);
  return { budget: b, maxTokens: Math.max(maxTokens, b + 1) };
}
