/**
 * In-flight requests per upstream account, capped at its `max_concurrency`, with a bounded
 * FIFO wait queue: a request that finds every suitable upstream full waits up to the queue
 * timeout for a slot on one of them instead of piling onto the provider.
 */

export class QueueFullError extends Error {
  constructor(readonly reason: 'full' | 'timeout') {
    super(reason === 'full' ? 'upstream queue is full' : 'timed out waiting for an upstream slot');
    this.name = 'QueueFullError';
  }
}

interface Waiter {
  resolve: () => void;
  reject: (err: unknown) => void;
}

interface Gate {
  inFlight: number;
  waiters: Waiter[];
}

export class ConcurrencyBoard {
  private readonly gates = new Map<string, Gate>();

  constructor(private readonly queueMax: number, private readonly queueTimeoutMs: number) {}

  private gate(id: string): Gate {
    let g = this.gates.get(id);
    if (!g) {
      g = { inFlight: 0, waiters: [] };
      this.gates.set(id, g);
    }
    return g;
  }

  inFlight(id: string): number {
    return this.gates.get(id)?.inFlight ?? 0;
  }

  queued(id: string): number {
    return this.gates.get(id)?.waiters.length ?? 0;
  }

  /** Takes a slot if one is free now. */
  tryAcquire(id: string, limit: number): boolean {
    const g = this.gate(id);
    if (g.inFlight >= limit) return false;
    g.inFlight++;
    return true;
  }

  /**
   * Waits for a slot (FIFO).
   * @returns the time waited, ms.
   * @throws QueueFullError when the queue is full or the wait times out; the abort reason
   *         when `signal` fires first.
   */
  async acquire(id: string, limit: number, signal: AbortSignal): Promise<number> {
    if (signal.aborted) throw signal.reason;
    if (this.tryAcquire(id, limit)) return 0;
    const g = this.gate(id);
    if (g.waiters.length >= this.queueMax) throw new QueueFullError('full');
    const started = Date.now();
    await new Promise<void>((resolve, reject) => {
      const waiter: Waiter = {
        resolve: () => {
          cleanup();
          resolve();
        },
        reject: (err) => {
          cleanup();
          reject(err);
        },
      };
      const remove = () => {
        const i = g.waiters.indexOf(waiter);
        if (i !== -1) g.waiters.splice(i, 1);
      };
      const timer = setTimeout(() => {
        remove();
        waiter.reject(new QueueFullError('timeout'));
      }, this.queueTimeoutMs);
      const onAbort = () => {
        remove();
        waiter.reject(signal.reason);
      };
      const cleanup = () => {
        clearTimeout(timer);
        signal.removeEventListener('abort', onAbort);
      };
      signal.addEventListener('abort', onAbort, { once: true });
      g.waiters.push(waiter);
    });
    return Date.now() - started;
  }

  /** Returns a slot; hands it straight to the longest waiter, if any. */
  release(id: string): void {
    const g = this.gates.get(id);
    if (!g) return;
    const next = g.waiters.shift();
    if (next) next.resolve();
    else g.inFlight = Math.max(0, g.inFlight - 1);
  }
}
