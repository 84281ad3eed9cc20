/**
 * The `tags:` block: where a request's tags come from besides `x-switchyard-tags` and the
 * key's metadata (record/tags.ts), and which tags become metric labels.
 */
import { Type } from '@sinclair/typebox';

/** A tag name, unanchored: a lower-case letter, then letters, digits, `_`, `-`, `.`; at most 32 characters. */
export const TAG_NAME_CHARS = '[a-z][a-z0-9_.-]{0,31}';
/** Tag names as record/tags.ts accepts them (a JSON Schema `pattern`). */
export const TAG_NAME = `^${TAG_NAME_CHARS}$`;

export const TagsSchema = Type.Object(
  {
    /**
     * Tag name -> request header(s) its value is read from, the first present wins; e.g.
     * `session: [x-claude-code-session-id, session-id]` tags each request with the agent's
     * session (Claude Code sends `x-claude-code-session-id` since v2.1.86, the Codex CLI
     * `session-id`). A value that is not a valid tag value (record/tags.ts) is cut to 128
     * characters of its printable part, or left out. Explicit `x-switchyard-tags` and the
     * key's metadata win over a header tag of the same name.
     */
    headers: Type.Record(
      Type.String({ pattern: TAG_NAME }),
      Type.Union([Type.String({ minLength: 1 }), Type.Array(Type.String({ minLength: 1 }), { minItems: 1 })]),
      {
        default: {},
      },
    ),
    /**
     * Tags counted in `switchyard_tag_requests_total` / `switchyard_tag_spend_usd_total`
     * (labels `tag`, `value`). Only these, so a client cannot grow the metrics: at most 8.
     */
    metric_labels: Type.Array(Type.String({ pattern: TAG_NAME }), { maxItems: 8, uniqueItems: true, default: [] }),
    /**
     * Distinct values per metric tag per process; later values are counted as `value="other"`.
     */
    metric_max_values: Type.Integer({ minimum: 1, maximum: 10_000, default: 100 }),
  },
  { additionalProperties: false, default: {} },
);
