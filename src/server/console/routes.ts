/**
 * The built-in console, on the admin listener:
 *
 *   GET /console             the live page (static HTML, inline script and style allowed by
 *                            hash in a strict CSP, page.ts from the files in assets/); served
 *                            WITHOUT the admin key, it holds no data
 *   GET /console/spend       the spend page, the same way; its script reads GET /admin/spend
 *                            (server/admin/spend.ts) with the admin key
 *   GET /admin/console.json  everything the page shows, admin key required like every
 *                            /admin route: upstream targets (as /admin/upstreams), totals
 *                            from the metrics registry, the recent finished requests
 *                            (record/recent.ts), sheds and fallbacks, spend per key today
 *                            and its prompt-cache reads since start (tokens and share of its prompt)
 *
 * Nothing here carries a key, a key hash, a header, a prompt or a completion: requests are
 * shown by key NAME with their routing, status, timing, tokens and cost.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import type { AdminPluginOptions, Gateway } from '../gateway.js';
import { CONSOLE_SPEND_PATH, consolePages } from './page.js';
import { recentRequests, type RecentRequest } from '../../record/recent.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The admin app's auth hook lets this route through without the admin key. */
    adminPublic?: boolean;
  }
}

/** Path of the data endpoint the live page polls (`DATA` in assets/live.js). */
export const CONSOLE_DATA_PATH = '/admin/console.json';

/** Recent requests sent to the page per poll. */
export const CONSOLE_RECENT_ROWS = 50;

interface Labelled {
  value: number;
  labels: Partial<Record<string, string | number>>;
}

/** A counter's or gauge's current values with their labels. */
async function values(metric: { get(): Promise<{ values: Labelled[] }> | { values: Labelled[] } }): Promise<Labelled[]> {
  return (await metric.get()).values;
}

const sum = (vs: Labelled[]): number => vs.reduce((n, v) => n + v.value, 0);

/** The `switchyard_tokens_total` kinds that make up a whole prompt (metrics/registry.ts). */
const PROMPT_KINDS = new Set(['input', 'cached_input', 'cache_write', 'cache_write_1h']);

/** Per key name, prompt tokens read from the cache and all prompt tokens since the process started (`switchyard_key_tokens_total`). */
function cacheReads(keyTokens: Labelled[]): Map<string, { read: number; prompt: number }> {
  const out = new Map<string, { read: number; prompt: number }>();
  for (const v of keyTokens) {
    const kind = String(v.labels['kind']);
    if (!PROMPT_KINDS.has(kind)) continue;
    const key = String(v.labels['key']);
    let s = out.get(key);
    if (!s) out.set(key, (s = { read: 0, prompt: 0 }));
    s.prompt += v.value;
    if (kind === 'cached_input') s.read += v.value;
  }
  return out;
}

/** Cache reads over all prompt tokens, 0..1; null before the key's first prompt. */
const cacheShare = (s: { read: number; prompt: number } | undefined): number | null => (s && s.prompt > 0 ? s.read / s.prompt : null);

/** The wire shape of one recent request (snake_case like the rest of the admin API). */
function wire(r: RecentRequest): Record<string, unknown> {
  return {
    finished_at: r.finishedAt,
    request_id: r.requestId,
    key: r.key,
    model: r.model,
    upstream: r.upstream,
    upstream_model: r.upstreamModel,
    stream: r.stream,
    status: r.status,
    outcome: r.outcome,
    error_class: r.errorClass,
    attempts: r.attempts,
    duration_ms: r.durationMs,
    ttft_ms: r.ttftMs,
    tokens: { ...r.tokens },
    tokens_estimated: r.tokensEstimated,
    cost_usd: r.costUsd,
    fallback: r.fallback,
    shed: r.shed,
  };
}

/** GETs another admin route in-process with the caller's own authorization. */
async function adminGet<T>(admin: FastifyInstance, req: FastifyRequest, url: string): Promise<T> {
  const authorization = req.headers.authorization;
  const res = await admin.inject({ method: 'GET', url, headers: authorization === undefined ? {} : { authorization } });
  if (res.statusCode !== 200) throw new Error(`${url} answered ${res.statusCode}`);
  return res.json<T>();
}

