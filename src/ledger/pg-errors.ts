/**
 * What a PostgreSQL error means for the ledger, from its SQLSTATE (PostgreSQL manual,
 * Appendix A "PostgreSQL Error Codes", https://www.postgresql.org/docs/current/errcodes-appendix.html):
 *
 * - `outage`: PostgreSQL cannot be reached or used now and will be again without anyone
 *   acting: class 08 (connection exception), 53 (insufficient resources, e.g. 53300
 *   too_many_connections), 57 (operator intervention: admin_shutdown, cannot_connect_now),
 *   40 (transaction rollback: serialization, deadlock), 55 (object not in prerequisite
 *   state, e.g. lock_not_available), and any error without a SQLSTATE (refused, reset, timeout).
 * - `config`: the gateway is pointed at the wrong place or lacks a right; it stays so until an
 *   operator fixes it: class 28 (28000 invalid_authorization_specification, e.g. a role that
 *   does not exist; 28P01 invalid_password), 3D000 invalid_catalog_name (no such database),
 *   3F000 invalid_schema_name, 42501 insufficient_privilege, 25006 read_only_sql_transaction
 *   (the URL names a standby).
 * - `data`: PostgreSQL refuses these rows (e.g. 22021 a NUL in text, 22003 out of range):
 *   retrying them would fail forever.
 *
 * Rows are never dropped for `outage` or `config` (they wait in the spool); `config` also
 * makes `/readyz` fail and is logged as an error naming the problem.
 */
import { sqlState } from './checkout.js';

export type PgErrorKind = 'outage' | 'config' | 'data';

const OUTAGE_CLASSES = ['08', '53', '57', '40', '55'];
const CONFIG_CODES = ['3D000', '3F000', '42501', '25006'];

/** Classifies a `pg` client error (see the file comment for the SQLSTATEs). */
export function classifyPgError(err: unknown): PgErrorKind {
  const code = sqlState(err);
  if (code === null) return 'outage';
  if (code.startsWith('28') || CONFIG_CODES.includes(code)) return 'config';
  return OUTAGE_CLASSES.includes(code.slice(0, 2)) ? 'outage' : 'data';
}

/**
 * One line naming what is wrong, for the log and `/readyz`: where the ledger connects (host,
 * port, database, user; never the password), PostgreSQL's message and the SQLSTATE, e.g.
 * `PostgreSQL 127.0.0.1:5432/billing (user "gw") refuses the ledger: database "billing" does
 * not exist (SQLSTATE 3D000)`. The URL's password, should the message quote it, is replaced by `***`.
 * @param url the ledger's `postgres://` URL.
 */
export function describePgProblem(err: unknown, url: string): string {
  let where = 'PostgreSQL';
  let password = '';
  try {
    const u = new URL(url);
    password = decodeURIComponent(u.password);
    const db = decodeURIComponent(u.pathname.replace(/^\//, ''));
    where = `PostgreSQL ${u.host}/${db}${u.username ? ` (user "${decodeURIComponent(u.username)}")` : ''}`;
  } catch {
    // Config checks make it a postgres:// URL; if not, the place is left out rather than guessed.
  }
  let message = err instanceof Error ? err.message : String(err);
  if (password !== '') message = message.split(password).join('***');
  const code = sqlState(err);
  return `${where} refuses the ledger: ${message}${code ? ` (SQLSTATE ${code})` : ''}`;
}
