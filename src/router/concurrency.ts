/**
 * Waiting for a concurrency slot. The slots themselves live in the shared store (so
 * `max_concurrency` holds across replicas); this is the bounded local queue of requests
 * that found every suitable upstream full. A waiter retries the store when a slot is
 * released on this replica, and every `pollMs` (slots released by other replicas).
 */
import type { StateStore } from '../store/index.js';
import type { Lease, SlotRequest } from '../store/types.js';

export class QueueFullError extends Error {
  constructor(readonly reason: 'full' | 'timeout') {
    super(reason === 'full' ? 'upstream queue is full' : 'timed out waiting for an upstream slot');
    this.name = 'QueueFullError';
  }
}

export class SlotQueue {
  /** upstream -> wake-up callbacks of the requests waiting for it, oldest first. */
  private readonly waiters = new Map<string, (() => void)[]>();

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
  async wait(req: SlotRequest, signal: AbortSignal, timeoutMs: number = this.queueTimeoutMs): Promise<{ lease: Lease; waitedMs: number }> {
    if (signal.aborted) throw signal.reason;
    let line = this.waiters.get(req.upstream);
    if (!line) {
      line = [];
      this.waiters.set(req.upstream, line);
    }
    if (line.length >= this.queueMax) throw new QueueFullError('full');
    const started = Date.now();
    const deadline = started + timeoutMs;
    let wake: () => void = () => {};
    const entry = () => wake();
    line.push(entry);
    try {
      for (;;) {
        // Only the head of the line takes a slot, so the queue stays first in, first out.
        if (line[0] === entry) {
          const got = await this.store.acquire(req);
          if (got.ok) return { lease: got.lease, waitedMs: Date.now() - started };
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
      const i = line.indexOf(entry);
      if (i !== -1) line.splice(i, 1);
      line[0]?.();
    }
  }

  /** A slot on `upstream` was released here: wake the head of its line. */
  notify(upstream: string): void {
    this.waiters.get(upstream)?.[0]?.();
  }
}
