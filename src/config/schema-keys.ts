/** Config schema, `keys[]`: the client keys (by hash), the models they may call and their limits. */
import { Type } from '@sinclair/typebox';
import { Id } from './schema-id.js';

export const ClientKeySchema = Type.Object(
  {
    name: Id,
    /** Hex SHA-256 of the key (`switchyard hash-key <key>`); the plaintext is never stored. */
    key_sha256: Type.String({ pattern: '^[0-9a-f]{64}$' }),
    /**
     * Public model names this key may call: exact names or globs where `*` matches any run
     * of characters (`gpt-*`, `*-reasoner`); `*` allows all.
     */
    models: Type.Array(Type.String({ minLength: 1 }), { default: ['*'] }),
    /** Per-key limits, enforced across replicas through the shared store. */
    limits: Type.Optional(
      Type.Object(
        {
          /** Requests per minute. */
          rpm: Type.Optional(Type.Integer({ minimum: 1 })),
          /** Tokens (prompt estimate + max completion, settled to real usage) per minute. */
          tpm: Type.Optional(Type.Integer({ minimum: 1 })),
          /** Requests in flight at once, across replicas. */
          max_concurrency: Type.Optional(Type.Integer({ minimum: 1 })),
          /** Spend limit in USD per UTC day or calendar month (UTC). */
          budget_usd: Type.Optional(
            Type.Object(
              { amount: Type.Number({ exclusiveMinimum: 0 }), period: Type.Union([Type.Literal('day'), Type.Literal('month')]) },
              { additionalProperties: false },
            ),
          ),
        },
        { additionalProperties: false },
      ),
    ),
    /** Free-form labels (team, owner), shown by `/admin/keys`. */
    metadata: Type.Record(Type.String(), Type.String(), { default: {} }),
    /**
     * When a model's accounts are hot, `background` calls skip the shed ladder's wait and
     * take its lower rungs first, leaving the places that free up to `interactive` ones.
     */
    priority: Type.Union([Type.Literal('interactive'), Type.Literal('background')], { default: 'interactive' }),
  },
  { additionalProperties: false },
);