interface UpstreamsView {
  upstreams: { id: string; provider: string; mode: string }[];
  data: Record<string, unknown>[];
}

interface KeysView {
  data: { name: string; usage: { budget?: unknown; rpm?: unknown; tpm?: unknown } }[];
}

/** Sends a console page: no caching, no framing, no sniffing, its own CSP. */
function sendPage(reply: FastifyReply, html: string, csp: string): FastifyReply {
  return reply
    .header('content-type', 'text/html; charset=utf-8')
    .header('content-security-policy', csp)
    .header('x-content-type-options', 'nosniff')
    .header('x-frame-options', 'DENY')
    .header('referrer-policy', 'no-referrer')
    .header('cache-control', 'no-store')
    .send(html);
}

/**
 * Registers the console pages (built from their files now, once: page.ts) and the live
 * page's data endpoint on the admin app. The upstream and key views are the admin API's own (`/admin/upstreams`, `/admin/keys`, called in-process), so
 * the console always shows what the API does.
 */
function registerConsole(admin: FastifyInstance, gw: Gateway): void {
  const { live, spend } = consolePages();
  admin.get('/console', { config: { adminPublic: true } }, async (_req, reply) => sendPage(reply, live.html, live.csp));
  admin.get(CONSOLE_SPEND_PATH, { config: { adminPublic: true } }, async (_req, reply) => sendPage(reply, spend.html, spend.csp));

  admin.get(CONSOLE_DATA_PATH, async (req, reply) => {
    const m = gw.metrics;
    const recent = recentRequests(m);
    const [ups, keys, requests, inFlight, retries, fallbacks, sheds, limitRejections, keyTokens] = await Promise.all([
      adminGet<UpstreamsView>(admin, req, '/admin/upstreams'),
      adminGet<KeysView>(admin, req, '/admin/keys'),
      values(m.requests),
      values(m.inFlight),
      values(m.retries),
      values(m.fallbacks),
      values(m.sheds),
      values(m.limitRejections),
      values(m.keyTokens),
    ]);
    const cache = cacheReads(keyTokens);
    const keyRows = await Promise.all(
      keys.data.map(async (k) => ({
        name: k.name,
        spend_today_usd: await gw.limits.spendToday('key', k.name),
        budget: k.usage.budget ?? null,
        rpm: k.usage.rpm ?? null,
        tpm: k.usage.tpm ?? null,
        cache_read_tokens: cache.get(k.name)?.read ?? 0,
        cache_read_share: cacheShare(cache.get(k.name)),
      })),
    );
    const byOutcome: Record<string, number> = {};
    for (const v of requests) {
      const o = String(v.labels['outcome'] ?? 'unknown');
      byOutcome[o] = (byOutcome[o] ?? 0) + v.value;
    }
    const held = recent.list();
    void reply.header('cache-control', 'no-store');
    return {
      object: 'console',
      generated_at: new Date().toISOString(),
      store: gw.store.mode,
      totals: {
        requests: sum(requests),
        by_outcome: byOutcome,
        in_flight: sum(inFlight),
        retries: sum(retries),
        fallbacks: sum(fallbacks),
        sheds: sum(sheds),
        limit_rejections: sum(limitRejections),
        spend_today_usd: keyRows.reduce((n, k) => n + k.spend_today_usd, 0),
      },
      upstreams: ups.upstreams,
      targets: ups.data,
      recent: held.slice(0, CONSOLE_RECENT_ROWS).map(wire),
      recent_total: recent.total,
      reroutes: {
        fallbacks: fallbacks.filter((v) => v.value > 0).map((v) => ({ from: v.labels['from'], to: v.labels['to'], count: v.value })),
        sheds: sheds.filter((v) => v.value > 0).map((v) => ({ model: v.labels['model'], policy: v.labels['policy'], count: v.value })),
        recent: held
          .filter((r) => r.fallback !== null || r.shed !== null)
          .slice(0, 20)
          .map(wire),
      },
      keys: keyRows,
    };
  });
}

/** The console as a plugin of the admin app: its pages are `adminPublic`, its data endpoint needs the admin key. */
export const consoleRoutes = fp<AdminPluginOptions>(
  async (admin, { gw }) => {
    registerConsole(admin, gw);
  },
  { name: 'switchyard-console' },
);
