/**
 * Config schema, `budgets:` (spend limits shared by many keys) and `budget_alerts:` (the
 * webhook told when a budget's spend crosses a share of its amount).
 *
 * A budget has exactly one scope (checked in checks.ts, which names the budget):
 * - `tag: { team: search }`: every request carrying all the listed tags (record/tags.ts:
 *   the key's `metadata` and the `x-switchyard-tags` header). Spent: such requests get 429
 *   `insufficient_quota` before any upstream is called.
 * - `upstream: <upstream id>`: every request served by that account (a credit commitment).
 *   Spent: the router passes the account over until the period ends.
 * Key budgets stay under `keys[].limits.budget_usd`; alerts apply to them too.
 */
import { Type } from '@sinclair/typebox';
import { Id } from './schema-id.js';

/** A tag name as record/tags.ts accepts it. */
const TagName = Type.String({ pattern: '^[a-z][a-z0-9_.-]{0,31}$' });
/** A tag value as record/tags.ts accepts it: printable ASCII without `,` and `=`. */
const TagValue = Type.String({ pattern: '^[\\x20-\\x2b\\x2d-\\x3c\\x3e-\\x7e]{1,128}$' });

export const BudgetSchema = Type.Object(
  {
    /** Shown in errors, `/admin/budgets`, metrics (`budget` label) and alerts. */
    name: Id,
    /** USD per period. */
    amount_usd: Type.Number({ exclusiveMinimum: 0 }),
    /** A UTC day, or a calendar month (UTC). */
    period: Type.Union([Type.Literal('day'), Type.Literal('month')]),
    /** Requests carrying every one of these tags (name: value; a name not of the tags' form is an unknown field). */
    tag: Type.Optional(Type.Record(TagName, TagValue, { minProperties: 1, additionalProperties: false })),
    /** Requests served by this upstream account (an `upstreams[].id`). */
    upstream: Type.Optional(Id),
  },
  { additionalProperties: false },
);

export const BudgetAlertsSchema = Type.Object(
  {
    /** Where each alert is POSTed as JSON. May hold a token: it is never logged (only its host). */
    url: Type.String({ pattern: '^https?://' }),
    /** Shares of a budget's amount whose crossing is alerted, once each per period. */
    thresholds: Type.Array(Type.Number({ exclusiveMinimum: 0, maximum: 10 }), { minItems: 1, maxItems: 10, uniqueItems: true, default: [0.5, 0.8, 1] }),
    /** Sent with every alert (e.g. `authorization: "Bearer ${ALERT_TOKEN}"`); never logged. */
    headers: Type.Record(Type.String({ minLength: 1 }), Type.String(), { default: {} }),
    /** Per try; a try that fails (no answer in time, or not 2xx) is retried. */
    timeout_ms: Type.Integer({ minimum: 100, maximum: 60_000, default: 5_000 }),
    /** Tries after the first one, 1 s, 2 s, 4 s … apart. */
    retries: Type.Integer({ minimum: 0, maximum: 10, default: 3 }),
  },
  { additionalProperties: false },
);
