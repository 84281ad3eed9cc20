/**
 * How long a request asked its provider to keep the prompt cache it writes, so a session's
 * pin on its account (router/affinity.ts) lasts as long as the cache it points at:
 *
 * - OpenAI (chat completions and Responses): `prompt_cache_retention: "24h"` (extended
 *   retention, up to 24 hours) and `prompt_cache_options.ttl` (a minimum lifetime such as
 *   "30m") (OpenAI OpenAPI spec, CreateResponse / CreateChatCompletionRequest).
 * - Anthropic Messages: a breakpoint's `cache_control.ttl`, "5m" (the default) or "1h"
 *   (Anthropic docs, "Prompt caching", 1-hour cache duration), on the request, a tool, a
 *   system block or a message block.
 * Undefined when the request names no lifetime: the pin keeps `cache_affinity.ttl_ms`.
 */
type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

const DAY_MS = 86_400_000;

/** "30m", "1h", "24h", "90s" as ms; undefined for anything else. */
export function lifetimeMs(v: unknown): number | undefined {
  const m = typeof v === 'string' ? /^(\d{1,5})(s|m|h)$/.exec(v) : null;
  if (!m) return undefined;
  const unit = m[2] === 's' ? 1_000 : m[2] === 'm' ? 60_000 : 3_600_000;
  return Math.min(Number(m[1]) * unit, DAY_MS);
}

/** The longest cache lifetime an OpenAI chat or Responses body asks for, ms. */
export function openaiCacheLifetimeMs(body: Obj): number | undefined {
  const retention = lifetimeMs(body['prompt_cache_retention']);
  const options = body['prompt_cache_options'];
  const ttl = isObj(options) ? lifetimeMs(options['ttl']) : undefined;
  return retention === undefined && ttl === undefined ? undefined : Math.max(retention ?? 0, ttl ?? 0);
}

/** The lifetime a `cache_control` marker asks for: its `ttl`, else Anthropic's default 5 minutes; undefined for no marker. */
function markerMs(block: unknown): number | undefined {
  if (!isObj(block) || !isObj(block['cache_control'])) return undefined;
  return lifetimeMs(block['cache_control']['ttl']) ?? 300_000;
}

/** The longest marker lifetime in a list of blocks, or 0. */
function longestIn(list: unknown): number {
  let most = 0;
  if (Array.isArray(list)) for (const b of list) most = Math.max(most, markerMs(b) ?? 0);
  return most;
}

/** The longest cache lifetime a Messages body's breakpoints ask for, ms (undefined: no breakpoint). */
export function messagesCacheLifetimeMs(body: Obj): number | undefined {
  let most = Math.max(markerMs(body) ?? 0, longestIn(body['tools']), longestIn(body['system']));
  const messages = body['messages'];
  if (Array.isArray(messages)) for (const m of messages) if (isObj(m)) most = Math.max(most, longestIn(m['content']));
  return most > 0 ? most : undefined;
}
