/**
 * The one schema for `config/switchyard.yaml`, written with TypeBox so the same
 * definition gives the static type and the JSON Schema that ajv validates at start-up.
 *
 * Units are in the field names: `_ms` milliseconds, `_bytes` bytes, prices in USD per
 * 1M tokens (the unit OpenAI and DeepSeek publish their price lists in).
 *
 * Each block's schema lives in its own `schema-<block>.ts`; this file puts them together
 * and is where the rest of the gateway imports the schemas and their static types from.
 */
import { Type, type Static } from '@sinclair/typebox';
import { BudgetAlertsSchema, BudgetSchema } from './schema-budgets.js';
import { ClientKeySchema } from './schema-keys.js';
import { CapabilitiesSchema, EffortSchema, ModelSchema, PriceSchema, ShedSchema, StrategySchema } from './schema-model.js';
import { RoutingSchema } from './schema-routing.js';
import { LedgerSchema } from './schema-ledger.js';
import { TagsSchema } from './schema-tags.js';
import { AdminSchema, PassthroughSchema, ServerSchema, StoreSchema } from './schema-server.js';
import { SimulatorSchema, TimeoutsSchema, UpstreamSchema } from './schema-upstream.js';

export { BudgetAlertsSchema, BudgetSchema } from './schema-budgets.js';
export { ClientKeySchema } from './schema-keys.js';
export { CapabilitiesSchema, EffortSchema, RequestEffortSchema, ModelSchema, PriceSchema, ShedSchema, StrategySchema, TargetSchema } from './schema-model.js';
export { RoutingSchema } from './schema-routing.js';
export { AdminSchema, PassthroughSchema, ServerSchema, StoreSchema } from './schema-server.js';
export { LedgerSchema } from './schema-ledger.js';
export { TagsSchema } from './schema-tags.js';
export { SimulatorSchema, TimeoutsSchema, UpstreamSchema, WindowSchema } from './schema-upstream.js';

/** The whole config document. */
export const ConfigSchema = Type.Object(
  {
    passthrough: PassthroughSchema,
    server: ServerSchema,
    admin: AdminSchema,
    store: StoreSchema,
    ledger: LedgerSchema,
    tags: TagsSchema,
    routing: RoutingSchema,
    upstreams: Type.Array(UpstreamSchema, { minItems: 1 }),
    models: Type.Array(ModelSchema, { minItems: 1 }),
    keys: Type.Array(ClientKeySchema, { minItems: 1 }),
    /** Spend limits per tag or upstream account (schema-budgets.ts); key budgets are under keys[].limits. */
    budgets: Type.Array(BudgetSchema, { default: [] }),
    /** The webhook told when any budget (key budgets included) crosses a threshold. */
    budget_alerts: Type.Optional(BudgetAlertsSchema),
  },
  { additionalProperties: false },
);

export type RawConfig = Static<typeof ConfigSchema>;
export type UpstreamConfig = Static<typeof UpstreamSchema>;
export type ModelConfig = Static<typeof ModelSchema>;
export type PriceConfig = Static<typeof PriceSchema>;
export type ClientKeyConfig = Static<typeof ClientKeySchema>;
export type TimeoutsConfig = Static<typeof TimeoutsSchema>;
export type SimulatorConfig = Static<typeof SimulatorSchema>;
export type RoutingConfig = Static<typeof RoutingSchema>;
export type Strategy = Static<typeof StrategySchema>;
export type StoreConfig = Static<typeof StoreSchema>;
export type AdminConfig = Static<typeof AdminSchema>;
export type LedgerConfig = Static<typeof LedgerSchema>;
export type TagsConfig = Static<typeof TagsSchema>;
export type Effort = Static<typeof EffortSchema>;
export type ShedConfig = Static<typeof ShedSchema>;
export type CapabilitiesConfig = Static<typeof CapabilitiesSchema>;
export type PassthroughConfig = Static<typeof PassthroughSchema>;
export type BudgetConfig = Static<typeof BudgetSchema>;
export type BudgetAlertsConfig = Static<typeof BudgetAlertsSchema>;
