/**
 * One request's route: which target each attempt goes to, in what order, and when to stop.
 *
 * Order of attempts: the model's targets, each once, in the strategy's order (another
 * target first); then each fallback model's targets, each once; then, while attempts and
 * the deadline allow, the primary's targets again after a full-jitter backoff that also
 * honours the upstreams' `Retry-After`. Every attempt after the first draws on the retry
 * budget. Cooling targets (here or on another replica) are skipped; if every target of a
 * model is cooling, the one whose cooldown ends first is tried, unless a long cooldown
 * (bad key, empty account, refused or unknown model: router/long-cooldown.ts) holds it
 * back: only its probe ends that. A target at its concurrency cap is passed over for one
 * with a free slot; when all are full the request queues (bounded) for the best one.
 *
 * Deep calls (router/deep.ts) also take a place in their upstream's burst window: hot
 * accounts are passed over for cool accounts of the same model first (spread), and only
 * when every account is hot does the model's shed policy apply: `downgrade` to the shed
 * fallback model, `queue` for a cool window up to a bounded wait, or `reject` with 429.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Model, Target } from '../config/load.js';
import type { RoutingConfig, Strategy } from '../config/schema.js';
import { GatewayError } from '../errors/codes.js';
import { classifiedAs, type Classified } from '../errors/classify.js';
import type { Lease, SlotRequest, TargetView } from '../store/types.js';
import { fullJitter } from './backoff.js';
import { QueueFullError } from './concurrency.js';
import { isDeep } from './deep.js';
import type { RouterState } from './index.js';
import { cooledStop } from './stops.js';
import { STRATEGIES } from './strategies/index.js';
import type { Candidate } from './strategies/types.js';

export interface Attempt {
  readonly target: Target;
  /** The public model this attempt serves (the primary, a fallback, or a shed fallback). */
  readonly model: Model;
  /** 1-based attempt number within the request. */
  readonly number: number;
  readonly startedAt: number;
  /** Time spent queued for a slot, ms. */
  readonly queuedMs: number;
  /** Whether this attempt holds a place in its upstream's burst window. */
  readonly deep: boolean;
  /** Set on the first attempt of a fallback model: the primary model's name. */
  readonly fallbackFrom?: string;
  /** Returns the slot (and window place); safe to call more than once. */
  release(): void;
}

export type AttemptResult =
  | { readonly ok: true; readonly latencyMs: number }
  | {
      readonly ok: false;
      readonly classified: Classified;
      readonly error: GatewayError;
      readonly retryAfterMs?: number;
      readonly latencyMs: number;
      /** The upstream's own message, scrubbed of key material, when `error` does not carry it (credential / permission). */
      readonly reason?: string;
    }
  | { readonly ok: 'aborted' };

export type Next = { readonly attempt: Attempt } | { readonly stop: GatewayError };

export interface RouteOptions {
  readonly model: Model;
  readonly strategy: Strategy;
  /** Session key for `sticky`. */
  readonly session?: string;
  /** The request's `reasoning_effort`, for deep detection. */
  readonly effort?: string | null;
  /** Resolves fallback model names to served models. */
  readonly lookup: (name: string) => Model | undefined;
}

const SHED_POLL_MS = 50;

export class RouteRun {
  attempts = 0;
  lastFailure: { classified: Classified; error: GatewayError } | null = null;
  /** `sticky` only: whether the session stayed on its pin, moved, or was pinned afresh. */
  sticky: 'pinned' | 'moved' | 'new' | null = null;
  /** Set when a fallback model served (or was tried): `primary->fallback`. */
  fallback: string | null = null;
  /** Set when the burst shedder acted: `model->fallback`, `queued:<ms>` or `rejected`. */
  shed: string | null = null;

  private chain: Model[];
  private chainIdx = 0;
  private readonly tried = new Set<string>();
  private round = 0;
  private roundStartAttempts = 0;
  private stopNow = false;
  private retryHintMs = 0;
  private readonly deadline: number;
  private pinned: string | undefined;
  private pinLoaded = false;
  private shedQueueSince = 0;

  constructor(
    private readonly state: RouterState,
    private readonly cfg: RoutingConfig,
    private readonly opts: RouteOptions,
  ) {
    const chain = [opts.model];
    for (const name of opts.model.fallbacks) {
      const m = opts.lookup(name);
      if (m && !chain.includes(m)) chain.push(m);
    }
    this.chain = chain;
    this.deadline = Date.now() + cfg.deadline_ms;
  }

  private finalError(): GatewayError {
    return this.lastFailure?.error ?? new GatewayError('GW_ERR_NO_TARGET');
  }

  private retryAfterSeconds(model: Model): string {
    const soonest = Math.min(...model.targets.map((t) => this.state.health.availableAt(t.key, t.upstream.id) || Infinity));
    const ms = Number.isFinite(soonest) ? soonest - Date.now() : this.retryHintMs;
    return String(Math.max(1, Math.ceil(ms / 1000)));
  }

  private slotRequest(t: Target, deep: boolean): SlotRequest {
    return {
      upstream: t.upstream.id,
      limit: t.upstream.max_concurrency,
      deep,
      windowMs: t.upstream.window.seconds * 1000,
      threshold: t.upstream.window.threshold,
    };
  }

