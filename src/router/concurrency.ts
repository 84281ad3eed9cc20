/**
 * Waiting for a concurrency slot. The slots themselves live in the shared store (so
 * `max_concurrency` holds across replicas); this is the bounded local queue of requests
 * that found every suitable upstream full. A waiter retries the store when a slot is
 * released on this replica, and every `pollMs` (slots released by other replicas).
 */
import type { StateStore } from '../store/index.js';
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

  constructor(
    private readonly store: StateStore,
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
  async wait(req: Candidate, signal: AbortSignal, timeoutMs: number = this.queueTimeoutMs): Promise<{ lease: Lease; waitedMs: number }> {
    const got = await this.waitAny(req.upstream, [req], signal, timeoutMs);
    return { lease: got.lease, waitedMs: got.waitedMs };
  }

  /**
   * Waits in the line `line` for a slot on any of `reqs` (tried in order, in one store call, by
   * the head of the line whenever a slot on one of their upstreams is released here, and every `pollMs` for
   * releases on other replicas), at most `timeoutMs`.
   * @returns the lease, the request it was taken for (index into `reqs`) and the time waited, ms.
   * @throws QueueFullError when the line is full or the wait times out; the abort reason when `signal` fires first.
   */
  async waitAny(line: string, reqs: readonly Candidate[], signal: AbortSignal, timeoutMs: number): Promise<{ lease: Lease; index: number; waitedMs: number }> {
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
    queue.push(entry);
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

  /** Requests waiting in `line` now. */
  waiting(line: string): number {
    return this.waiters.get(line)?.length ?? 0;
  }

  /** A slot on `upstream` was released here: wake the head of every line it may serve. */
  notify(upstream: string): void {
    const lines = this.linesOf.get(upstream);
    if (!lines) return;
    for (const line of lines) {
      const queue = this.waiters.get(line);
      if (queue) queue[0]?.();
      else lines.delete(line);
    }
  }
}
