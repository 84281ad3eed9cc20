/**
 * Limits on what clients may send: per-key rate limits, concurrency and budgets
 * (`key-limits.ts`, on the shared store), tag and account budgets and their alerts
 * (`budgets.ts`, `budget-alerts.ts`) and the failed-auth throttle (`auth-throttle.ts`).
 */
export { AuthThrottle, type ThrottleVerdict } from './auth-throttle.js';
export { BudgetAlerts, type AlertLog } from './budget-alerts.js';
export type { BudgetContext, BudgetStatus, Served, SpentAccounts } from './budgets.js';
export { DEFAULT_COMPLETION_TOKENS, KeyLimits, tpmTokens, type Admission, type PromptTokenCounter, type SettledTokens } from './key-limits.js';
export { periodOf, resetDuration } from './periods.js';
