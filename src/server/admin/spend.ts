/**
 * `GET /admin/spend` on the admin API: spend, requests and tokens from the ledger, per
 * period and per group.
 *
 *   GET /admin/spend?group_by=key,model,tag:repo&from=2026-11-01&to=2026-12-01&granularity=day
 *
 * `group_by`: up to 4 of key, model, requested_model, upstream, api, outcome, tag:<name>;
 * `granularity`: hour, day (default), month or none; `from`/`to`: ISO-8601, default the last
 * 7 days; at most 400 days. 503 `ledger_unavailable` when no ledger is configured or
 * PostgreSQL cannot answer; 400 naming the parameter for a bad one.
 */
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { GatewayError } from '../../errors/codes.js';
import { MAX_ROWS, spendQuery, spendRow, spendTotals, SpendQueryError } from '../../ledger/spend-query.js';
import type { AdminPluginOptions, Gateway } from '../gateway.js';

/** Registers the route on the admin app (its key check already guards it: auth.ts). */
function registerSpend(admin: FastifyInstance, gw: Gateway): void {
  admin.get('/admin/spend', async (req) => {
    let q;
    try {
      q = spendQuery(req.query as Record<string, unknown>);
    } catch (err) {
      if (err instanceof SpendQueryError) throw new GatewayError('GW_ERR_INVALID_REQUEST', { message: err.message, param: err.param });
      throw err;
    }
    if (!gw.ledger) {
      throw new GatewayError('GW_ERR_LEDGER_UNAVAILABLE', {
        message: 'No usage ledger is configured: set DATABASE_URL (or ledger.postgres_url) to a PostgreSQL database.',
      });
    }
    let rows: Record<string, unknown>[];
    try {
      rows = await gw.ledger.read(q.sql, q.params);
    } catch (err) {
      req.log.warn({ ledger: 'postgres', code: (err as { code?: string }).code ?? (err as Error).message }, 'ledger read failed');
      throw new GatewayError('GW_ERR_LEDGER_UNAVAILABLE', { message: 'The usage ledger (PostgreSQL) cannot be read now; retry shortly.' });
    }
    const data = rows.slice(0, MAX_ROWS).map((r) => spendRow(q, r));
    return {
      object: 'spend',
      from: q.from.toISOString(),
      to: q.to.toISOString(),
      granularity: q.granularity,
      group_by: q.groupBy,
      // Rows still in the spool or the in-memory batch are not counted yet.
      ledger: gw.ledger.status.state,
      backlog_rows: gw.ledger.status.backlogRows,
      truncated: rows.length > MAX_ROWS,
      // Over every group, the ones left out of a truncated answer included.
      totals: spendTotals(rows),
      data,
    };
  });
}

/** `GET /admin/spend` as a plugin of the admin app. */
export const spendRoutes = fp<AdminPluginOptions>(
  async (admin, { gw }) => {
    registerSpend(admin, gw);
  },
  { name: 'switchyard-admin-spend' },
);
