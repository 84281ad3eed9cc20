/**
 * Waiting for a concurrency slot. The slots themselves live in the shared store (so
 * `max_concurrency` holds across replicas); this is the bounded local queue of requests
 * that found every suitable upstream full. A waiter retries the store when a slot is
 * released on this replica, and every `pollMs` (slots released by other replicas).
 */
import type { RouterSlots } from '../store/roles.js';
import type { Candidate, Lease } from '../store/types.js';

export class QueueFullError extends Error {
  constructor(readonly reason: 'full' | 'timeout') {
    super(reason === 'full' ? 'upstream queue is full' : 'timed out waiting for an upstream slot');
    this.name = 'QueueFullError';
  }
}

export class SlotQueue {
  /** line -> wake-up callbacks of the requests waiting in it, oldest first. */
  private readonly waiters = new Map<string, (() => void)[]>();
  /** upstream -> the lines a slot released on it may serve. */
  private readonly linesOf = new Map<string, Set<string>>();
  /** upstream -> callbacks of requests waiting for the next release on it (`released`). */
  private readonly endings = new Map<string, Set<() => void>>();

  constructor(
    private readonly store: RouterSlots,
    private readonly queueMax: number,
    private readonly queueTimeoutMs: number,
    private readonly pollMs = 25,
  ) {}

  /** Requests waiting for a slot on `upstream` on this replica. */
  queued(upstream: string): number {
    return this.waiters.get(upstream)?.length ?? 0;
  }

  /**
   * Waits in line for a slot (at most `timeoutMs`, default the queue's timeout).
   * @returns the lease and the time waited, ms.
   * @throws QueueFullError when the queue is full or the wait times out; the abort reason
   *         when `signal` fires first.
   */
  async wait(req: Candidate, signal: AbortSignal, timeoutMs: number = this.queueTimeoutMs, front = false): Promise<{ lease: Lease; waitedMs: number }> {
    const got = await this.waitAny(req.upstream, [req], signal, timeoutMs, front);
    return { lease: got.lease, waitedMs: got.waitedMs };
  }

  /**
   * Waits in the line `line` for a slot on any of `reqs` (tried in order, in one store call, by
   * the head of the line whenever a slot on one of their upstreams is released here, and every `pollMs` for
   * releases on other replicas), at most `timeoutMs`.
   * `front`: the request had its turn and its account refused it (a throttle): it waits at the head.
   * @returns the lease, the request it was taken for (index into `reqs`) and the time waited, ms.
   * @throws QueueFullError when the line is full or the wait times out; the abort reason when `signal` fires first.
   */
  async waitAny(
    line: string,
    reqs: readonly Candidate[],
    signal: AbortSignal,
    timeoutMs: number,
    front = false,
  ): Promise<{ lease: Lease; index: number; waitedMs: number }> {
    if (signal.aborted) throw signal.reason;
    let queue = this.waiters.get(line);
    if (!queue) {
      queue = [];
      this.waiters.set(line, queue);
    }
    if (queue.length >= this.queueMax) throw new QueueFullError('full');
    for (const r of reqs) {
      let lines = this.linesOf.get(r.upstream);
      if (!lines) this.linesOf.set(r.upstream, (lines = new Set()));
      lines.add(line);
    }
    const started = Date.now();
    const deadline = started + timeoutMs;
    let wake: () => void = () => {};
    const entry = () => wake();
    // A request its account just refused had its place already: it goes back to the head.
    if (front) queue.unshift(entry);
    else queue.push(entry);
    try {
      for (;;) {
        // Only the head of the line takes a slot, so the line stays first in, first out.
        if (queue[0] === entry) {
          const got = await this.store.admit(reqs);
          if (got.taken) return { lease: got.taken.lease, index: got.taken.index, waitedMs: Date.now() - started };
        }
        const left = deadline - Date.now();
        if (left <= 0) throw new QueueFullError('timeout');
        await new Promise<void>((resolve, reject) => {
          const timer = setTimeout(done, Math.min(left, this.pollMs));
          function done(): void {
            clearTimeout(timer);
            signal.removeEventListener('abort', onAbort);
            resolve();
          }
          function onAbort(): void {
            clearTimeout(timer);
            reject(signal.reason);
          }
          wake = done;
          signal.addEventListener('abort', onAbort, { once: true });
        });
      }
    } finally {
      const i = queue.indexOf(entry);
      if (i !== -1) queue.splice(i, 1);
      if (queue.length === 0) this.waiters.delete(line);
      queue[0]?.();
    }
  }

  /**
   * Whether a request on this replica waits for a slot a release on `upstream` may serve (in
   * any line): a new request then leaves that upstream's free places to the waiters, first
   * come first served (router/take.ts). `counts`: which lines count (default all).
   */
  contended(upstream: string, counts: (line: string) => boolean = () => true): boolean {
    for (const line of this.linesOf.get(upstream) ?? []) if (counts(line) && (this.waiters.get(line)?.length ?? 0) > 0) return true;
    return false;
  }

  /** Requests waiting in `line` now. */
  waiting(line: string): number {
    return this.waiters.get(line)?.length ?? 0;
  }

  /**
   * Resolves when a slot on one of `upstreams` is next released on this replica (a call there
   * ended), or after `ms`, whichever comes first.
   * @throws the abort reason when `signal` fires first.
   */
  released(upstreams: readonly string[], ms: number, signal: AbortSignal): Promise<void> {
    if (signal.aborted) return Promise.reject(signal.reason as Error);
    return new Promise<void>((resolve, reject) => {
      const done = (): void => {
        clearTimeout(timer);
        signal.removeEventListener('abort', onAbort);
        for (const u of upstreams) this.endings.get(u)?.delete(done);
        resolve();
      };
      const onAbort = (): void => {
        done();
        reject(signal.reason as Error);
      };
      const timer = setTimeout(done, Math.max(0, ms));
      signal.addEventListener('abort', onAbort, { once: true });
      for (const u of upstreams) {
        let set = this.endings.get(u);
        if (!set) this.endings.set(u, (set = new Set()));
        set.add(done);
      }
    });
  }

  /** A slot on `upstream` was released here: wake the head of every line it may serve. */
  notify(upstream: string): void {
    const ends = this.endings.get(upstream);
    if (ends) {
      this.endings.delete(upstream);
      for (const f of ends) f();
    }
    const lines = this.linesOf.get(upstream);
    if (!lines) return;
    for (const line of lines) {
      const queue = this.waiters.get(line);
      if (queue) queue[0]?.();
      else lines.delete(line);
    }
  }
}
