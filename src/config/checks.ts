/**
 * Checks of a config that the schema cannot express: a secret written into the file instead
 * of referenced from the environment (a warning), Redis URLs that are not URLs (an error,
 * rather than a gateway that starts degraded and keeps reconnecting to nothing), and budgets
 * without exactly one scope or naming an unknown upstream. No message quotes a URL or a
 * header value: it may hold a password.
 */
import type { BudgetConfig } from './schema.js';

/**
 * Errors for the `budgets:` entries: a name used twice or starting with `key:`, not exactly
 * one scope (`tag` or `upstream`), an `upstream` no `upstreams[]` entry declares (live or
 * off). Each names the budget.
 * @param declared every upstream id the config declares.
 */
export function budgetProblems(budgets: readonly BudgetConfig[], declared: ReadonlySet<string>): string[] {
  const out: string[] = [];
  const names = new Set<string>();
  budgets.forEach((b, i) => {
    if (names.has(b.name)) out.push(`/budgets/${i}/name: duplicate budget name "${b.name}"`);
    if (b.name.startsWith('key:'))
      out.push(`/budgets/${i}/name: budget "${b.name}": names starting with "key:" are the key budgets' (keys[].limits.budget_usd)`);
    names.add(b.name);
    if ((b.tag === undefined) === (b.upstream === undefined)) {
      out.push(`/budgets/${i}: budget "${b.name}" needs exactly one scope: tag: { <name>: <value> } or upstream: <upstream id>`);
    }
    if (b.upstream !== undefined && !declared.has(b.upstream)) {
      out.push(`/budgets/${i}/upstream: budget "${b.name}" names unknown upstream "${b.upstream}" (declared: ${[...declared].join(', ')})`);
    }
  });
  return out;
}

/**
 * Warnings for upstream `api_key`s and a Redis password written into the document as text
 * (`doc` is the parsed YAML before `${VAR}` references are resolved).
 */
export function literalSecretWarnings(doc: unknown): string[] {
  const out: string[] = [];
  const d = (doc ?? {}) as { upstreams?: unknown; store?: { redis_url?: unknown }; ledger?: { postgres_url?: unknown } };
  if (Array.isArray(d.upstreams)) {
    d.upstreams.forEach((u: unknown, i) => {
      const key = (u as { api_key?: unknown } | null)?.api_key;
      if (typeof key === 'string' && key !== '' && !key.includes('${')) {
        out.push(
          `/upstreams/${i}/api_key is written into the config file; reference an environment variable instead (api_key: \${MY_PROVIDER_KEY}) so the secret stays out of the file and its history`,
        );
      }
    });
  }
  const url = d.store?.redis_url;
  if (typeof url === 'string' && !url.includes('${') && hasPassword(url)) {
    out.push('/store/redis_url holds a password written into the config file; use redis_url: ${REDIS_URL} (or REDIS_URL alone) instead');
  }
  const alertHeaders = (doc as { budget_alerts?: { headers?: unknown } } | null)?.budget_alerts?.headers;
  if (alertHeaders && typeof alertHeaders === 'object') {
    for (const [name, v] of Object.entries(alertHeaders)) {
      if (/auth|token|key|secret|signature/i.test(name) && typeof v === 'string' && v !== '' && !v.includes('${')) {
        out.push(
          `/budget_alerts/headers/${name} is written into the config file; reference an environment variable instead (\${ALERT_TOKEN}) so the secret stays out of the file`,
        );
      }
    }
  }
  const pgUrl = d.ledger?.postgres_url;
  if (typeof pgUrl === 'string' && !pgUrl.includes('${') && hasPassword(pgUrl)) {
    out.push('/ledger/postgres_url holds a password written into the config file; use postgres_url: ${DATABASE_URL} (or DATABASE_URL alone) instead');
  }
  return out;
}

function hasPassword(url: string): boolean {
  try {
    return new URL(url).password !== '';
  } catch {
    return false;
  }
}

