/**
 * Cache affinity: a session's turns go to the account that holds its prompt cache.
 *
 * Providers cache a prompt's prefix per account (OpenAI automatically from 1,024 tokens;
 * Anthropic at `cache_control` breakpoints, 5 minutes or 1 hour): a turn on the account that
 * served the session's last turn reads its history at about 0.1x the input price and reaches
 * its first token sooner; a turn anywhere else pays the whole prefix again (1.25x on Anthropic,
 * where it is written anew). Spreading a session's turns over accounts — what `balanced` does
 * by itself — about doubles a session's input bill (`npm run bench:cache`, docs/routing.md).
 *
 * So, for a request with a session key (pipeline/select.ts) under any strategy but `sticky`
 * (which pins on its own terms), with `routing.cache_affinity.enabled`:
 * - the session's account (its pin, in the shared store, so every replica sees it) goes first
 *   while it has room (router/take.ts);
 * - when it is full, the request waits for it when the wait it can expect — the requests in
 *   line there and itself, served as calls end, at the account's call limit per typical call
 *   time (Little's law) — is within `max_wait_ms`; a wait that does not end in time, or one
 *   not worth starting, moves the session to the account the strategy picks;
 * - every served turn pins the session to its account for `ttl_ms` (the provider's cache
 *   lifetime, 5 minutes by default) or the cache lifetime the turn asked for when longer
 *   (apis/cache-lifetime.ts), refreshed on use: a session that moved stays where it went.
 * A prompt too short to be cached (under ~1,024 tokens, guessed from its size) is never held.
 */
import type { RoutingConfig } from '../config/schema.js';
import type { Target } from '../config/types.js';
import type { TargetView } from '../store/types.js';
import { waiterCandidate, type Taken } from './attempt.js';
import { QueueFullError } from './concurrency.js';
import type { RouteOptions, RouterState } from './state.js';

/** What affinity did for a session's request: served on its account, moved off it, or it had none. */
export type CacheMark = 'warm' | 'moved' | 'cold';

/** Request bytes below which a prompt is too short to cache (1,024 tokens at ~4 bytes each). */
export const CACHEABLE_BYTES = 4_096;

/** Whether `opts` takes part in cache affinity: a session key, a strategy that does not pin by itself, affinity on. */
export function usesAffinity(cfg: RoutingConfig, opts: RouteOptions): boolean {
  return cfg.cache_affinity.enabled && opts.session !== undefined && opts.strategy !== 'sticky';
}

/**
 * A route's marks once an attempt opens on `target`: under `sticky` with a session, whether it
 * stayed on its pin, moved or was pinned afresh; under cache affinity, warm, moved or cold;
 * else `was` unchanged.
 */
export function pinMarks(
  opts: RouteOptions,
  affinity: boolean,
  pinned: string | null | undefined,
  target: string,
  was: [sticky: 'pinned' | 'moved' | 'new' | null, cache: CacheMark | null],
): [sticky: 'pinned' | 'moved' | 'new' | null, cache: CacheMark | null] {
  if (opts.strategy === 'sticky' && opts.session) return [pinned == null ? 'new' : pinned === target ? 'pinned' : 'moved', was[1]];
  if (affinity) return [was[0], pinned == null ? 'cold' : pinned === target ? 'warm' : 'moved'];
  return was;
}

/** Whether `view` has room for one more call (a deep call: under the learned deep limit too). */
export function hasRoom(view: TargetView, deep: boolean): boolean {
  return view.inFlight < view.callLimit && (!deep || view.deep < view.limit);
}

/**
 * How long a request may wait for its session's full account, ms; 0 when it should not wait.
 * @param typicalMs how long a call typically holds its place on the account, send to last byte
 *   (router/latency.ts HoldTimes; 0 when never measured).
 */
export function warmWaitMs(cfg: RoutingConfig, view: TargetView, queued: number, typicalMs: number, promptBytes: number | undefined): number {
  const max = cfg.cache_affinity.max_wait_ms;
  if (max <= 0 || (promptBytes !== undefined && promptBytes < CACHEABLE_BYTES)) return 0;
  const expected = typicalMs > 0 ? ((queued + 1) * typicalMs) / Math.max(1, view.callLimit) : 0;
  return expected <= max ? max : 0;
}

/**
 * Waits for a place on the session's account (its pin) when it is admissible but full and the
 * wait is worth it (the first attempt only; the caller checks).
 * @param leftMs what is left of the route's `deadline_ms`: the wait never outlasts it.
 * @returns the slot, or null when the account has room or is not admissible, or the wait was
 *   not worth starting or ran out (the route then goes where its strategy says).
 * @throws the abort reason when `signal` fires while waiting.
 */
export async function waitForWarm(
  state: RouterState,
  cfg: RoutingConfig,
  opts: RouteOptions,
  pinned: string | null | undefined,
  admitted: readonly Target[],
  views: ReadonlyMap<Target, TargetView>,
  deep: boolean,
  signal: AbortSignal,
  leftMs: number,
): Promise<Taken | null> {
  const warm = pinned ? admitted.find((t) => t.key === pinned) : undefined;
  const view = warm ? views.get(warm) : undefined;
  if (!warm || !view || hasRoom(view, deep)) return null;
  const ms = Math.min(leftMs, warmWaitMs(cfg, view, state.queue.queued(warm.upstream.id), state.holds.estimate(warm.upstream.id), opts.promptBytes));
  if (ms <= 0) return null;
  try {
    const got = await state.queue.wait(waiterCandidate(warm, deep), signal, ms);
    return { target: warm, lease: got.lease, queuedMs: got.waitedMs };
  } catch (err) {
    if (err instanceof QueueFullError) return null;
    throw err;
  }
}

/** `candidates` with the one on `pinned` first when it has room (the rest in the strategy's order). */
export function warmFirst<C extends { readonly target: Target; readonly inFlight: number; readonly capacity: number }>(
  candidates: C[],
  pinned: string | undefined,
): C[] {
  const i = pinned === undefined ? -1 : candidates.findIndex((c) => c.target.key === pinned);
  if (i <= 0 || candidates[i]!.inFlight >= candidates[i]!.capacity) return candidates;
  return [candidates[i]!, ...candidates.slice(0, i), ...candidates.slice(i + 1)];
}