  private availableAt(t: Target, view: TargetView): number {
    return Math.max(this.state.health.availableAt(t.key, t.upstream.id), view.coolingUntil);
  }

  /**
   * The next attempt, or why to stop (the last upstream failure, an exhausted retry
   * budget, a full queue, a rejected shed, or no target at all).
   * @throws the abort reason when `signal` fires while waiting (backoff, queue, shed queue).
   */
  async next(signal: AbortSignal): Promise<Next> {
    if (!this.pinLoaded) {
      this.pinLoaded = true;
      if (this.opts.strategy === 'sticky' && this.opts.session) this.pinned = await this.state.store.getPin(this.opts.session);
    }
    for (;;) {
      if (this.stopNow || this.attempts >= this.cfg.max_attempts) return { stop: this.finalError() };
      const left = this.deadline - Date.now();
      if (left <= 0) return { stop: this.lastFailure ? this.finalError() : new GatewayError('GW_ERR_UPSTREAM_TIMEOUT') };

      const model = this.chain[this.chainIdx]!;
      const remaining = model.targets.filter((t) => !this.tried.has(t.key));
      if (remaining.length === 0) {
        if (this.chainIdx + 1 < this.chain.length) {
          this.chainIdx++;
          this.tried.clear();
          continue;
        }
        // A whole round without an attempt: only targets in long cooldowns are left.
        if (this.attempts === this.roundStartAttempts) {
          const cooled = this.chain.flatMap((m) => m.targets).map((t) => this.state.health.longCooldown(t.key, t.upstream.id));
          return { stop: this.lastFailure ? this.finalError() : cooledStop(cooled.find((c) => c !== null) ?? null) };
        }
        this.roundStartAttempts = this.attempts;
        // Everything tried once: fallbacks are done for this request; back off, then the
        // primary's targets again.
        this.chain = [this.chain[0]!];
        this.chainIdx = 0;
        this.tried.clear();
        const delay = Math.min(left, Math.max(fullJitter(this.round, this.cfg.backoff_base_ms, this.cfg.backoff_cap_ms), this.retryHintMs));
        this.round++;
        this.retryHintMs = 0;
        if (delay > 0) await sleep(delay, undefined, { signal });
        continue;
      }

      // One round trip for the shared view of every remaining target.
      const views = await this.state.store.view(
        remaining.map((t) => ({ key: t.key, upstream: t.upstream.id, windowMs: t.upstream.window.seconds * 1000 })),
      );
      const viewOf = new Map(remaining.map((t, i) => [t, views[i]!]));
      let pool = remaining.filter((t) => viewOf.get(t)!.coolingUntil === 0 && this.state.health.canAdmit(t.key, t.upstream.id));
      if (pool.length === 0) {
        // A bad key or a refused model does not heal by waiting: a target a long cooldown
        // holds back is never forced (only its probe goes).
        const forceable = remaining.filter((t) => !this.state.health.longCooling(t.key, t.upstream.id));
        if (this.tried.size > 0 || forceable.length === 0) {
          // The rest of this model is cooling: treat it as exhausted.
          for (const t of remaining) this.tried.add(t.key);
          continue;
        }
        // Every target cooling: try the one whose cooldown ends first rather than refuse.
        const soonest = [...forceable].sort((a, b) => this.availableAt(a, viewOf.get(a)!) - this.availableAt(b, viewOf.get(b)!))[0]!;
        pool = [soonest];
      }

      // Deep calls spread over cool accounts first; when every account is hot, shed.
      const deep = isDeep(model, this.opts.effort);
      if (deep) {
        const cool = pool.filter((t) => viewOf.get(t)!.window < t.upstream.window.threshold);
        if (cool.length === 0) {
          const shed = await this.applyShed(model, signal);
          if (shed) return shed;
          continue;
        }
        pool = cool;
      }

      if (this.attempts > 0 && !this.state.budget.tryRetry()) {
        this.state.onBudgetExhausted?.();
        const last = this.lastFailure ? ` Last upstream error: ${this.lastFailure.error.openaiCode ?? this.lastFailure.error.status}.` : '';
        return {
          stop: new GatewayError('GW_ERR_RETRY_BUDGET', {
            message: `The upstreams for this model are failing and the gateway is not retrying more right now.${last}`,
            headers: { 'retry-after': this.retryAfterSeconds(model) },
          }),
        };
      }

      const ordered = STRATEGIES[this.opts.strategy](
        pool.map((t): Candidate => ({
          target: t,
          inFlight: viewOf.get(t)!.inFlight,
          capacity: t.upstream.max_concurrency,
          latencyMs: this.state.latency.estimate(t.key),
        })),
        { random: this.state.random, tick: this.state.nextTick(), ...(this.pinned ? { pinned: this.pinned } : {}) },
      );
      let chosen: Candidate | undefined;
      let lease: Lease | undefined;
      let allHot = deep;
      for (const c of ordered) {
        const got = await this.state.store.acquire(this.slotRequest(c.target, deep));
        if (got.ok) {
          chosen = c;
          lease = got.lease;
          break;
        }
        if (got.reason !== 'hot') allHot = false;
      }
      let queuedMs = 0;
      if (!chosen || !lease) {
        if (allHot) {
          // Every window filled up between the view and the acquire (other requests, other replicas).
          const shed = await this.applyShed(model, signal);
          if (shed) return shed;
          continue;
        }
        chosen = ordered[0]!;
        try {
          const waited = await this.state.queue.wait(this.slotRequest(chosen.target, deep), signal);
          lease = waited.lease;
          queuedMs = waited.waitedMs;
        } catch (err) {
          if (!(err instanceof QueueFullError)) throw err;
          // This model is full: its fallbacks (if any) may still have room.
          this.lastFailure = {
            classified: classifiedAs('server'),
            error: new GatewayError('GW_ERR_UPSTREAM_OVERLOADED', {
              message: `Every upstream for ${model.name} is at its concurrency limit (${err.reason === 'full' ? 'queue full' : 'queue wait timed out'}).`,
              headers: { 'retry-after': '1' },
            }),
          };
          for (const t of remaining) this.tried.add(t.key);
          continue;
        }
      }

      const target = chosen.target;
      const firstOfFallback = this.chainIdx > 0 && this.tried.size === 0;
      this.state.health.admit(target.key, target.upstream.id);
      this.tried.add(target.key);
      this.attempts++;
      if (this.chainIdx > 0) this.fallback = `${this.opts.model.name}->${model.name}`;
      if (this.shedQueueSince > 0 && this.shed === null) this.shed = `queued:${Date.now() - this.shedQueueSince}ms`;
      if (this.opts.strategy === 'sticky' && this.opts.session) {
        this.sticky = this.pinned === undefined ? 'new' : this.pinned === target.key ? 'pinned' : 'moved';
      }
      let released = false;
      const { store, queue } = this.state;
      const held = lease;
      return {
        attempt: {
          target,
          model,
          number: this.attempts,
          startedAt: Date.now(),
          queuedMs,
          deep,
          ...(firstOfFallback ? { fallbackFrom: this.opts.model.name } : {}),
          release: () => {
            if (released) return;
            released = true;
            void store.release(held).then(() => queue.notify(target.upstream.id));
          },
        },
      };
    }
  }