/**
 * Why `url` is not a URL of one of `schemes` (without their `:`) with a host, or null when it
 * is one; parsed with the WHATWG `URL`, as undici, ioredis and pg read it. `expected`, when
 * given, is added in parentheses to a "not a URL" and a "no host" answer (and, with
 * `hintScheme`, to a wrong scheme's). The answer never quotes the URL: it may hold a password.
 */
export function urlProblem(url: string, schemes: readonly [string, string], expected?: string, hintScheme = false): string | null {
  const hint = expected === undefined ? '' : ` (${expected})`;
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return `not a URL${hint}`;
  }
  const scheme = u.protocol.replace(/:$/, '');
  if (!schemes.includes(scheme)) return `scheme "${scheme}" is not ${schemes[0]} or ${schemes[1]}${hintScheme ? hint : ''}`;
  if (!u.hostname) return `no host${hint}`;
  return null;
}

/** Why `url` is not a Redis URL, or null when it is one. */
export function redisUrlProblem(url: string): string | null {
  return urlProblem(url, ['redis', 'rediss']);
}

/**
 * Errors for the Redis URLs the store would use: `store.redis_url`, else `REDIS_URL` from
 * `env`, and each of `store.cluster_nodes` (`redis://host:port`).
 */
export function redisUrlProblems(store: { redis_url?: string | undefined; cluster_nodes: readonly string[] }, env: NodeJS.ProcessEnv, doc: unknown): string[] {
  const out: string[] = [];
  const expected = 'expected redis://[:password@]host:port[/db] or rediss://…';
  const written = (doc as { store?: { redis_url?: unknown } } | null)?.store?.redis_url;
  const where =
    store.redis_url === undefined
      ? 'REDIS_URL (environment)'
      : typeof written === 'string' && written.includes('${')
        ? `/store/redis_url (${written.trim()})`
        : '/store/redis_url';
  const url = store.redis_url ?? env['REDIS_URL'] ?? '';
  if (url) {
    const why = redisUrlProblem(url);
    if (why) out.push(`${where}: ${why} (${expected})`);
  }
  store.cluster_nodes.forEach((n, i) => {
    const why = redisUrlProblem(n);
    if (why) out.push(`/store/cluster_nodes/${i}: ${why} (expected redis://host:port)`);
  });
  return out;
}

/**
 * The error for the ledger's PostgreSQL URL (`ledger.postgres_url`, else `DATABASE_URL`),
 * when it is set and not a `postgres://` or `postgresql://` URL with a host; else none.
 */
export function postgresUrlProblems(ledger: { postgres_url?: string | undefined }, env: NodeJS.ProcessEnv): string[] {
  const url = (ledger.postgres_url ?? env['DATABASE_URL'] ?? '').trim();
  if (url === '') return [];
  const where = ledger.postgres_url === undefined ? 'DATABASE_URL (environment)' : '/ledger/postgres_url';
  const expected = 'expected postgres://user[:password]@host:port/database; unset it for no ledger';
  const why = urlProblem(url, ['postgres', 'postgresql'], expected, true);
  return why === null ? [] : [`${where}: ${why}`];
}

/**
 * Why `server.workers` cannot run on this store, or null when it can: more than one worker
 * needs Redis (`store.redis_url`, else `REDIS_URL` from `env`, or `store.cluster_nodes`), the
 * same test the store makes (store/index.ts). In memory mode each process would keep its own
 * counts, so limits would hold per process and not for the gateway.
 */
export function workersStoreProblem(
  workers: number,
  store: { redis_url?: string | undefined; cluster_nodes: readonly string[] },
  env: NodeJS.ProcessEnv,
): string | null {
  if (workers <= 1) return null;
  if ((store.redis_url ?? env['REDIS_URL'] ?? '') !== '' || store.cluster_nodes.length > 0) return null;
  return `/server/workers: ${workers} needs a shared store: set store.redis_url (or REDIS_URL, or store.cluster_nodes); in memory mode each process would keep its own counts and limits`;
}
