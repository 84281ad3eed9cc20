/**
 * How the ledger reads a PostgreSQL error (src/ledger/pg-errors.ts): outages (no SQLSTATE,
 * connection and resource classes) wait in the spool, a refusal of the gateway itself is a
 * config problem, anything else is the rows' fault; the problem line never carries the password.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { classifyPgError, describePgProblem } from '../../src/ledger/pg-errors.js';

const pgError = (code: string, message = 'm') => Object.assign(new Error(message), { code });

describe('PostgreSQL errors for the ledger', () => {
  test('outage, config or data by SQLSTATE', () => {
    const cases: [unknown, string][] = [
      [Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' }), 'outage'],
      [new Error('Connection terminated due to connection timeout'), 'outage'],
      [pgError('08006'), 'outage'],
      [pgError('53300'), 'outage'],
      [pgError('57P03'), 'outage'],
      [pgError('40001'), 'outage'],
      [pgError('28P01'), 'config'],
      [pgError('28000'), 'config'],
      [pgError('3D000'), 'config'],
      [pgError('3F000'), 'config'],
      [pgError('42501'), 'config'],
      [pgError('25006'), 'config'],
      [pgError('22021'), 'data'],
      [pgError('22003'), 'data'],
    ];
    for (const [err, kind] of cases) assert.equal(classifyPgError(err), kind, String((err as { code?: string }).code ?? err));
  });

  test('the problem line names host, database and user, never the password', () => {
    const line = describePgProblem(
      pgError('28P01', 'password authentication failed for user "gw" (tried s3cr%t!)'),
      'postgres://gw:s3cr%25t!@db.internal:5433/billing',
    );
    assert.equal(
      line,
      'PostgreSQL db.internal:5433/billing (user "gw") refuses the ledger: password authentication failed for user "gw" (tried ***) (SQLSTATE 28P01)',
    );
    assert.equal(describePgProblem(new Error('x'), 'not a url'), 'PostgreSQL refuses the ledger: x');
  });
});