  /**
   * Applies the model's shed policy when every account's window is hot.
   * @returns a stop (reject, or a queue wait that ran out), or null to route again
   *          (downgraded to the shed fallback, or after a short wait in the shed queue).
   */
  private async applyShed(model: Model, signal: AbortSignal): Promise<Next | null> {
    const policy = model.shed.policy;
    if (policy === 'downgrade') {
      const name = model.shed.fallback ?? model.fallbacks[0];
      const to = name === undefined ? undefined : this.opts.lookup(name);
      if (to && to !== model) {
        this.state.onShed?.(model.name, 'downgrade');
        this.shed = `${model.name}->${to.name}`;
        this.chain[this.chainIdx] = to;
        this.chain = this.chain.filter((m, i) => i <= this.chainIdx || m !== to);
        this.tried.clear();
        return null;
      }
    } else if (policy === 'queue') {
      if (this.shedQueueSince === 0) {
        this.shedQueueSince = Date.now();
        this.state.onShed?.(model.name, 'queue');
      }
      if (Date.now() - this.shedQueueSince < model.shed.queue_timeout_ms) {
        await sleep(SHED_POLL_MS, undefined, { signal });
        return null;
      }
    }
    if (policy !== 'queue') this.state.onShed?.(model.name, 'reject');
    this.shed = 'rejected';
    const windowS = Math.max(...model.targets.map((t) => t.upstream.window.seconds));
    return {
      stop: new GatewayError('GW_ERR_SHED_REJECTED', {
        message: `Too many deep-reasoning calls to ${model.name} right now; retry later.`,
        headers: { 'retry-after': String(Math.max(1, Math.ceil(windowS))) },
      }),
    };
  }

  /** Feeds an attempt's outcome back into health, latency, pins and the stop decision. */
  report(attempt: Attempt, result: AttemptResult): void {
    const { target } = attempt;
    if (result.ok === true) {
      this.state.health.success(target.key, target.upstream.id);
      this.state.latency.observe(target.key, result.latencyMs);
      if (this.opts.strategy === 'sticky' && this.opts.session) void this.state.store.setPin(this.opts.session, target.key, this.cfg.sticky_ttl_ms);
      return;
    }
    attempt.release();
    if (result.ok === 'aborted') {
      this.state.health.release(target.key, target.upstream.id);
      return;
    }
    const { classified } = result;
    this.state.health.failure(target.key, target.upstream.id, classified, result.reason ?? result.error.message, result.retryAfterMs);
    if (classified.class === 'timeout' || classified.class === 'stall') this.state.latency.observe(target.key, result.latencyMs);
    if (result.retryAfterMs !== undefined) this.retryHintMs = Math.max(this.retryHintMs, result.retryAfterMs);
    this.lastFailure = { classified: result.classified, error: result.error };
    if (!result.classified.retryable) this.stopNow = true;
  }
}
