/**
 * A request's first pass (router/run.ts): its first store call (RouterSlots.first) carries the
 * request's admission under its limits (limits/gate.ts), reads its session's pin, and admits its
 * first attempt, ordered on the views this replica last read, whatever their age: on Redis one
 * command and one round trip before the upstream. The admission checks every limit again, so an
 * old view only orders, and under `balanced` not even that: the admission tries the
 * candidates least loaded first on the calls every replica holds as it runs (router/take.ts
 * candidatesFor; measured: ordered on old views, two replicas sent an account its cap + 1 at
 * 8 agents, where one replica never did). Nothing is skipped, queued or shed on an old view:
 * when the admission takes no slot, the route decides on the views it read (router/views.ts),
 * knowing the pin and the spent accounts. A request whose views were never read (the
 * replica's first) makes the call without an admission, reads the views in the same turn (one
 * command on Redis) and routes on them.
 */
import type { Model, Target } from '../config/types.js';
import type { SpentAccounts } from '../limits/index.js';
import type { FirstCall, FirstResult } from '../store/types.js';
import { targetRef, type Taken } from './attempt.js';
import type { RouteOptions, RouterState } from './state.js';
import { admissible, candidatesFor, orderPool, withProbes } from './take.js';
import type { Views } from './views.js';

/** What the first pass found: the slot taken (or null), the session's pin, the spent accounts, the views it read (null: none). */
export interface FirstPass {
  readonly taken: Taken | null;
  readonly pinned: string | undefined;
  readonly spent: SpentAccounts | null;
  readonly views: Views | null;
}

/** The gate's judgement of `got` (a slot taken though it refuses, which the store's op rules out, goes back). */
function accepted(state: RouterState, opts: RouteOptions, got: FirstResult): SpentAccounts | null {
  try {
    return opts.gate ? opts.gate.accept(got.gate) : null;
  } catch (err) {
    if (got.admit?.taken) void state.store.release(got.admit.taken.lease);
    throw err;
  }
}

/**
 * Makes the request's first store call for `model`'s targets (`spent`: accounts already known
 * spent, passed over).
 * @throws the gate's 429 (a spent budget, a key over its limits): nothing is taken then.
 */
export async function firstPass(
  state: RouterState,
  opts: RouteOptions,
  model: Model,
  deep: boolean,
  affinity: boolean,
  spent: SpentAccounts | undefined,
): Promise<FirstPass> {
  const remaining = spent ? model.targets.filter((t) => !spent.has(t.upstream.id)) : model.targets;
  const cached = remaining.length > 0 ? state.store.cachedView(remaining.map(targetRef), Number.POSITIVE_INFINITY) : null;
  let ordered: Target[] = [];
  let probes: Target[] = [];
  let extra: Target[] = [];
  if (cached) {
    const views = new Map(remaining.map((t, i) => [t, cached[i]!]));
    const admitted = admissible(state.health, remaining, views, false);
    const pool = deep ? admitted.filter((t) => views.get(t)!.deep < views.get(t)!.limit) : admitted;
    if (pool.length > 0) {
      const got = orderPool(state, { strategy: opts.strategy, pinned: opts.pinned, affinity }, pool, views, deep);
      ordered = got.ordered;
      // A deep call may still be the probe of an account whose trusted places are this replica's waiters' (take.ts withProbes).
      probes = got.probes;
      extra = [...got.waiting.filter((t) => !probes.includes(t)), ...remaining.filter((t) => !pool.includes(t))];
    }
  }
  const tried = probes.length === 0 ? ordered : [...ordered, ...probes];
  const coolingOk = (t: Target): boolean => cached![remaining.indexOf(t)]!.coolingUntil > 0;
  const readPin = opts.pinned === undefined && opts.session !== undefined && (opts.strategy === 'sticky' || affinity);
  const call: FirstCall = {
    gate: opts.gate?.request ?? null,
    pin: readPin ? { session: opts.session!, mode: opts.strategy === 'sticky' ? 'sticky' : 'affinity' } : null,
    candidates: withProbes(candidatesFor({ strategy: opts.strategy, pinned: opts.pinned, affinity }, ordered, deep, coolingOk), probes, coolingOk),
    extra: tried.length > 0 ? extra.map(targetRef) : [],
  };
  // Never read: the views are read in the same turn as the call (one command on Redis), for the route.
  const reading = cached || remaining.length === 0 ? null : state.store.view(remaining.map(targetRef));
  const empty = { spent: [], key: null };
  const got = call.gate || call.pin || tried.length > 0 ? await state.store.first(call) : { gate: empty, pin: undefined, admit: null, redo: true };
  const fresh = reading ? await reading : null;
  const found = accepted(state, opts, got);
  // Counted as the route's own pass over them counts them (limits/budgets.ts).
  if (found) for (const t of model.targets) found.has(t.upstream.id);
  const pinned = opts.pinned ?? got.pin;
  const admit = got.admit;
  if (fresh) return { taken: null, pinned, spent: found, views: new Map(remaining.map((t, i) => [t, fresh[i]!])) };
  if (!admit || tried.length === 0) return { taken: null, pinned, spent: found, views: null };
  const read = [...tried, ...extra];
  const views = new Map(read.map((t, i) => [t, admit.views[i]!]));
  const taken = admit.taken ? { target: tried[admit.taken.index]!, lease: admit.taken.lease, queuedMs: 0 } : null;
  return { taken, pinned, spent: found, views };
}
