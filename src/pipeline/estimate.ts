/** Moved to `usage/estimate.ts`; kept until every importer points there. */
export * from '../usage/estimate.js';
