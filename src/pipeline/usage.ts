/** Moved to `usage/usage.ts`; kept until every importer points there. */
export * from '../usage/usage.js';
