/**
 * Gives memory back after a burst. V8 grows the heap under load (1,000 open streams took
 * the process from ~120 MB to ~200-310 MB RSS) and keeps it: with nothing left to allocate,
 * no collection runs, so its own memory reducer may take a minute or more to start, or not
 * start at all (measured: RSS flat for the whole minute after the streams ended;
 * docs/performance.md; and `npm start` turns the reducer off, see below). Once the gateway
 * has been quiet — no model call in flight and none starting — for `quietMs` after serving
 * something, grown by more than `growthBytes` above its resident size at start, this
 * runs two full collections, one check apart (the second returns the pages the first
 * emptied), then waits for the next busy period. Each takes ~40-50 ms on this process,
 * paid while nothing is in flight.
 *
 * A heap of ordinary size is left alone on purpose: shrinking it is what made the first
 * seconds of load after an idle spell slow (V8's memory reducer shrank the heap from 115 to
 * 26 MB, and the next load spent seconds in collections while the heap grew back; issue 16),
 * which is why `npm start` runs with `--no-memory-reducer`.
 *
 * It needs `gc()`, which only exists when node runs with `--expose-gc`: `npm start`, the
 * Dockerfile and the workers it forks pass it (next to `--no-memory-reducer`, package.json).
 * Without it this does nothing. Written here because no library does this one thing.
 */

/** The gateway's traffic, read live (server/lifecycle/drain.ts's Drain). */
export interface Traffic {
  /** Model calls in flight. */
  readonly modelCalls: number;
  /** Model calls started since start (health probes and scrapes are not counted: they come when quiet too). */
  readonly callsStarted: number;
}

export interface IdleGcOptions {
  /** How long the gateway must be quiet before the first collection, ms (default 10 s). */
  readonly quietMs?: number;
  /** How often the traffic is looked at, ms (default 5 s). */
  readonly checkMs?: number;
  /** The collector (default `globalThis.gc`, there under `--expose-gc`); none: nothing is started. */
  readonly gc?: () => void;
  /** Only when the process grew this much above its size at start, bytes (default 64 MiB): a process of ordinary size is left as V8 keeps it. */
  readonly growthBytes?: number;
  /** The process's resident size now, bytes (default `process.memoryUsage.rss()`: V8's heap and the native memory its objects hold, such as socket buffers). */
  readonly residentBytes?: () => number;
  /** Called after each collection with its pause, ms (a log line). */
  readonly onCollect?: (pauseMs: number) => void;
  /**
   * Called when a check throws (reading the resident size opens /proc/self/stat, which fails
   * with EMFILE when the process is out of file descriptors): the check is skipped and the
   * next one runs as usual; housekeeping never ends the process.
   */
  readonly onError?: (err: unknown) => void;
}

/**
 * Starts the watch; returns its stop.
 * @param traffic read every `checkMs`.
 */
export function watchIdleMemory(traffic: Traffic, o: IdleGcOptions = {}): () => void {
  const gc = o.gc ?? (globalThis as { gc?: () => void }).gc;
  if (typeof gc !== 'function') return () => {};
  const checkMs = o.checkMs ?? 5_000;
  const quietMs = o.quietMs ?? 10_000;
  const residentBytes = o.residentBytes ?? (() => process.memoryUsage.rss());
  const limit = residentBytes() + (o.growthBytes ?? 64 * 1024 * 1024);
  let seen = traffic.callsStarted;
  let quietFor = 0;
  /** Collections still owed to the last busy period (0: nothing served since the last ones). */
  let owed = 0;
  const check = (): void => {
    if (traffic.callsStarted !== seen || traffic.modelCalls > 0) {
      seen = traffic.callsStarted;
      quietFor = 0;
      owed = 2;
      return;
    }
    quietFor += checkMs;
    if (owed === 0 || quietFor < quietMs) return;
    // The second collection of a pair always runs: it returns the pages the first emptied.
    if (owed === 2 && residentBytes() < limit) {
      owed = 0;
      return;
    }
    owed--;
    const started = performance.now();
    gc();
    o.onCollect?.(performance.now() - started);
  };
  const timer = setInterval(() => {
    try {
      check();
    } catch (err) {
      try {
        o.onError?.(err);
      } catch {
        // a failing report of a failure is dropped: the next check runs all the same
      }
    }
  }, checkMs);
  timer.unref();
  return () => clearInterval(timer);
}
